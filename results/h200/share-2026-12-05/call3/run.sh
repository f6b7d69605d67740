# Call 3 (binaries and cubin of the commit it runs from; after call 2 has shown the checks
# hold): each switch of the branch against its off position in the same binary, interleaved,
# so that each gain is its own. SPECULA_TREE_STAGES=2 (two stages of tiles always) against the
# default (four while a launch has no more blocks than SMs); SPECULA_L2_PREFETCH=0 / 1 / last
# (the o projection's weights, and W_UV's in a latent layer, asked into L2 on the side stream
# beside the attention: never, normal priority, evict-last) on the 8B at batch 1, 16, 64 and
# prompt 8192 batch 1 (at batch 64 and at 8192 keys the attention streams 33-42 MB of cache a
# layer, more than the L2 holds beside the o weights), and on DeepSeek-V2-Lite at batch 1, 8,
# 32; `chain` (dense layers: every linear has the next one's weights asked into L2, evict-last,
# while it runs: for batch 16-64, whose linears leave DRAM idle) on the 8B; then
# devrun/qkv/specula (this
# commit with 2e4c1d5's qkv rule re-applied: the qkv projection at 49-64 rows in four stages
# with the early transpose, host-side only, the same cubin) against this commit's at batch 64:
# the A/B of narrow-2026-12-05's call 5, which never ran.
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
for f in devrun/qkv/*.gz devrun/kernels/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done
chmod +x devrun/qkv/*
cp devrun/bin/specula devrun/bin/specula.new
for v in 2 auto 2 auto; do
  SPECULA_TREE_STAGES=$v bench l8-stages$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,16 --repeats 1 --max-new-tokens 64
done
for v in 0 1 last chain 0 1 last chain; do
  SPECULA_L2_PREFETCH=$v bench l8-pf$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,16,64 --repeats 1 --max-new-tokens 64
done
for v in 0 1 last chain; do
  SPECULA_L2_PREFETCH=$v bench l8-8192-pf$v-$(el) 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
done
for v in 0 1 last 0 1 last; do
  SPECULA_L2_PREFETCH=$v bench v2lite-pf$v-$(el) 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 64
done
for v in new qkv new qkv; do
  cp devrun/$([ $v = qkv ] && echo qkv/specula || echo bin/specula.new) devrun/bin/specula
  bench l8-64-$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 64 --repeats 2 --max-new-tokens 64
done
call_done
