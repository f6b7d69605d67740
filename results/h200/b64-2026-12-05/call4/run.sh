# Call 4 (binaries of this commit's working tree in devrun/new: the pipelined small-row kernel with
# several column tiles a block, SPECULA_MMA_GROUPS). Each warp of that kernel loads every token
# of its k slice for only 16 output columns: at 64 rows its token loads are 4x its weight bytes,
# all from L2 when a block holds one column tile. With two or four tiles a block, the warps of
# one k slice load the same tokens together (L1 serves them once). Checks (the invariance rows
# now run one, two and four tiles a block), tiny-llama lossless with 2 and 4, then the 8B step
# interleaved twice with 1 (default) / 2 / 4 at batch 1-64.
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
for b in specula specula-gpu-check; do gunzip -f devrun/new/$b.gz; chmod +x devrun/new/$b; done
cp devrun/new/specula devrun/bin/specula
timeout 120 devrun/new/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E "linear_mma| false " $R/gpu_check.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
for g in 2 4; do
  SPECULA_MMA_GROUPS=$g timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-groups$g.log 2>&1
  echo "agree groups $g rc $? true $(grep -c 'lossless true' $R/agree-groups$g.log) false $(grep -c 'lossless false' $R/agree-groups$g.log)"; rm -rf $R/agree
done
for rep in 1 2; do
  for g in 1 2 4; do
    SPECULA_MMA_GROUPS=$g bench g$g-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  done
done
call_done
