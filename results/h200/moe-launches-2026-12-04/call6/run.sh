# Call 6 (issue 16 item 5): where the routing (14 us a layer at batch 1) and the one-head latent
# attention (15 us) spend their time: Nsight Compute's warp-state sampling per SASS instruction of
# one launch each inside the DeepSeek-V2-Lite decode graph (call 5's binaries).
set -u
for f in devrun/bin/*.gz; do gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for k in moe_route_bf16 mla_attention_h1_bf16; do
  timeout 120 $NCU --graph-profiling node --cache-control none --clock-control none --section SourceCounters --section WarpStateStats \
    -k regex:^$k\$ --launch-skip 200 --launch-count 1 --page source --print-source sass --csv $B --out $R/b > $R/src_$k.csv 2> $R/src_$k.err; echo "$k rc $?"
  timeout 120 $NCU --graph-profiling node --cache-control none --clock-control none --section WarpStateStats --section LaunchStats --section SpeedOfLight \
    -k regex:^$k\$ --launch-skip 200 --launch-count 1 --print-details all $B --out $R/b > $R/det_$k.txt 2>&1; echo "$k rc $?"
  grep -E "Duration|Warp Cycles Per Issued|Stall Long|Stall Wait|Stall Barrier|Stall Membar|Stall Short" $R/det_$k.txt | head -8
done
rm -rf $R/b
cd $OUT && tar czf r.tgz r && rm -rf r
