# Call 5 (issue 16 item 5): warp_dot (router logits, the latent attention's W_UK and W_UV, the FMA
# experts) unrolled so that a lane's loads are in flight together (the same sums); otherwise call 4's
# binaries. Kernel checks, agreement on the four random tiny MLA/MoE shapes, DeepSeek-V2-Lite at
# batch 1, 8, 32 (prompt 128, 3 repeats), Moonlight at batch 1 and 8, each kernel's duration in a
# decode forward (ncu).
set -u
for f in devrun/bin/*.gz; do gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 200 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "^mla_batch|^moe_route|^moe_batch|FAIL| false|passed" $R/gpu_check.log | head -24
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null
echo "== agree on random tiny MLA/MoE shapes"
for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 100 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree-$shape > $R/agree-$shape.log 2>&1; echo "$shape rc $? at $(el) s, lossless true: $(grep -c 'lossless true' $R/agree-$shape.log), false: $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "greedy" $R/agree-$shape.log | head -2
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv
done
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
echo "== V2-Lite batch 1,8,32 prompt 128"
timeout 200 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 3 --max-new-tokens 64 --out $R/v2 > $R/v2.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic" $R/v2.log
echo "== Moonlight batch 1"
timeout 100 $B --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 3 --max-new-tokens 64 --out $R/moon > $R/moon.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic" $R/moon.log
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "== ncu durations"
timeout 150 $NCU --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
  --launch-count 4000 --csv --log-file $R/ncu.csv $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu > $R/ncu.log 2>&1; echo "rc $? at $(el) s"
for d in v2 moon; do for f in decode_bandwidth synthetic_speedup spans scaling; do [ -f $R/$d/$f.csv ] && cp $R/$d/$f.csv $R/${f}_$d.csv; done; done
rm -rf $R/fx $R/ncu $R/check $R/agree-*/ $R/v2 $R/moon
cd $OUT && tar czf r.tgz r && rm -rf r
