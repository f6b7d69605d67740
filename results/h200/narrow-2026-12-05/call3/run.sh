# Call 3 (binaries and cubin of the commit it runs from): where a decode step's GPU time goes.
# SPECULA_GPU_PROFILE spans (GPU time since the profile clock holds the stream before its first
# event) for the 8B at batch 1, 16, 64 and V2-Lite at batch 1; the step with the launch count
# (kernels_per_step: the key predicate fixed, decode rows are tree rows) on both; the latent
# preparation in one launch now the default; the served V3 shape at prompt 8192 in both latent
# attention forms.
set -u
. scripts/gpu_call.sh
echo "== wgmma timing at 48-96 rows (the qkv layout at 49-96 rows: s3 chosen, s4 early faster in a stream at 64 in call 1)"
timeout 100 devrun/bin/specula-gpu-check $R --wgmma-timing --only=qkv:48,qkv:64,qkv:96,down:96,o:96,gate_up:96 > $R/wgmma_timing.log 2>&1; echo "rc $? at $(el) s"
grep -E "gave|differ|^ *(o|qkv|down|gate_up) " $R/wgmma_timing.log | head -20
bench l8 100 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,16,64 --repeats 1 --max-new-tokens 64
bench v2lite 100 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2 --max-new-tokens 64
for b in 1 16 64; do
  SPECULA_GPU_PROFILE=1 bench l8-prof-$b 100 --config bench/configs/llama-3.1-8b.json --batch-sizes $b --repeats 1 --max-new-tokens 32
  sed -n '/per-forward breakdown, batch [0-9]*, baseline/,/^batch/p' $R/l8-prof-$b.log | head -40
done
SPECULA_GPU_PROFILE=1 bench v2lite-prof-1 100 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
sed -n '/per-forward breakdown, batch [0-9]*, baseline/,/^batch/p' $R/v2lite-prof-1.log | head -40
bench l8-8192 150 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
for mla in fma mma; do
  SPECULA_MLA=$mla bench v3-8192-$mla 120 --config bench/configs/deepseek-v3-4-layers.json --draft-config bench/drafts/deepseek-v3-eagle3.json \
    --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
done
call_done
