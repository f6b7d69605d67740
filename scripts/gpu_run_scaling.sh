#!/usr/bin/env bash
# The GPU engine across the batch sizes and prompt lengths users run (issue
# 18's scaling table), beside the same-run anchor: transformers' decode step
# of the same shape under torch.compile (reduce-overhead: CUDA graphs).
# Llama-3.1-8B's shape, random bf16 weights on the device; CSV under OUT.
#
#   bash scripts/gpu_run_scaling.sh [OUT=results/h200/scaling] [BIN=devrun/bin] [ATTENTION=flash|flash-prefill|split]
#
# OUT/scaling.csv: one row per (batch, prompt length): decode step, bytes
# read (weights + KV), fraction of copy, TFLOP/s against the GEMM ceiling,
# prefill ms and tokens/s, device memory, synthetic 0.8 speedup / ideal,
# verify over decode. OUT/long/: prompts 16384 and 32768 at batch 1.
# OUT/torch_anchor.csv: the anchor's decode step at batch 1, 8, 64.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/h200/scaling}
BIN=${2:-devrun/bin}
export SPECULA_ATTENTION=${3:-${SPECULA_ATTENTION:-flash}}
mkdir -p "$OUT"
. scripts/gpu_env.sh
echo "== attention: $SPECULA_ATTENTION"
echo "== scaling: batch 1-64 x prompt 128-8192, then batch 128 and 256 at prompt 128"
"$BIN/specula" gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet \
    --batch-sizes 1,8,16,32,64 --prompt-lens 128,2048,8192 --max-new-tokens 64 \
    --steps 5 --topk 1 --synthetic 0.8 --repeats 1 --out "$OUT" 2>&1 | tee "$OUT/bench.log"
"$BIN/specula" gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet \
    --batch-sizes 128,256 --prompt-lens 128 --max-new-tokens 64 \
    --steps 5 --topk 1 --synthetic 0.8 --repeats 1 --out "$OUT/wide" 2>&1 | tee "$OUT/bench_wide.log"
echo "== long prompts at batch 1 (prefill memory: device_used_bytes)"
"$BIN/specula" gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet \
    --batch-sizes 1 --prompt-lens 16384,32768 --max-new-tokens 32 \
    --steps 5 --topk 1 --synthetic 0.8 --repeats 1 --out "$OUT/long" 2>&1 | tee "$OUT/bench_long.log"
echo "== anchor: transformers + torch.compile, same shape"
python3 tools/gpu/torch_decode_anchor.py --config bench/configs/llama-3.1-8b.json \
    --batch-sizes 1,8,64 --prompt-lens 128 --out "$OUT/torch_anchor.csv" 2>&1 | tee "$OUT/anchor.log"
cat "$OUT/scaling.csv" "$OUT/wide/scaling.csv" "$OUT/long/scaling.csv" "$OUT/torch_anchor.csv"
