# Call 1 (issues 16 and 18), binaries of 76a885b: the review commits of the last session
# (e8e24ec, 9b94912, cc3c50d: integer-index refactors of the latent attention, its split rule and
# the L2 prefetches, never run on a device) checked first: kernel checks, then agreement on the
# tiny MLA/MoE shapes and models/tiny-llama. Then the bench with the span-sum ideal (76a885b):
# Llama-3.1-8B at batch 1-64, prompt 128 and 8192; DeepSeek-V2-Lite at batch 1, 8, 32; and the
# routing launch's SASS stall samples summed over 40 launches (V2-Lite, batch 1).
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
echo "== Llama-3.1-8B batch 1-64 prompt 128"
timeout 150 $B --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 2 --max-new-tokens 64 --out $R/l8 > $R/l8.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning" $R/l8.log
echo "== Llama-3.1-8B batch 1,8,64 prompt 8192"
timeout 150 $B --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 64 --out $R/l8long > $R/l8long.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning|rror" $R/l8long.log
echo "== V2-Lite batch 1,8,32 prompt 128"
timeout 100 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2 --max-new-tokens 64 --out $R/v2 > $R/v2.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning" $R/v2.log
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "== ncu: the routing launch's stall samples by SASS instruction, 40 launches"
timeout 120 $NCU --graph-profiling node --cache-control none --clock-control none -k regex:"moe_route" --launch-skip 30 --launch-count 40 \
  --sampling-interval 0 --section WarpStateStats --section SourceCounters --section SpeedOfLight --page source --print-source sass --csv \
  $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu > $R/ncu_route_sass.csv 2>&1; echo "rc $? at $(el) s"
python3 tools/gpu/ncu_sass_stalls.py $R/ncu_route_sass.csv --top 40 > $R/route_stalls.txt 2>&1; head -70 $R/route_stalls.txt
timeout 60 $NCU --graph-profiling node --cache-control none --clock-control none -k regex:"moe_route" --launch-skip 30 --launch-count 1 \
  --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
  $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu2 > $R/ncu_route_details.txt 2>&1; echo "rc $? at $(el) s"
grep -E "Duration|Registers|Grid Size|Block Size|Shared Memory|Stall|Warp Cycles|Elapsed|Achieved" $R/ncu_route_details.txt | head -30
for d in l8 l8long v2; do for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/$d/$f.csv ] && cp $R/$d/$f.csv $R/${f}_$d.csv; done; done
gzip $R/ncu_route_sass.csv
rm -rf $R/fx $R/check $R/agree-*/ $R/l8/ $R/l8long/ $R/v2/ $R/ncu $R/ncu2
cd $OUT && tar czf r.tgz r && rm -rf r
