# Call 5 (issue 16 item 5): build f58bac7 (the FMA latent attention walks several chunks per split for
# rows of more than 32 chunks of keys). Kernel checks (a 1100-key sequence added), agreement on the
# random tiny MLA/MoE shapes and the 16-head one (call3/mla16.json), DeepSeek-V2-Lite at batch 1, 8,
# 32 (prompt 128: bits and times as call 4 expected), and at prompt 8192, batch 1 and 8.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 240 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "^mla_absorbed|^mla_batch|FAIL| false|passed" $R/gpu_check.log | cut -c1-48,120-250 | head -30
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null
echo "== agree"
devrun/bin/specula fixtures random --shape results/h200/moe-overlap-2026-12-04/call3/mla16.json --seed 7 --out $R/fx/mla16 > /dev/null
for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe mla16; do
  [ -d $R/fx/$shape ] || devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 100 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree-$shape > $R/agree-$shape.log 2>&1; echo "$shape rc $? at $(el) s, lossless true: $(grep -c 'lossless true' $R/agree-$shape.log), false: $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "f32 GPU baseline vs CPU|warning" $R/agree-$shape.log | head -2
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv
done
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
echo "== V2-Lite batch 1,8,32 prompt 128"
timeout 150 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 3 --max-new-tokens 64 --out $R/v2 > $R/v2.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|warning" $R/v2.log
echo "== V2-Lite batch 1,8 prompt 8192"
timeout 200 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32 --out $R/v2long > $R/v2long.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning|rror" $R/v2long.log
for d in v2 v2long; do for f in decode_bandwidth synthetic_speedup spans scaling; do [ -f $R/$d/$f.csv ] && cp $R/$d/$f.csv $R/${f}_$d.csv; done; done
rm -rf $R/fx $R/check $R/agree-*/ $R/v2/ $R/v2long/
cd $OUT && tar czf r.tgz r && rm -rf r
