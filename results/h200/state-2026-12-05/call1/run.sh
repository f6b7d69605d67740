# Where main stands at the end of 2026-12-05 (binaries of ea0ba6b, devrun/bin: the shared tree
# attention, the qkv rule at 49-64 rows, the switch reader, at_col8): kernel checks and
# lossless on tiny-llama, then the issue tables once more: the 8B at batch 1-64 (prompt 128),
# at prompt 8192 and 32768 (batch 1: the prefill's device memory and time), DeepSeek-V2-Lite at
# batch 1, 8, 32 and Moonlight-16B-A3B at batch 1, 8.
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
timeout 200 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
head -1 $R/gpu_check.log | cut -c1-160; grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
timeout 90 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "tiny-llama agree rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log), false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "f32 GPU baseline vs CPU|graphs vs eager, baseline" $R/agree-llama.log | head -2; rm -rf $R/agree
bench l8 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 64
bench l8-long 150 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 8192,32768 --repeats 1 --max-new-tokens 32
bench v2lite 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 64
bench moonlight 60 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 64
bench l8-again 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 64
call_done
