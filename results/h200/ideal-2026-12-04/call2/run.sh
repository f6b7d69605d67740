# Call 2 (issue 16 item 5), binaries of 76a885b (as call 1): where the small launches of a
# DeepSeek-V2-Lite MoE layer at batch 1 spend their time. Nsight Compute on decode launches only
# (skip 600: past the warm-ups and the baseline's prefill), dense warp sampling, 40 launches each,
# SASS stall samples summed by tools/gpu/ncu_sass_stalls.py; one launch each with the occupancy,
# scheduler and memory sections.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
SI=$($NCU --help | grep -o -- '--[a-z-]*sampling-interval' | head -1); echo "sampling option: $SI"
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 64"
for k in moe_route mla_attention_h1 mla_prep moe_mma; do
  echo "== $k: stall samples, 40 decode launches"
  timeout 150 $NCU --graph-profiling node --cache-control none --clock-control none -k regex:"$k" --launch-skip 600 --launch-count 40 \
    $SI 0 --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
    $B --out $R/n-$k > $R/sass_$k.csv 2>&1; echo "rc $? at $(el) s"
  python3 tools/gpu/ncu_sass_stalls.py $R/sass_$k.csv --top 30 > $R/stalls_$k.txt 2>&1; head -60 $R/stalls_$k.txt
  timeout 90 $NCU --graph-profiling node --cache-control none --clock-control none -k regex:"$k" --launch-skip 600 --launch-count 2 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    $B --out $R/m-$k > $R/details_$k.txt 2>&1; echo "rc $? at $(el) s"
  grep -E "^  [a-z_]+.*\(|Duration|Registers|Grid Size|Block Size|Dynamic Shared|Warp Cycles Per Issued|Achieved Active|Issued Warp|No Eligible|Memory Throughput|DRAM Throughput|L2 Hit" $R/details_$k.txt | head -40
  gzip -f $R/sass_$k.csv
done
rm -rf $R/n-* $R/m-*
cd $OUT && tar czf r.tgz r && rm -rf r
