# Call 2 (right after call 1, same machine): the rest of the issue tables of main: the 8B at
# batch 1-64 twice, prompt 8192 and 32768 (batch 1), prompt 8192 at batch 8, batch 128 and 256
# (issue 18); V2-Lite at batch 32, Moonlight at batch 1 and 8 and one profiled V2-Lite batch-1
# forward (issue 16); then call 1's l2-hint A/B twice more (main, hint, main, hint).
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
for rep in 1 2; do
  bench l8-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
done
bench v2lite-b32 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 32 --repeats 1 --max-new-tokens 32
bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
bench l8-long 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 8192,32768 --repeats 1 --max-new-tokens 32
bench l8-8192-b8 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 32
SPECULA_GPU_PROFILE=1 bench v2lite-prof 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 16
gunzip -f devrun/hint/specula.gz 2>/dev/null; chmod +x devrun/hint/specula; cp devrun/bin/specula devrun/main-specula
for rep in 2 3; do
  for d in main hint; do
    if [ $d = main ]; then cp devrun/main-specula devrun/bin/specula; else cp devrun/hint/specula devrun/bin/specula; fi
    bench l8-$d-$rep 45 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
    bench v2lite-$d-$rep 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
  done
done
cp devrun/main-specula devrun/bin/specula
call_done
