# Call 2 (issue 16 item 5): build 78e3634 (the routing in lanes only, with its gate rows asked of
# L2 before the wait; the combine fused into the next RMSNorm). Kernel checks, agreement on the tiny
# MLA/MoE shapes, DeepSeek-V2-Lite at batch 1, 8, 32 with SPECULA_PDL default and early
# (interleaved, twice), Moonlight at batch 1, 8; each kernel's duration in a V2-Lite decode forward
# (ncu) and Nsight Compute's sections for the latent attention and the routing.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 200 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "^moe_combine_norm|^moe_route|FAIL| false|passed" $R/gpu_check.log | cut -c1-60,100-200 | head -30
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null
devrun/bin/specula fixtures random --shape results/h200/moe-overlap-2026-12-04/call3/mla16.json --seed 7 --out $R/fx/mla16 > /dev/null
echo "== agree"
for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe mla16; do
  [ -d $R/fx/$shape ] || devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 100 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree-$shape > $R/agree-$shape.log 2>&1; echo "$shape rc $? at $(el) s, lossless true: $(grep -c 'lossless true' $R/agree-$shape.log), false: $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "vs CPU|warning" $R/agree-$shape.log | head -3
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv
done
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
for rep in 1 2; do for pdl in 1 early; do
  export SPECULA_PDL=$pdl
  echo "== V2-Lite batch 1,8,32 prompt 128, SPECULA_PDL=$pdl (round $rep)"
  timeout 120 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2 --max-new-tokens 64 --out $R/v2-$pdl-$rep > $R/v2-$pdl-$rep.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|synthetic|warning" $R/v2-$pdl-$rep.log
done; done
unset SPECULA_PDL
echo "== Moonlight batch 1, 8"
timeout 100 $B --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 2 --max-new-tokens 64 --out $R/moon > $R/moon.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning" $R/moon.log
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "== ncu durations"
timeout 150 $NCU --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
  --launch-count 4000 --csv --log-file $R/ncu.csv $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu > $R/ncu.log 2>&1; echo "rc $? at $(el) s"
python3 tools/gpu/ncu_forward_table.py $R/ncu.csv > $R/kernel_times.txt 2>&1; head -20 $R/kernel_times.txt
echo "== ncu sections: latent attention, routing, grouped experts, norm (decode forwards)"
timeout 200 $NCU --graph-profiling node --cache-control none --clock-control none -k regex:"mla_attention_h1|moe_route|moe_mma|moe_combine_norm|mla_head_linear" --launch-skip 400 --launch-count 6 \
  --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section SchedulerStats \
  $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu2 > $R/ncu_sections.txt 2>&1; echo "rc $? at $(el) s"
grep -E "^  [a-z_]+.*\(|Duration|Memory Throughput|DRAM Throughput|Stall|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Issued Warp|No Eligible|L2 Hit" $R/ncu_sections.txt | head -90
for d in v2-1-1 v2-early-1 v2-1-2 v2-early-2 moon; do for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/$d/$f.csv ] && cp $R/$d/$f.csv $R/${f}_$d.csv; done; done
rm -rf $R/fx $R/check $R/agree-*/ $R/v2-*/ $R/moon/ $R/ncu $R/ncu2 $R/ncu.csv
cd $OUT && tar czf r.tgz r && rm -rf r
