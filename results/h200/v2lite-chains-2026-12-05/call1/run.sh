# Ready, not run (written by a session lent no device machine). Carry ["devrun"] with devrun/new
# (main's kernels: 2e6f8ea, unchanged since) and its cubin (a19690f9351341d2) in devrun/kernels.
# Call 1: the issue tables of main, first thing on an H200 (every call since ea0ba6b got an H100;
# on an H100, run it anyway: the same binaries' figures there are in ../../b64-2026-12-05/call7).
# Issue 18: the 8B decode step at batch 1-64 twice, prompt 8192 and 32768 at batch 1, prompt
# 8192 at batch 8, batch 128 and 256; issue 16: DeepSeek-V2-Lite at batch 1, 8, 32 and
# Moonlight at batch 1 and 8.
set -u
CALL_BUDGET_S=400
. scripts/gpu_call.sh
gunzip -f devrun/new/specula.gz; chmod +x devrun/new/specula
cp devrun/new/specula devrun/bin/specula
for rep in 1 2; do
  bench l8-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
done
bench v2lite 50 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
bench l8-long 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 8192,32768 --repeats 1 --max-new-tokens 32
bench l8-8192-b8 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 32
call_done
