#!/usr/bin/env bash
# Every GPU check and benchmark in one go, on a machine with an NVIDIA GPU
# and no Rust: correctness first, then the benchmarks; CSV under OUT.
#
# Build on any machine (no CUDA needed), then take the binaries along:
#   cargo build --release -p specula --features cuda
#   cargo build --release -p specula-kernels --features cuda --bin specula-gpu-check
#   mkdir -p devrun/bin && cp target/release/{specula,specula-gpu-check} devrun/bin/
#   strip devrun/bin/*
# On the GPU machine, from the repository root:
#   bash scripts/gpu_run_all.sh [OUT_DIR] [BIN_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/h200}
BIN=${2:-devrun/bin}
mkdir -p "$OUT"
# CUDA's driver, NVRTC and cuBLAS (never a stubs/ folder).
. scripts/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

echo "== 1. every kernel against its CPU reference; ceilings; per-kernel times (8B shape)"
"$BIN/specula-gpu-check" "$OUT" | tee "$OUT/gpu_check.log"

echo "== 1b. the warpgroup-mma linear in every layout against the engine's other forms (H100/H200)"
if nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | grep -q '^9\.0'; then
    "$BIN/specula-gpu-check" "$OUT" --wgmma-timing | tee "$OUT/wgmma_timing.log"
fi

echo "== 2. the GPU engine against the CPU engine, and lossless speculative decoding on the GPU"
"$BIN/specula" gpu agree --out "$OUT" | tee "$OUT/agree.log"
echo "== 2a. the same with the wgmma linear on every linear past 8 rows, at batch 1 and 64"
SPECULA_LINEAR_WG=1 "$BIN/specula" gpu agree --batch-sizes 1,64 --out "$OUT/agree-wg" | tee "$OUT/agree-wg.log"
cp "$OUT/agree-wg/agreement.csv" "$OUT/agreement_wg.csv" && rm -rf "$OUT/agree-wg"

echo "== 2b. the same on random Qwen2 and Qwen3 fixtures (q/k/v biases; per-head q/k norms)"
for shape in tiny-qwen2 tiny-qwen3; do
    "$BIN/specula" fixtures random --shape "$shape" --seed 7 --out "$OUT/fixtures/$shape" > /dev/null
    "$BIN/specula" gpu agree --target "$OUT/fixtures/$shape/target" --draft "$OUT/fixtures/$shape/draft" \
        --out "$OUT/agree-$shape" | tee "$OUT/agree-$shape.log"
    cp "$OUT/agree-$shape/agreement.csv" "$OUT/agreement_$shape.csv"
    rm -rf "$OUT/agree-$shape" "$OUT/agree-$shape.log"
done
rm -rf "$OUT/fixtures"

echo "== 3. decode bandwidth and synthetic acceptance on Llama-3.1-8B's shape, random bf16 weights"
"$BIN/specula" gpu bench --config bench/configs/llama-3.1-8b.json --random-weights \
    --batch-sizes 1,4 --steps 5 --topk 1 --synthetic 0.8 --repeats 3 --out "$OUT" | tee "$OUT/bench.log"

echo "== 3b. the same baseline with every forward launched eagerly (no CUDA graphs)"
"$BIN/specula" gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --eager \
    --batch-sizes 1,4 --steps 5 --topk 1 --synthetic 0.8 --repeats 3 --out "$OUT/eager" | tee "$OUT/bench_eager.log"
cp "$OUT/eager/decode_bandwidth.csv" "$OUT/decode_bandwidth_eager.csv"
cp "$OUT/eager/synthetic_speedup.csv" "$OUT/synthetic_speedup_eager.csv"
rm -rf "$OUT/eager"

echo "== 3c. the same with the FMA small-row linear instead of tensor cores (SPECULA_LINEAR=fma)"
SPECULA_LINEAR=fma "$BIN/specula" gpu bench --config bench/configs/llama-3.1-8b.json --random-weights \
    --batch-sizes 1,4 --steps 5 --topk 1 --synthetic 0.8 --repeats 3 --out "$OUT/fma" | tee "$OUT/bench_fma.log"
cp "$OUT/fma/decode_bandwidth.csv" "$OUT/decode_bandwidth_fma.csv"
cp "$OUT/fma/synthetic_speedup.csv" "$OUT/synthetic_speedup_fma.csv"
rm -rf "$OUT/fma"

echo "== 3d. the baseline without programmatic dependent launches (SPECULA_PDL=0)"
SPECULA_PDL=0 "$BIN/specula" gpu bench --config bench/configs/llama-3.1-8b.json --random-weights \
    --batch-sizes 1,4 --repeats 3 --out "$OUT/nopdl" | tee "$OUT/bench_nopdl.log"
cp "$OUT/nopdl/decode_bandwidth.csv" "$OUT/decode_bandwidth_no_pdl.csv"
rm -rf "$OUT/nopdl"

echo "== 4. where a decode forward's time goes (CUDA events between operations; adds small gaps)"
SPECULA_GPU_PROFILE=1 "$BIN/specula" gpu bench --config bench/configs/llama-3.1-8b.json --random-weights \
    --batch-sizes 1 --repeats 1 --out "$OUT/profiled" 2>&1 | grep -A14 "per-forward breakdown, batch 1, baseline" | tee "$OUT/forward_profile.txt"

echo "== 5. the scaling table (batch 1-256 x prompt 128-32768) and the torch.compile anchor"
bash scripts/gpu_run_scaling.sh "$OUT/scaling" "$BIN"

echo "== summary"
cat "$OUT/decode_bandwidth.csv"
cat "$OUT/synthetic_speedup.csv"
