# Call 1: the deep wgmma pipeline (d09db12: wgmma.wait_group 1, a stage's steps left running while
# the next stage is loaded, transposed and read). Bits of every layout (checks), lossless on
# tiny-llama with every linear past 8 rows on the deep layouts, cold timings of every layout at
# the rows the engine runs wgmma, then the 8B decode step with SPECULA_WG_DEEP=1 against the
# default, interleaved, at batch 64 and 128 (the decode steps with wgmma linears).
set -u
CALL_BUDGET_S=520
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 130 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-220; grep -E "linear_wg" $R/gpu_check.log | cut -c1-200 | head -8; rm -rf $R/check
SPECULA_LINEAR_WG=1 SPECULA_WG_DEEP=1 timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama-deep.log 2>&1
echo "agree tiny-llama (every wgmma, deep) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-deep.log) false $(grep -c 'lossless false' $R/agree-llama-deep.log)"; rm -rf $R/agree
timeout 120 devrun/bin/specula-gpu-check $R/w --wgmma-timing --only=qkv:64,o:64,down:64,gate_up:64,qkv:96,down:128 > $R/wgmma_timing.txt 2>&1; echo "wgmma timing rc $? at $(el) s"
grep -E "rows|bits" $R/wgmma_timing.txt | cut -c1-230; cp $R/w/wgmma_timing.csv $R/wgmma_timing.csv 2>/dev/null; rm -rf $R/w
for rep in 1 2; do
  bench l8-main-$rep 45 --config bench/configs/llama-3.1-8b.json --batch-sizes 64,128 --repeats 1 --max-new-tokens 32
  SPECULA_WG_DEEP=1 bench l8-deep-$rep 45 --config bench/configs/llama-3.1-8b.json --batch-sizes 64,128 --repeats 1 --max-new-tokens 32
done
call_done
