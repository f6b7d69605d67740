# Decode rows' RoPE and cache append inside the tree attention (e6dad53, devrun/bin):
# kernel checks (attention_rope_decode: one launch against the two, bit for bit), lossless on
# tiny-llama with and without it, then the 8B step with it off (SPECULA_ROPE_IN_ATTENTION=0)
# and on, interleaved, at batch 1-64 (prompt 128) and at prompt 8192 (batch 1, 8).
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
timeout 120 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -6
grep attention_rope_decode $R/check/kernel_checks.csv | cut -c1-220
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
for v in 1 0; do
  SPECULA_ROPE_IN_ATTENTION=$v timeout 90 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama-$v.log 2>&1
  echo "tiny-llama agree (rope in attention $v) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-$v.log), false $(grep -c 'lossless false' $R/agree-llama-$v.log)"
  grep -iE "f32 GPU baseline vs CPU|graphs vs eager, baseline" $R/agree-llama-$v.log | head -2; rm -rf $R/agree
done
for v in 0 1 0 1; do
  SPECULA_ROPE_IN_ATTENTION=$v bench l8-rope$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 64
done
for v in 0 1 0 1; do
  SPECULA_ROPE_IN_ATTENTION=$v bench l8-8192-rope$v-$(el) 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
done
call_done
