# Call 2+3 in one (written 2026-12-05 10:40 UTC after two device starts failed and took 360 s of
# the session's 1800: calls 2 and 3 pressed into one call, most telling first, each bench skipped
# once the call has run CALL_BUDGET_S). Binaries and cubin of this commit (devrun/bin) and
# devrun/old (5eb4b83's: main's kernels). Kernel checks and attention timing of this commit;
# lossless on tiny-llama; the 8B step old/new interleaved at prompt 128 (batch 1, 16, 64);
# DeepSeek-V2-Lite with the L2 prefetch off and on, interleaved (batch 1, 8, 32); the 8B with
# each of this branch's switches at its other position (two stages always; no prefetch;
# the chain experiment); prompt 8192 batch 1 old/new.
set -u
CALL_BUDGET_S=500
. scripts/gpu_call.sh
for f in devrun/old/*.gz devrun/kernels/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done
chmod +x devrun/old/*
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
echo "== kernel checks and attention timing"
timeout 90 devrun/bin/specula-gpu-check $R/check --checks-only --attention-timing > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-160 | head -6
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; cp $R/check/attention_times.csv $R/ 2>/dev/null; rm -rf $R/check
grep -E "^tree/4" $R/gpu_check.log | grep -E " (1|8|64) +(160|1024|8192) " | head -24
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "tiny-llama agree rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log), false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "f32 GPU baseline vs CPU" $R/agree-llama.log | head -2; rm -rf $R/agree
cp devrun/bin/specula devrun/bin/specula.new
use() { cp devrun/$([ "$1" = old ] && echo old/specula || echo bin/specula.new) devrun/bin/specula; }
for v in old new old new; do
  use $v; bench l8-$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,16,64 --repeats 1 --max-new-tokens 64
done
use new
for v in 0 1 0 1; do
  SPECULA_L2_PREFETCH=$v bench v2lite-pf$v-$(el) 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 64
done
SPECULA_TREE_STAGES=2 bench l8-stages2-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,16,64 --repeats 1 --max-new-tokens 64
SPECULA_L2_PREFETCH=0 bench l8-pf0-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,16,64 --repeats 1 --max-new-tokens 64
SPECULA_L2_PREFETCH=chain bench l8-pfchain-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,16,64 --repeats 1 --max-new-tokens 64
for v in old new; do
  use $v; bench l8-8192-$v-$(el) 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
done
call_done
