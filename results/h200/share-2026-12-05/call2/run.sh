# Call 2 (binaries and cubin of the commit it runs from, and devrun/old: 5eb4b83's specula and
# specula-gpu-check with their cubin, the tree kernel before this study). Call 1's kernel took
# `ways` (warps to a set of query vectors) as a runtime value: its one-warp path ran 1.3-1.9x
# slower than the kernel before (call 4 of narrow-2026-12-05), which ate the sharing's gain.
# Now `ways` is a template parameter (a warp keeps only its share of the state in registers)
# and the kernel before runs in the same call: checks, attention alone (old; new shared; new
# unshared), lossless on tiny-llama, the 8B step old/new interleaved at prompt 128 (batch 1,
# 16, 64) and 8192 (batch 1, 8). The new binary runs the branch's defaults: shared sets, four
# stages of tiles when a launch has no more blocks than SMs, the o projection's weights asked
# into L2 beside the attention (the last two written 2026-12-05 by a session lent no device;
# their checks attention_tree_stages and l2_prefetch are in --checks-only, the attention
# timing has tree/4/s2 and tree/4/s4). Call 3 takes each switch apart, and the qkv rule.
set -u
CALL_BUDGET_S=360
. scripts/gpu_call.sh
for f in devrun/old/*.gz devrun/qkv/*.gz devrun/kernels/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done
chmod +x devrun/old/* devrun/qkv/*
cuobjdump -res-usage devrun/kernels/*.cubin 2>&1 | grep -A1 "tree_attention" | grep -v "^--" | paste - - | cut -c1-120
for v in old share1 share0; do
  G=devrun/bin/specula-gpu-check; [ $v = old ] && G=devrun/old/specula-gpu-check
  echo "== kernel checks and attention timing: $v"
  SPECULA_TREE_SHARE=${v#share} timeout 100 $G $R/check$v --checks-only --attention-timing > $R/gpu_check_$v.log 2>&1; echo "rc $? at $(el) s"
  grep -E "FAIL|passed" $R/gpu_check_$v.log | cut -c1-160 | head -4
  cp $R/check$v/kernel_checks.csv $R/kernel_checks_$v.csv 2>/dev/null; cp $R/check$v/attention_times.csv $R/attention_times_$v.csv 2>/dev/null; rm -rf $R/check$v
  grep -E "^tree/4(/s[24])? " $R/gpu_check_$v.log | grep -E " (1|8|64) +(160|1024|8192) " | head -36
done
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "tiny-llama agree rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log), false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "f32 GPU baseline vs CPU" $R/agree-llama.log | head -2; rm -rf $R/agree
cp devrun/bin/specula devrun/bin/specula.new
for v in old new old new; do
  cp devrun/$([ $v = old ] && echo old || echo bin)/specula$([ $v = new ] && echo .new) devrun/bin/specula
  bench l8-$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,16,64 --repeats 1 --max-new-tokens 64
done
for v in old new; do
  cp devrun/$([ $v = old ] && echo old || echo bin)/specula$([ $v = new ] && echo .new) devrun/bin/specula
  bench l8-8192-$v-$(el) 120 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
done
call_done
