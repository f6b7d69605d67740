# Call 7: why the routing launch takes ~13 us at batch 1. Call 6's stamps show the routing
# (8 blocks of 256 threads at batch 1) 13.3 us a layer once nothing hides it (stacked), and
# call 2's ncu timed it 13.2 us alone; its work (64 logits of 2048, one warp's top-6, a plan
# of 8 pairs) should take a few us. Here Nsight Compute's warp states and per-instruction
# (SASS) stall counts of one decode-step routing launch, and the details of the other small
# launches of a layer (combine + norm, mla_prep_uk, latent attention, W_UV), at batch 1.
# On an H200, issue 18's 8B table after.
set -u
CALL_BUDGET_S=400
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu | head -1)
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 1 --max-new-tokens 4 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --out $R/tmp"
for mode in beside stacked; do
  echo "== route-$mode at $(el) s"
  SPECULA_SHARED=$mode timeout 150 $NCU --graph-profiling node --cache-control none --clock-control none \
    -k 'regex:^moe_route_bf16$' --launch-skip 60 --launch-count 1 --set full --import-source yes \
    -o $R/route-$mode $B > $R/route-$mode.log 2>&1; echo "rc $? at $(el) s"
  tail -3 $R/route-$mode.log
  $NCU -i $R/route-$mode.ncu-rep --page details > $R/route-$mode-details.txt 2>&1
  $NCU -i $R/route-$mode.ncu-rep --page source --csv --print-source sass > $R/route-$mode-sass.csv 2>&1
  head -c 600 $R/route-$mode-sass.csv; echo
  grep -E "Duration|Registers|Shared Memory Config|Dynamic Shared|Achieved Occupancy|Stall|Warp Cycles" $R/route-$mode-details.txt | head -20
  gzip $R/route-$mode-sass.csv
  rm -rf $R/tmp
done
echo "== layer at $(el) s"
SPECULA_SHARED=stacked timeout 150 $NCU --graph-profiling node --cache-control none --clock-control none \
  -k 'regex:^(moe_combine_norm_bf16|mla_prep_uk_bf16|mla_attention_h1_bf16|mla_head_linear_bf16|rms_norm_residual_bf16|moe_mma_bf16)$' \
  --launch-skip 400 --launch-count 8 --section SpeedOfLight --section WarpStateStats --section LaunchStats \
  --section Occupancy --section MemoryWorkloadAnalysis \
  $B > $R/layer-details.txt 2>&1; echo "rc $? at $(el) s"
grep -E "^  [a-z_]+.*\(|Duration|Memory Throughput|Warp Cycles Per Issued|Achieved Occupancy" $R/layer-details.txt | head -60
rm -rf $R/tmp
if grep -q H200 "$R/card.txt"; then
  CALL_BUDGET_S=480
  bench l8-1 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
  bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
  bench l8-8192 150 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
fi
call_done
