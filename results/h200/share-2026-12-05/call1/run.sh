# Call 1 (binaries and cubin of the commit it runs from): the tree attention shares a set of 16
# query vectors between 2 or 4 warps when its group has at most 32 (a decode row: 4 vectors of
# the 8B's kv head; a 6-chain: 24), and loads a tile past the common prefix once when every
# row's entries in it are the longest row's (a chain), SPECULA_TREE_SHARE (default on; 0 = the
# kernel before: one warp a set, each row its own tail tiles). Same bits both ways (the kernel
# checks compare them). Checks (both ways), resource usage of the tree kernels (spills), the
# attention alone both ways, lossless on tiny-llama, the 8B step interleaved off/on at prompt
# 128 (batch 1/16/64) and prompt 8192 (batch 1/8: the verify ratio).
set -u
CALL_BUDGET_S=330
. scripts/gpu_call.sh
cuobjdump -res-usage devrun/kernels/*.cubin 2>&1 | grep -A1 "tree_attention" | cut -c1-200 > $R/tree_res.txt
cat $R/tree_res.txt | grep -E "REG|spill|STACK" | head -6
for v in 1 0; do
  echo "== kernel checks and attention timing, SPECULA_TREE_SHARE=$v"
  SPECULA_TREE_SHARE=$v timeout 100 devrun/bin/specula-gpu-check $R/check$v --checks-only --attention-timing > $R/gpu_check_share$v.log 2>&1; echo "rc $? at $(el) s"
  grep -E "FAIL|passed|share" $R/gpu_check_share$v.log | cut -c1-160 | head -8
  cp $R/check$v/kernel_checks.csv $R/kernel_checks_share$v.csv 2>/dev/null; cp $R/check$v/attention_times.csv $R/attention_times_share$v.csv 2>/dev/null; rm -rf $R/check$v
  grep -E "^tree/4 " $R/gpu_check_share$v.log | grep -E " (1|8|64) +(160|1024|8192) " | head -18
done
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "tiny-llama agree rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log), false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "f32 GPU baseline vs CPU" $R/agree-llama.log | head -2; rm -rf $R/agree
for v in 0 1 0 1; do
  SPECULA_TREE_SHARE=$v bench l8-share$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,16,64 --repeats 1 --max-new-tokens 64
done
for v in 0 1; do
  SPECULA_TREE_SHARE=$v bench l8-8192-share$v-$(el) 120 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
done
call_done
