# Call 4 (issue 16 item 5): build a153e86 (every kernel lets the next launch once it has waited,
# now the default; a MoE layer's post-attention norm and routing in one launch). Kernel checks and
# agreement on the tiny MLA/MoE shapes and models/tiny-llama (the early launch's correctness);
# DeepSeek-V2-Lite at batch 1, 8, 32 with the norm and routing fused and not
# (SPECULA_MOE_NORM_ROUTE=0), interleaved, twice; Moonlight at batch 1, 8; Llama-3.1-8B at batch
# 1, 8, 64; V2-Lite at prompt 8192, batch 1; each kernel's duration in a V2-Lite decode forward.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 200 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "^moe_norm_route|FAIL| false|passed" $R/gpu_check.log | cut -c1-60,100-200 | head -30
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null
devrun/bin/specula fixtures random --shape results/h200/moe-overlap-2026-12-04/call3/mla16.json --seed 7 --out $R/fx/mla16 > /dev/null
echo "== agree"
for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe mla16 tiny-llama; do
  if [ $shape = tiny-llama ]; then T=models/tiny-llama; D=models/tiny-llama/eagle3; else
    [ -d $R/fx/$shape ] || devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
    T=$R/fx/$shape/target; D=$R/fx/$shape/draft; fi
  timeout 100 devrun/bin/specula gpu agree --target $T --draft $D --out $R/agree-$shape > $R/agree-$shape.log 2>&1; echo "$shape rc $? at $(el) s, lossless true: $(grep -c 'lossless true' $R/agree-$shape.log), false: $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "vs CPU|warning" $R/agree-$shape.log | head -3
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv
done
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
for rep in 1 2; do for nr in 1 0; do
  export SPECULA_MOE_NORM_ROUTE=$nr
  echo "== V2-Lite batch 1,8,32 prompt 128, SPECULA_MOE_NORM_ROUTE=$nr (round $rep)"
  timeout 100 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2 --max-new-tokens 64 --out $R/v2-$nr-$rep > $R/v2-$nr-$rep.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|synthetic|warning" $R/v2-$nr-$rep.log
done; done
unset SPECULA_MOE_NORM_ROUTE
echo "== Moonlight batch 1, 8"
timeout 100 $B --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 2 --max-new-tokens 64 --out $R/moon > $R/moon.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning" $R/moon.log
echo "== Llama-3.1-8B batch 1,8,64"
timeout 100 $B --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 2 --max-new-tokens 64 --out $R/l8 > $R/l8.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning" $R/l8.log
echo "== V2-Lite batch 1 prompt 8192"
timeout 100 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --prompt-lens 8192 --repeats 1 --max-new-tokens 32 --out $R/v2long > $R/v2long.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning|rror" $R/v2long.log
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "== ncu durations"
timeout 100 $NCU --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
  --launch-count 4000 --csv --log-file $R/ncu.csv $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu > $R/ncu.log 2>&1; echo "rc $? at $(el) s"
python3 tools/gpu/ncu_forward_table.py $R/ncu.csv > $R/kernel_times.txt 2>&1; head -20 $R/kernel_times.txt
echo "== ncu: where the fused norm and routing spends its time (one launch, SASS with stall samples)"
timeout 100 $NCU --graph-profiling node --cache-control none --clock-control none -k regex:"moe_norm_route" --launch-skip 60 --launch-count 1 \
  --section WarpStateStats --section SourceCounters --section SpeedOfLight --page source --print-source sass --csv \
  $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu3 > $R/ncu_norm_route_sass.csv 2>&1; echo "rc $? at $(el) s"
head -c 600 $R/ncu_norm_route_sass.csv; echo
for d in v2-1-1 v2-0-1 v2-1-2 v2-0-2 moon l8 v2long; do for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/$d/$f.csv ] && cp $R/$d/$f.csv $R/${f}_$d.csv; done; done
rm -rf $R/fx $R/check $R/agree-*/ $R/v2-*/ $R/moon/ $R/l8/ $R/v2long/ $R/ncu $R/ncu3 $R/ncu.csv
cd $OUT && tar czf r.tgz r && rm -rf r
