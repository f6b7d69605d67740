# Call 3 (issues 16 and 18): binaries of 9d92bb0 (one acq_rel ticket per block in place of every
# thread's SC fences; the tree attention's one-split groups return before counting) against
# call 1's (76a885b, devrun/bin/specula-old), interleaved in one run. Kernel checks and agreement
# first (the multi-split merges of every attention form and the routing tail are in the checks).
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
  grep -iE "f32 GPU baseline vs CPU|warning" $R/agree-$shape.log | head -2
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv
done
echo "== agree at batch 64 (trees of 16: 1024 verify rows), tiny-llama"
timeout 100 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree64 > $R/agree64.log 2>&1; echo "rc $? at $(el) s, lossless true: $(grep -c 'lossless true' $R/agree64.log), false: $(grep -c 'lossless false' $R/agree64.log)"
cp $R/agree64/agreement.csv $R/agreement_tiny-llama-64.csv
O="--random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
for rep in 1 2; do for b in new old; do
  if [ $b = new ]; then S=devrun/bin/specula; else S=devrun/bin/specula-old; fi
  echo "== $b (round $rep): V2-Lite batch 1,8,32"
  timeout 100 $S gpu bench $O --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2 --max-new-tokens 64 --out $R/v2-$b-$rep > $R/v2-$b-$rep.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|warning" $R/v2-$b-$rep.log | cut -c1-110
  echo "== $b (round $rep): Llama-3.1-8B batch 1,8,64"
  timeout 100 $S gpu bench $O --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 2 --max-new-tokens 64 --out $R/l8-$b-$rep > $R/l8-$b-$rep.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|warning" $R/l8-$b-$rep.log | cut -c1-110
done; done
for b in new old; do
  if [ $b = new ]; then S=devrun/bin/specula; else S=devrun/bin/specula-old; fi
  echo "== $b: Llama-3.1-8B batch 1,8 prompt 8192"
  timeout 100 $S gpu bench $O --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 64 --out $R/l8long-$b > $R/l8long-$b.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|synthetic|warning" $R/l8long-$b.log | cut -c1-200
done
for d in $(ls -d $R/v2-* $R/l8-* $R/l8long-* 2>/dev/null | xargs -n1 basename); do for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/$d/$f.csv ] && cp $R/$d/$f.csv $R/${f}_$d.csv; done; done
rm -rf $R/fx $R/check $R/agree-*/ $R/agree64/ $R/v2-*/ $R/l8-*/ $R/l8long-*/
cd $OUT && tar czf r.tgz r && rm -rf r
