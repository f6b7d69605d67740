# Call 3 (issue 16 item 5): build 7f0b603 (the norms' weights in registers and the per-head products'
# weights and the latent attention's first cache rows asked of L2 before each kernel's wait).
# Kernel checks, agreement on the tiny MLA/MoE shapes and on models/tiny-llama (dense: its norms
# changed too), DeepSeek-V2-Lite at batch 1, 8, 32 with SPECULA_PDL default and early
# (interleaved, twice), Llama-3.1-8B at batch 1, 8, 64 with each; each kernel's duration in a
# V2-Lite decode forward (ncu).
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 200 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "FAIL| false|passed" $R/gpu_check.log | cut -c1-60,100-200 | head -30
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
for rep in 1 2; do for pdl in 1 early; do
  export SPECULA_PDL=$pdl
  echo "== V2-Lite batch 1,8,32 prompt 128, SPECULA_PDL=$pdl (round $rep)"
  timeout 120 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2 --max-new-tokens 64 --out $R/v2-$pdl-$rep > $R/v2-$pdl-$rep.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|warning" $R/v2-$pdl-$rep.log
done; done
for pdl in 1 early 1 early; do
  export SPECULA_PDL=$pdl
  echo "== Llama-3.1-8B batch 1,8,64 prompt 128, SPECULA_PDL=$pdl"
  timeout 120 $B --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 2 --max-new-tokens 64 --out $R/l8-$pdl > $R/l8-$pdl.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|warning" $R/l8-$pdl.log
  for f in decode_bandwidth synthetic_speedup; do [ -f $R/l8-$pdl/$f.csv ] && cat $R/l8-$pdl/$f.csv >> $R/${f}_l8-$pdl.csv; done
done
unset SPECULA_PDL
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "== ncu durations"
timeout 150 $NCU --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
  --launch-count 4000 --csv --log-file $R/ncu.csv $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu > $R/ncu.log 2>&1; echo "rc $? at $(el) s"
python3 tools/gpu/ncu_forward_table.py $R/ncu.csv > $R/kernel_times.txt 2>&1; head -20 $R/kernel_times.txt
for d in v2-1-1 v2-early-1 v2-1-2 v2-early-2; do for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/$d/$f.csv ] && cp $R/$d/$f.csv $R/${f}_$d.csv; done; done
rm -rf $R/fx $R/check $R/agree-*/ $R/v2-*/ $R/l8-*/ $R/ncu $R/ncu.csv
cd $OUT && tar czf r.tgz r && rm -rf r
