# Call 10: a last try for the issues' card with main (174c47d, the code of 5200750): on an H200
# the 8B table (batch 1-64, 128 / 256, prompt 8192 at batch 1-64 with the bench's sizing, 32768)
# and V2-Lite / Moonlight; on an H100 only the prompt-128 rows, once.
set -u
CALL_BUDGET_S=200
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
bench l8 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
bench v2lite 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
if grep -q H200 $R/card.txt; then
  bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
  bench l8-8192 120 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
  bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
fi
call_done
