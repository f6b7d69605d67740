#!/usr/bin/env bash
# Call 2 as run on the GPU machine from the repo root (OUT set by the device runner): the tiles lab's
# hot-spot probe (`tiles_lab hotspot`: the small kernel and the 64-column tile reading 1, 4 or 16
# copies of the token rows), then one launch of each at 64 rows of qkv under Nsight Compute.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/tiles_lab kernels/lab/tiles_lab.cu -lcuda || exit 1
/tmp/tiles_lab hotspot | tee $OUT/hotspot.txt
timeout 300 ncu --clock-control none -k regex:'lab_rep' \
  --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats --section SchedulerStats \
  /tmp/tiles_lab profile > $OUT/ncu_hotspot.txt 2>&1
grep -E "^  lab_|Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Warp Cycles Per Issued|Issued Warp|No Eligible" $OUT/ncu_hotspot.txt | head -120
