# The pipelined small-row linear with eight token tiles (branch wip, devrun/t8: linear_mma_tile8
# for 33-64 rows behind SPECULA_MMA_PIPELINED=64): its checks, each 8B projection at 48 and 64
# rows alone against the engine's forms (small-row looped, wgmma), tiny-llama lossless with it,
# and the 8B step with SPECULA_MMA_PIPELINED=32 (the default) / 64 interleaved, twice, at batch
# 6 (verify of 36 rows), 8 (verify of 48) and 64 (decode of 64).
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
for b in specula specula-gpu-check; do gunzip -f devrun/t8/$b.gz; chmod +x devrun/t8/$b; done
cp devrun/t8/specula devrun/bin/specula
T=devrun/t8/specula-gpu-check
timeout 150 $T $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E "linear_mma_inv| false " $R/gpu_check.log | cut -c1-200
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
timeout 100 $T $R --wgmma-timing --only=qkv:48,o:48,down:48,gate_up:48,qkv:64,o:64,down:64,gate_up:64 > $R/wgmma_timing.log 2>&1; echo "timing rc $? at $(el) s"
grep -E "^(qkv|o |down|gate)" $R/wgmma_timing.log; grep -E "engine|tile8" $R/wgmma_timing.csv
SPECULA_MMA_PIPELINED=64 timeout 90 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-t8.log 2>&1
echo "agree t8 rc $? true $(grep -c 'lossless true' $R/agree-t8.log) false $(grep -c 'lossless false' $R/agree-t8.log)"; rm -rf $R/agree
for rep in 1 2; do
  for v in 32 64; do
    SPECULA_MMA_PIPELINED=$v bench l8-rows$v-$rep 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 6,8,64 --repeats 1 --max-new-tokens 64
  done
done
call_done
