#!/usr/bin/env bash
# Call 6 as run on the GPU machine from the repo root (OUT set by the device runner): the rows
# lab built with nvcc, `rows_lab profile-narrow` under Nsight Compute, the summary lines printed.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/rows_lab kernels/lab/rows_lab.cu -lcuda || exit 1
timeout 300 ncu --clock-control none -k regex:'linear_mma' \
  --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats \
  /tmp/rows_lab profile-narrow > $OUT/ncu_narrow.txt 2>&1
grep -E "^  linear_|Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Grid Size|Block Size|Registers Per|Stall Long|Stall Short|Warp Cycles Per Issued|lg_throttle|long_scoreboard" $OUT/ncu_narrow.txt | head -150
