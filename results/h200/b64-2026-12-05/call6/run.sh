# Call 6: two column tiles a block as their own kernels (linear_mma_tile{1,2,4,8}_g2: the
# one-tile kernels' machine code is byte for byte that of 6ae60a1, so the groups change cannot
# slow them as calls 4-5's runtime form did). Checks (invariance rows with one and two tiles a
# block), tiny-llama lossless with two, then 6ae60a1 (devrun/base) against this tree (devrun/new)
# with SPECULA_MMA_GROUPS=1 and 2, interleaved twice, batch 1-64.
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
for d in base new; do for b in specula specula-gpu-check; do gunzip -f devrun/$d/$b.gz; chmod +x devrun/$d/$b; done; done
timeout 120 devrun/new/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E "linear_mma_inv| false " $R/gpu_check.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
SPECULA_MMA_GROUPS=2 timeout 60 devrun/new/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-groups2.log 2>&1
echo "agree groups 2 rc $? true $(grep -c 'lossless true' $R/agree-groups2.log) false $(grep -c 'lossless false' $R/agree-groups2.log)"; rm -rf $R/agree
for rep in 1 2; do
  for c in base/1 new/1 new/2; do
    cp devrun/${c%/*}/specula devrun/bin/specula
    SPECULA_MMA_GROUPS=${c#*/} bench ${c%/*}-g${c#*/}-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  done
done
call_done
