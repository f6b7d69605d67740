# Call 7: main at 5200750 (every build's memory read after a synchronize): the bench over two
# prompt lengths in one run (the second sized from the first build: 128 and 8192 at batch 1-64,
# batch 64 at 8192 skipped on an 80 GB card), then on an H200, if one comes, issue 18's table and
# issue 16's rows.
set -u
CALL_BUDGET_S=330
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
bench l8-two 200 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 128,8192 --repeats 1 --max-new-tokens 32
grep -E "skipped|sizing|rror" $R/l8-two.log | cut -c1-240
if grep -q H200 $R/card.txt; then
  bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
  bench v2lite 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
  bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
fi
call_done
