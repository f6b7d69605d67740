#!/usr/bin/env bash
# The GPU checks and benchmarks of the latent-attention / mixture-of-experts
# family (DeepSeek-V2/V3, Kimi-K2.5's wrapper, Qwen3-MoE) in one go, on a
# machine with an NVIDIA GPU and no Rust; CSV and logs under OUT.
#
# Build on any machine (no CUDA needed), then take the binaries along:
#   cargo build --release -p specula --features cuda
#   cargo build --release -p specula-kernels --features cuda --bin specula-gpu-check
# On the GPU machine, from the repository root:
#   bash scripts/gpu_run_sparse.sh [OUT_DIR] [BIN_DIR] [STAGES]
# STAGES: any of "checks agree bench" (default all three).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/h200}
BIN=${2:-devrun/bin}
STAGES=${3:-checks agree bench}
mkdir -p "$OUT"
. scripts/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
status=0

if [[ " $STAGES " == *" checks "* ]]; then
    echo "== 1. every kernel against its CPU reference (latent attention and experts included)"
    mkdir -p "$OUT/checks"
    "$BIN/specula-gpu-check" "$OUT/checks" --checks-only | tee "$OUT/gpu_check_sparse.log" || status=1
    cp "$OUT/checks/kernel_checks.csv" "$OUT/kernel_checks_sparse.csv"
    rm -rf "$OUT/checks"
fi

if [[ " $STAGES " == *" agree "* ]]; then
    echo "== 2. GPU greedy = CPU greedy (f32), lossless speculative decoding on the GPU (f32, bf16)"
    # agree NAME TARGET DRAFT: the agreement run, its log and CSV as NAME
    # (skipped with a line when TARGET is not here: a device call whose tree
    # is near the carry limit may leave the trained model behind).
    agree() {
        if [ ! -d "$2" ]; then echo "== $1: $2 is not here, skipped"; return; fi
        "$BIN/specula" gpu agree --target "$2" --draft "$3" --out "$OUT/agree-$1" 2>&1 \
            | tee "$OUT/agree-$1.log" || status=1
        cp "$OUT/agree-$1/agreement.csv" "$OUT/agreement_$1.csv" || status=1
        rm -rf "$OUT/agree-$1"
    }
    # Random fixtures of each sparse shape, and one of 16 query heads per
    # latent (the tiny shapes have 2-4); then the trained pairs.
    for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe bench/fixtures/mla16.json; do
        name=$(basename "$shape" .json)
        "$BIN/specula" fixtures random --shape "$shape" --seed 7 --out "$OUT/fixtures/$name" > /dev/null
        agree "$name" "$OUT/fixtures/$name/target" "$OUT/fixtures/$name/draft"
    done
    rm -rf "$OUT/fixtures"
    agree tiny-llama models/tiny-llama models/tiny-llama/eagle3
    agree tiny-deepseek-v3-trained models/tiny-deepseek-v3 models/tiny-deepseek-v3/eagle3-embed
fi

if [[ " $STAGES " == *" bench "* ]]; then
    echo "== 3. decode bandwidth and synthetic acceptance, random bf16 weights"
    for model in deepseek-v2-lite moonlight-16b-a3b; do
        "$BIN/specula" gpu bench --config "bench/configs/$model.json" --random-weights \
            --batch-sizes 1,8,32 --steps 5 --topk 1 --synthetic 0.8 --repeats 3 --out "$OUT/$model" \
            2>&1 | tee "$OUT/bench_$model.log" || status=1
        for f in decode_bandwidth synthetic_speedup spans; do
            cp "$OUT/$model/$f.csv" "$OUT/${f}_$model.csv" || status=1
        done
        rm -rf "$OUT/$model"
    done
    if [ -n "${PROFILE:-}" ]; then
        SPECULA_GPU_PROFILE=1 "$BIN/specula" gpu bench --config bench/configs/deepseek-v2-lite.json --random-weights \
            --batch-sizes 1 --repeats 1 --max-new-tokens 32 --out "$OUT/profiled" 2>&1 \
            | grep -A24 "per-forward breakdown, batch 1, baseline" | tee "$OUT/forward_profile_deepseek-v2-lite.txt" || true
        rm -rf "$OUT/profiled"
    fi
fi
exit $status
