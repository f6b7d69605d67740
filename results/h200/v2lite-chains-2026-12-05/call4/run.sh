# Call 4: main after the merge (devrun/chains: its kernels are main's at c140f80) on the issue-16
# shapes, on the same warm machine as call 3: DeepSeek-V2-Lite at batch 1, 8, 32 and Moonlight at
# batch 1, 8, twice each, interleaved.
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
gunzip -f devrun/chains/specula.gz; chmod +x devrun/chains/specula
cp devrun/chains/specula devrun/bin/specula
for rep in 1 2; do
  bench v2lite-$rep 50 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
  bench moonlight-$rep 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
done
call_done
