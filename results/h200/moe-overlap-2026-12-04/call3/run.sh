# Call 3 (issue 16 item 5): build 690c012. The latent attention on tensor cores
# (mla_attention_mma_bf16; SPECULA_MLA=fma keeps the FMA kernel, for the same-run comparison), and
# the FMA kernel's staging in two phases. Kernel checks; agreement on the four random tiny MLA/MoE
# shapes and on a 16-head one (call3/mla16.json: tiny-deepseek-v3 with 16 heads, latent 128, rope 32,
# so that bf16 takes the tensor-core form); DeepSeek-V2-Lite at batch 1, 8, 32 with each kernel
# (interleaved), Moonlight at batch 1 and 8; each kernel's duration in a V2-Lite decode forward (ncu).
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 200 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "^mla_|FAIL| false|passed" $R/gpu_check.log | head -30
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null
echo "== agree"
devrun/bin/specula fixtures random --shape results/h200/moe-overlap-2026-12-04/call3/mla16.json --seed 7 --out $R/fx/mla16 > /dev/null
for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe mla16; do
  [ -d $R/fx/$shape ] || devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 100 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree-$shape > $R/agree-$shape.log 2>&1; echo "$shape rc $? at $(el) s, lossless true: $(grep -c 'lossless true' $R/agree-$shape.log), false: $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "vs CPU|warning" $R/agree-$shape.log | head -3
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv
done
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
for run in 1 2; do for mla in fma mma; do
  echo "== V2-Lite batch 1,8,32 prompt 128, attention $mla, run $run"
  if [ $mla = fma ]; then export SPECULA_MLA=fma; else unset SPECULA_MLA; fi
  timeout 150 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 3 --max-new-tokens 64 --out $R/v2-$mla-$run > $R/v2-$mla-$run.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|warning" $R/v2-$mla-$run.log
done; done
unset SPECULA_MLA
echo "== Moonlight batch 1, 8"
timeout 100 $B --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 3 --max-new-tokens 64 --out $R/moon > $R/moon.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning" $R/moon.log
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "== ncu durations"
timeout 200 $NCU --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
  --launch-count 4000 --csv --log-file $R/ncu.csv $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu > $R/ncu.log 2>&1; echo "rc $? at $(el) s"
python3 tools/gpu/ncu_forward_table.py $R/ncu.csv > $R/kernel_times.txt 2>&1; head -18 $R/kernel_times.txt
for d in v2-fma-1 v2-mma-1 v2-fma-2 v2-mma-2 moon; do for f in decode_bandwidth synthetic_speedup spans scaling; do [ -f $R/$d/$f.csv ] && cp $R/$d/$f.csv $R/${f}_$d.csv; done; done
rm -rf $R/fx $R/check $R/agree-*/ $R/v2-*/ $R/moon/ $R/ncu $R/ncu.csv
cd $OUT && tar czf r.tgz r && rm -rf r
