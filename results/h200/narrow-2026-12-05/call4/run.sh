# Call 4 (binaries and cubin of the commit it runs from; the session's last ~590 s of device
# time): the tree attention plans its split and starts its first prefix tile before waiting on
# the kernel before it (SPECULA_TREE_EARLY, default on). Call 3's GPU-time profile put the 8B's
# attention at 19.4 us a layer at batch 1 with ~160 keys (620 us of a 5.5 ms eager forward)
# and 36 us at batch 64. Checks (the tree rows against the CPU, both ways), lossless on
# tiny-llama, the 8B step interleaved off/on, and the attention alone at short contexts with 1-16
# tiles per split (what the next change to the split rule needs).
set -u
CALL_BUDGET_S=230
. scripts/gpu_call.sh
echo "== kernel checks (early), then the attention rows with SPECULA_TREE_EARLY=0; attention alone"
timeout 90 devrun/bin/specula-gpu-check $R/check --checks-only --attention-timing > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "FAIL|passed|cubin" $R/gpu_check.log | cut -c1-160 | head -8
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; cp $R/check/attention_times.csv $R/ 2>/dev/null; rm -rf $R/check
grep -E "^tree/(1|2|4) |^split-k" $R/gpu_check.log | grep -E " (160|1024) " | head -24
SPECULA_TREE_EARLY=0 timeout 60 devrun/bin/specula-gpu-check $R/check0 --checks-only > $R/gpu_check_early0.log 2>&1; echo "early=0 checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check_early0.log | head -3; rm -rf $R/check0
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "tiny-llama agree rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log), false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "f32 GPU baseline vs CPU" $R/agree-llama.log | head -2; rm -rf $R/agree
for v in 0 1 0 1; do
  SPECULA_TREE_EARLY=$v bench l8-early$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,16,64 --repeats 1 --max-new-tokens 64
done
call_done
