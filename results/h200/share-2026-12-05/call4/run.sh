# Call 4 (binaries and cubin of the commit it runs from): the issue-18 and issue-16 tables with
# the shared tree attention as the default: kernel checks, lossless on tiny-llama, the 8B step
# at batch 1-64 (prompt 128, two repeats), at prompt 8192 (batch 1, 8, 64), batch 128 and 256,
# DeepSeek-V2-Lite at batch 1, 8, 32 and Moonlight-16B-A3B at batch 1, 8 (random weights).
set -u
CALL_BUDGET_S=330
. scripts/gpu_call.sh
for f in devrun/kernels/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done
timeout 60 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-160 | head -4
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "tiny-llama agree rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log), false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "f32 GPU baseline vs CPU" $R/agree-llama.log | head -2; rm -rf $R/agree
bench l8 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 2 --max-new-tokens 64
bench l8-8192 150 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
bench v2lite 90 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2 --max-new-tokens 64
bench moonlight 90 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 2 --max-new-tokens 64
bench l8-big 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 32
call_done
