# Call 6: main at f22d493 (o past 96 rows on wgmma, the launch ceiling, the bench's sizing), the
# issue tables on whatever card comes (asked for an H200): the 8B at batch 1-64 twice, 128 / 256,
# prompt 8192 at batch 1-64 (32 new tokens: call 4's 16-token batch-1 synthetic run was noisy),
# prompt 32768 at batch 1, V2-Lite at batch 1 / 8 / 32, Moonlight at batch 1 / 8.
set -u
CALL_BUDGET_S=440
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
bench l8-1 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
bench v2lite 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
bench l8-2 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
bench l8-8192 200 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
grep -E "skipped|sizing" $R/l8-8192.log | cut -c1-240
call_done
