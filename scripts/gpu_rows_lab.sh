#!/usr/bin/env bash
# The rows lab on the GPU machine (kernels/lab/rows_lab.cu): builds it with
# nvcc (no Rust needed), prints the registers and spills of the linear
# kernels, runs the checks and timing table, and profiles one launch of each
# form at 64 and 384 rows with Nsight Compute. Output under $OUT (or /tmp/rows_lab_out).
#
#   bash scripts/gpu_rows_lab.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/rows_lab_out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt"
if ! nvcc -O3 -std=c++17 -arch=sm_90a -Xptxas -v -o /tmp/rows_lab kernels/lab/rows_lab.cu -lcuda 2> "$out/ptxas.txt"; then
  grep -v "^ptxas info" "$out/ptxas.txt" | head -40
  exit 1
fi
# entry name, registers, spills
awk '/Compiling entry function/ {match($0, /'"'"'[^'"'"']*'"'"'/); f=substr($0, RSTART+1, RLENGTH-2)}
     /bytes stack frame/ {sp=$0; sub(/.*: /, "", sp)}
     /Used [0-9]+ registers/ && f ~ /linear_(stream|tiles|mma)/ {match($0, /Used [0-9]+ registers/); print f ": " substr($0, RSTART, RLENGTH) "; " sp}' \
  "$out/ptxas.txt" | sort -u | tee "$out/registers.txt"
/tmp/rows_lab | tee "$out/rows_lab.txt"
rc=${PIPESTATUS[0]}
if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  timeout 240 ncu --clock-control none -k regex:'linear_(tiles|stream|mma)' \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \
    /tmp/rows_lab profile > "$out/ncu.txt" 2>&1
  grep -E "^  linear_|Duration|Memory Throughput|Compute \(SM\) Throughput|DRAM Throughput|Achieved Occupancy|Stall|L1/TEX Hit|Registers Per" "$out/ncu.txt" | head -120
fi
exit "$rc"
