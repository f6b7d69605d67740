#!/usr/bin/env bash
# The served MoE family at the batch sizes and prompts users run (issue 16):
# DeepSeek-V3's and the Kimi-K2/K2.5 language model's shapes, cut to 4
# layers so that their bf16 experts fit one H200 (bench/configs/), random
# weights on the device, drafts of SpecForge's shapes for them
# (bench/drafts), batch 1-64 at prompts 128 and 8192; the latent
# attention of decode and verify rows in its FMA form (the default) and on
# tensor cores (SPECULA_MLA=mma), same run. CSVs under OUT.
#
#   bash scripts/gpu_run_served.sh [OUT=results/h200/served] [BIN=devrun/bin]
#
# OUT/<shape>-<mla>/scaling.csv per shape and attention form: decode step,
# bytes read (weights + routed experts touched + KV) against the copy
# ceiling, verify over decode and the experts a verify touches per MoE
# layer, synthetic 0.8 speedup against the span-sum ideal. A truncated
# target makes the draft as costly as the target: read the speedups as the
# verify and draft costs of 4 layers, not as the 61-layer model's.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/h200/served}
BIN=${2:-devrun/bin}
mkdir -p "$OUT"
. scripts/gpu_env.sh
bench() { # name, mla form, args...
    local name=$1 mla=$2
    shift 2
    echo "== $name, latent attention: $mla"
    SPECULA_MLA=$mla timeout 600 "$BIN/specula" gpu bench --random-weights --quiet \
        --steps 5 --topk 1 --synthetic 0.8 --repeats 1 --max-new-tokens 32 \
        "$@" --out "$OUT/$name-$mla" > "$OUT/$name-$mla.log" 2>&1
    echo "rc $?"
    grep -E "random bf16|baseline step|synthetic|rror|skipped" "$OUT/$name-$mla.log"
}
for mla in fma mma; do
    bench v3 $mla --config bench/configs/deepseek-v3-4-layers.json --draft-config bench/drafts/deepseek-v3-eagle3.json \
        --batch-sizes 1,8,64 --prompt-lens 128,8192
    bench kimi $mla --config bench/configs/kimi-k2-4-layers.json --draft-config bench/drafts/kimi-k25-eagle3.json \
        --batch-sizes 1,8,64 --prompt-lens 128,8192
done
