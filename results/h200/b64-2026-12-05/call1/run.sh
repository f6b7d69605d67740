# Call 1 (binaries of eea8c3f in devrun/t8: main's kernels and rules): where a batch-64 step goes
# now, and why eight token tiles for o and down (faster alone) made the step 1.4 ms slower
# (../tile8-2026-12-05/call2). SPECULA_GPU_PROFILE spans (GPU time, the stream held) of the 8B
# at batch 64 with SPECULA_MMA_PIPELINED=32 (default) and 64, then at batch 1 and DeepSeek-V2-Lite
# at batch 1; the tree kernel at batch 64 with four stages (one block an SM) in the step.
set -u
CALL_BUDGET_S=400
. scripts/gpu_call.sh
for b in specula specula-gpu-check; do gunzip -f devrun/t8/$b.gz; chmod +x devrun/t8/$b; done
cp devrun/t8/specula devrun/bin/specula
prof() { sed -n '/per-forward breakdown, batch [0-9]*, baseline/,/^batch/p' $R/$1.log | head -24; }
for v in 32 64; do
  SPECULA_MMA_PIPELINED=$v SPECULA_GPU_PROFILE=1 bench l8-prof64-rows$v 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 64 --repeats 1 --max-new-tokens 16
  prof l8-prof64-rows$v
done
SPECULA_GPU_PROFILE=1 bench l8-prof1 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --repeats 1 --max-new-tokens 16
prof l8-prof1
SPECULA_GPU_PROFILE=1 bench v2lite-prof1 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 16
prof v2lite-prof1
for rep in 1 2; do
  for s in 2 4; do
    SPECULA_TREE_STAGES=$s bench l8-stages$s-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 64 --repeats 1 --max-new-tokens 32
  done
done
call_done
