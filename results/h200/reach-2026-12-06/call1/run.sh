# Call 1: main at 4e740a3 (the producer wgmma linear, the compact tiled end, the 65-96-row rule)
# on the issue tables' card if one comes: issue 18's table (8B, batch 1-64 twice, 128 / 256,
# prompt 2048 and 8192 at batch 1-64, 32768 at batch 1), issue 16's rows (V2-Lite batch 1 / 8 /
# 32 twice, Moonlight 1 / 8), the o projection's forms alone at 128 and 384 rows, and one
# profiled V2-Lite batch-1 forward.
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
bench l8-1 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
bench v2lite-1 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
bench l8-2 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
bench v2lite-2 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
SPECULA_GPU_PROFILE=1 bench v2lite-prof 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 16
timeout 40 devrun/bin/specula-gpu-check $R/w --wgmma-timing --only=o:128,o:384 > $R/wgmma_timing.txt 2>&1; echo "wgmma timing rc $? at $(el) s"
grep -E "rows|bits" $R/wgmma_timing.txt | cut -c1-240; cp $R/w/wgmma_timing.csv $R/wgmma_timing.csv 2>/dev/null; rm -rf $R/w
bench l8-2048 70 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 2048 --repeats 1 --max-new-tokens 16
bench l8-8192 110 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 16
call_done
