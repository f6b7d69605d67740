# Call 1 (main 24a096e's binaries, devrun/bin): (a) the tables-2026-12-06 call-4 A/B (the 8B at
# batch 16 / 32, default against SPECULA_LINEAR_TILES=64, three times interleaved); (b) where the
# 64-row narrow linears lose: `specula-gpu-check --wgmma-timing --only=qkv:64,o:64,down:64,
# gate_up:64` (every wgmma layout and the engine's form, cold weights), and Nsight Compute's SASS
# stall samples of the chosen qkv layout (one warpgroup x 32 tokens, early transpose) and of the
# 64-token one (the sections of these kernels are in ../narrow-2026-12-05/call1/out).
set -u
CALL_BUDGET_S=150
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
L8="--config bench/configs/llama-3.1-8b.json --batch-sizes 16,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2 3; do
  bench t-default-$rep 30 $L8
  SPECULA_LINEAR_TILES=64 bench t-tiles64-$rep 30 $L8
done
echo "== wgmma timing, 64 rows at $(el) s"
timeout 60 devrun/bin/specula-gpu-check "$R/wgt" --wgmma-timing --only=qkv:64,o:64,down:64,gate_up:64 > "$R/wgmma_timing.txt" 2>&1; echo "rc $? at $(el) s"
cat "$R/wgmma_timing.txt" | cut -c1-250
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "== ncu sass stalls at $(el) s"
for k in linear_wg_1_32_2_4e_bf16 linear_wg_1_64_2_4e_bf16; do
  timeout 90 $NCU --cache-control all --clock-control none -k regex:"$k" --launch-count 10 \
    --sampling-interval 0 --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
    devrun/bin/specula-gpu-check "$R/wgt3" --wgmma-timing --only=qkv:64 > "$R/sass_$k.csv" 2>&1; echo "rc $? at $(el) s"
  python3 tools/gpu/ncu_sass_stalls.py "$R/sass_$k.csv" --top 30 > "$R/stalls_$k.txt" 2>&1; head -45 "$R/stalls_$k.txt"
  gzip "$R/sass_$k.csv"
done
rm -rf "$R/wgt3"
call_done
