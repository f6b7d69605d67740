# Call 2: main at 3f74aca (the card has no Nsight Systems: call 1). Every kernel's duration
# alone (Nsight Compute, gpu__time_duration, caches not flushed, clocks as they run) over the
# first launches (but the random fills and the ceilings' kernels) of a short bench: the prefill, four decode steps and the synthetic run.
# DeepSeek-V2-Lite batch 1 (issue 16), Llama-3.1-8B batch 64 and batch 1 (issue 18).
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu | head -1)
each() {
  local n=$1 c=$2; shift 2
  [ "$(el)" -gt "$CALL_BUDGET_S" ] && { echo "== $n skipped at $(el) s"; return; }
  echo "== $n at $(el) s"
  timeout 170 $NCU --graph-profiling node --cache-control none --clock-control none \
    --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
    -k 'regex:^(?!fill_uniform|launch_link|hold_stream|sm90|nvjet|cutlass|cublas|gemm).*' \
    --launch-count $c --csv --page raw --print-units base \
    devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 1 \
    --max-new-tokens 4 "$@" --out $R/tmp > $R/$n.csv 2> $R/$n.err; echo "rc $? at $(el) s"
  grep -E "baseline step|kernels a step" $R/$n.csv | cut -c1-200
  wc -l $R/$n.csv; tail -3 $R/$n.err
  gzip $R/$n.csv; rm -rf $R/tmp
}
each v2 2500 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1
each l8b64 1500 --config bench/configs/llama-3.1-8b.json --batch-sizes 64
each l8b1 1500 --config bench/configs/llama-3.1-8b.json --batch-sizes 1
call_done
