# Call 4: main at 93efb42. The bench's first-build sizing after a synchronize (prompt 8192 at
# batch 1-64 on an 80 GB card: batch 32 should now run), the 8B table once more, then where the
# DeepSeek-V2-Lite batch-1 step's kernels stall: Nsight Compute's warp-state samples (every 32
# cycles) per SASS instruction of 20 launches each, and the stall reasons of one launch, of the
# routing, the grouped experts, the one-head latent attention and the combine + norm, inside the
# decode graph (--graph-profiling node).
set -u
CALL_BUDGET_S=520
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
bench l8-8192 150 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 16
grep -E "skipped|sizing" $R/l8-8192.log | cut -c1-240
bench v2lite 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for k in moe_route_bf16 moe_mma_bf16 mla_attention_h1_bf16 moe_combine_norm_bf16; do
  [ "$(el)" -gt 480 ] && { echo "== $k skipped at $(el) s"; continue; }
  echo "== $k at $(el) s"
  timeout 90 $NCU --graph-profiling node --cache-control none --clock-control none --warp-sampling-interval 0 \
    --section SourceCounters --section WarpStateStats -k regex:^$k\$ --launch-skip 200 --launch-count 20 \
    --page source --print-source sass --csv $B --out $R/b > $R/src_$k.csv 2> $R/src_$k.err; echo "src rc $?"
  python3 tools/gpu/ncu_sass_stalls.py $R/src_$k.csv --top 12 > $R/stalls_$k.txt 2>&1; head -30 $R/stalls_$k.txt
  timeout 60 $NCU --graph-profiling node --cache-control none --clock-control none --section WarpStateStats --section SpeedOfLight \
    --section LaunchStats -k regex:^$k\$ --launch-skip 200 --launch-count 1 --print-details all $B --out $R/b2 > $R/det_$k.txt 2>&1; echo "det rc $?"
  grep -iE "Duration|Warp Cycles Per Issued|Stall" $R/det_$k.txt | head -24
  gzip $R/src_$k.csv
done
rm -rf $R/b $R/b2
call_done
