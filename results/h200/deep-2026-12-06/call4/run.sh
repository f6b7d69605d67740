# Call 4: the 65-96-row rule (ff0440a, devrun/bin: wide weights and down on 2x32 with a producer)
# against 6f0dde1 (devrun/base: the producer form where the early transpose was; 1x32 three
# stages and 2x64 at 65-96 rows). Checks, lossless, cold timings of the producer layouts at more
# rows, the 8B step at batch 16 (its verify: 96 rows) and 32 / 64 interleaved, then Nsight
# Compute's stall samples of the producer qkv linear at 64 rows.
set -u
CALL_BUDGET_S=400
. scripts/gpu_call.sh
for d in base bin; do cat devrun/$d/PACKED.txt; done
gunzip -f devrun/base/*.gz; chmod +x devrun/base/*
cp devrun/bin/specula devrun/new-specula
timeout 130 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-220; rm -rf $R/check
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,16,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "agree tiny-llama rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log) false $(grep -c 'lossless false' $R/agree-llama.log)"; rm -rf $R/agree
timeout 150 devrun/bin/specula-gpu-check $R/w --wgmma-timing --only=o:64,down:64,gate_up:64,down:80,gate_up:80,lm_head:96,qkv:128,qkv:256,down:256 > $R/wgmma_timing.txt 2>&1; echo "wgmma timing rc $? at $(el) s"
grep -E "rows|bits" $R/wgmma_timing.txt | cut -c1-240; cp $R/w/wgmma_timing.csv $R/wgmma_timing.csv 2>/dev/null; rm -rf $R/w
for rep in 1 2; do
  cp devrun/base/specula devrun/bin/specula; bench l8-base-$rep 45 --config bench/configs/llama-3.1-8b.json --batch-sizes 16,32,64 --repeats 1 --max-new-tokens 32
  cp devrun/new-specula devrun/bin/specula; bench l8-new-$rep 45 --config bench/configs/llama-3.1-8b.json --batch-sizes 16,32,64 --repeats 1 --max-new-tokens 32
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "== ncu stall samples at $(el) s"
k=linear_wg_1_32_2_4p_bf16
timeout 90 $NCU --cache-control all --clock-control none -k regex:"$k" --launch-count 10 --warp-sampling-interval 0 \
  --section WarpStateStats --section SourceCounters --section SpeedOfLight --section Occupancy --page source --print-source sass --csv \
  devrun/bin/specula-gpu-check $R/w --wgmma-timing --only=qkv:64 > $R/sass_$k.csv 2>&1; echo "ncu rc $? at $(el) s"
python3 tools/gpu/ncu_sass_stalls.py $R/sass_$k.csv --top 30 > $R/stalls_$k.txt 2>&1; head -40 $R/stalls_$k.txt
timeout 60 $NCU --cache-control all --clock-control none -k regex:"$k" --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats \
  devrun/bin/specula-gpu-check $R/w2 --wgmma-timing --only=qkv:64 > $R/ncu_$k.txt 2>&1; echo "ncu details rc $? at $(el) s"
grep -E "DRAM Throughput|Memory Throughput|Duration|Achieved Occupancy|Warp Cycles Per Issued|Eligible Warps|Active Warps Per" $R/ncu_$k.txt | head -12
gzip $R/sass_$k.csv; rm -rf $R/w $R/w2
cp devrun/new-specula devrun/bin/specula
call_done
