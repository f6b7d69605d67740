# Call 6 (issue 16 item 5): build 81aa7a2 + the grouped experts' warp target (SPECULA_MOE_WARPS:
# 768, the default so far, against 2048 and 4096: more k slices per expert launch). Kernel checks
# and agreement with 4096 (the MoE checks' shapes then split k further); DeepSeek-V2-Lite at
# batch 1, 8, 32 with each target, interleaved.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks, SPECULA_MOE_WARPS=4096"
SPECULA_MOE_WARPS=4096 timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "^moe|FAIL| false|passed" $R/gpu_check.log | cut -c1-60 | head -20
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null
echo "== agree, SPECULA_MOE_WARPS=4096"
for shape in tiny-deepseek-v3 tiny-qwen3-moe; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  SPECULA_MOE_WARPS=4096 timeout 100 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree-$shape > $R/agree-$shape.log 2>&1; echo "$shape rc $? at $(el) s, lossless true: $(grep -c 'lossless true' $R/agree-$shape.log), false: $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "f32 GPU baseline vs CPU|warning" $R/agree-$shape.log | head -2
done
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
for w in 768 2048 4096 768 2048 4096; do
  echo "== V2-Lite batch 1,8,32 prompt 128, SPECULA_MOE_WARPS=$w"
  SPECULA_MOE_WARPS=$w timeout 60 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2 --max-new-tokens 64 --out $R/v2-$w > $R/v2-$w.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step" $R/v2-$w.log | sed 's/: 4.91 GB.*experts per MoE layer)//; s/GB read.*layer),//'
  for f in scaling synthetic_speedup; do [ -f $R/v2-$w/$f.csv ] && cat $R/v2-$w/$f.csv >> $R/${f}_v2-$w.csv; done
done
rm -rf $R/fx $R/check $R/agree-*/ $R/v2-*/
cd $OUT && tar czf r.tgz r && rm -rf r
