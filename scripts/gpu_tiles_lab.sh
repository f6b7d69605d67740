#!/usr/bin/env bash
# The tiles lab on the GPU machine (kernels/lab/tiles_lab.cu): builds it and
# the rows lab with nvcc (no Rust needed), prints the registers and spills
# of the tiled layouts, runs the per-launch checks and table, then the
# decode step's linears in a CUDA graph. Output under $OUT (or /tmp/tiles_lab_out).
#
#   bash scripts/gpu_tiles_lab.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tiles_lab_out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt"
nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/rows_lab kernels/lab/rows_lab.cu -lcuda || echo "rows_lab does not build"
if ! nvcc -O3 -std=c++17 -arch=sm_90a -Xptxas -v -o /tmp/tiles_lab kernels/lab/tiles_lab.cu -lcuda 2> "$out/ptxas.txt"; then
  grep -v "^ptxas info" "$out/ptxas.txt" | head -40
  exit 1
fi
awk '/Compiling entry function/ {match($0, /'"'"'[^'"'"']*'"'"'/); f=substr($0, RSTART+1, RLENGTH-2)}
     /bytes stack frame/ {sp=$0; sub(/.*: /, "", sp)}
     /Used [0-9]+ registers/ && f ~ /lab_(tiles|lean)|linear_(tiles|mma)/ {match($0, /Used [0-9]+ registers/); print f ": " substr($0, RSTART, RLENGTH) "; " sp}' \
  "$out/ptxas.txt" | sort -u > "$out/registers.txt"
/tmp/tiles_lab | tee "$out/tiles_lab.txt"
rc=${PIPESTATUS[0]}
/tmp/tiles_lab chain | tee "$out/chain.txt"
exit "$rc"
