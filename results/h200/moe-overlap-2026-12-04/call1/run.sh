# Call 1 (issue 16 item 5): build 7f3e2d6. The shared experts on a side stream beside the routing and
# routed experts, mla_prep beside W_UK (SPECULA_FORK=0: all in order, for the same-run comparison);
# the latent attention's leaner staging, scoring and output sums. Kernel checks, agreement on the
# four random tiny MLA/MoE shapes, DeepSeek-V2-Lite at batch 1, 8, 32 with and without the fork
# (interleaved), Moonlight at batch 1 and 8.
set -u
for f in devrun/bin/*.gz; do gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 200 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "^mla_|^moe_route|^moe_batch|FAIL| false|passed" $R/gpu_check.log | head -30
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null
echo "== agree on random tiny MLA/MoE shapes"
for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 100 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree-$shape > $R/agree-$shape.log 2>&1; echo "$shape rc $? at $(el) s, lossless true: $(grep -c 'lossless true' $R/agree-$shape.log), false: $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "greedy|warning" $R/agree-$shape.log | head -3
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv
done
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
for run in 1 2; do for fork in 0 1; do
  echo "== V2-Lite batch 1,8,32 prompt 128, SPECULA_FORK=$fork, run $run"
  SPECULA_FORK=$fork timeout 150 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 3 --max-new-tokens 64 --out $R/v2-fork$fork-$run > $R/v2-fork$fork-$run.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|synthetic|warning" $R/v2-fork$fork-$run.log
done; done
echo "== Moonlight batch 1, 8"
timeout 100 $B --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 3 --max-new-tokens 64 --out $R/moon > $R/moon.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning" $R/moon.log
for d in v2-fork0-1 v2-fork1-1 v2-fork0-2 v2-fork1-2 moon; do for f in decode_bandwidth synthetic_speedup spans scaling; do [ -f $R/$d/$f.csv ] && cp $R/$d/$f.csv $R/${f}_$d.csv; done; done
rm -rf $R/fx $R/check $R/agree-*/ $R/v2-fork* $R/moon/
cd $OUT && tar czf r.tgz r && rm -rf r
