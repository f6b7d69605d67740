# Call 1: main at 3f74aca. On an H200 (issue 18's card): the issue tables first (the command set
# of reach-2026-12-06/call6). On any card: where a decode step's time goes, kernel by kernel
# inside the replayed graph (Nsight Systems, --cuda-graph-trace=node): DeepSeek-V2-Lite batch 1
# (issue 16) and Llama-3.1-8B batch 1 / 64 (issue 18), 16 new tokens each.
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/target-linux-x64/nsys 2>/dev/null | head -1)
echo "nsys: $NSYS"; [ -n "$NSYS" ] && $NSYS --version
if grep -q H200 "$R/card.txt"; then
  bench l8-1 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  bench v2lite 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
  bench l8-2 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
  bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
  bench l8-8192 200 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
  bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  grep -E "skipped|sizing" $R/l8-8192.log | cut -c1-240
fi
trace() {
  local n=$1; shift
  [ "$(el)" -gt "$CALL_BUDGET_S" ] && { echo "== trace $n skipped at $(el) s"; return; }
  echo "== trace $n at $(el) s"
  timeout 150 $NSYS profile --cuda-graph-trace=node -t cuda --sample=none --cpuctxsw=none -o $R/$n -f true \
    devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 1 \
    --max-new-tokens 16 "$@" --out $R/tmp > $R/$n.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|kernels a step|synthetic" $R/$n.log | cut -c1-220
  timeout 90 $NSYS stats -r cuda_gpu_trace -f csv -o $R/$n $R/$n.nsys-rep > $R/${n}_stats.log 2>&1; echo "stats rc $? at $(el) s"
  ls $R | grep "^$n"
  gzip $R/${n}_cuda_gpu_trace.csv
  rm -rf $R/$n.nsys-rep $R/$n.sqlite $R/tmp
}
trace v2 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1
trace l8b64 --config bench/configs/llama-3.1-8b.json --batch-sizes 64
trace l8b1 --config bench/configs/llama-3.1-8b.json --batch-sizes 1
call_done
