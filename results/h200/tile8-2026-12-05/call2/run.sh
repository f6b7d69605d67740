# Call 1's checks panicked in the check's own CPU reference (fixed); SPECULA_MMA_PIPELINED=64 now
# takes eight tiles only for narrow weights at 33-64 rows (MmaLaunch::eight_tiles). Checks,
# tiny-llama lossless with it, the 8B step with 32 (default) / 64 interleaved twice at batch 8
# (verify of 48 rows) and 64.
set -u
CALL_BUDGET_S=120
. scripts/gpu_call.sh
for b in specula specula-gpu-check; do gunzip -f devrun/t8/$b.gz; chmod +x devrun/t8/$b; done
cp devrun/t8/specula devrun/bin/specula
timeout 60 devrun/t8/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E "linear_mma| false " $R/gpu_check.log | cut -c1-200
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
SPECULA_MMA_PIPELINED=64 timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-t8.log 2>&1
echo "agree t8 rc $? true $(grep -c 'lossless true' $R/agree-t8.log) false $(grep -c 'lossless false' $R/agree-t8.log)"; rm -rf $R/agree
for rep in 1 2; do
  for v in 32 64; do
    SPECULA_MMA_PIPELINED=$v bench l8-rows$v-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 8,64 --repeats 1 --max-new-tokens 64
  done
done
call_done
