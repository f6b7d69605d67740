# What each operation of a decode step costs on its critical path: the step with one
# operation launched twice (SPECULA_TWICE=op, the throwaway ../twice.patch on main 6281fd1,
# packed as devrun/twice/specula; the kernels and cubin are main's) against the step as is,
# interleaved. The 8B at batch 1, 8, 64; DeepSeek-V2-Lite at batch 1, 8 (its routing, grouped
# experts, latent attention; `noshared` leaves the shared experts out: what running them
# beside the routed ones costs).
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
gunzip -f devrun/twice/specula.gz 2>/dev/null; chmod +x devrun/twice/specula
cp devrun/twice/specula devrun/bin/specula
for rep in 1 2; do
  for v in none qkv rope attention o norm gateup down; do
    SPECULA_TWICE=$v bench l8-$v-$rep 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
  done
done
for rep in 1 2; do
  for v in none router egateup edown mla noshared; do
    SPECULA_TWICE=$v bench v2-$v-$rep 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  done
done
call_done
