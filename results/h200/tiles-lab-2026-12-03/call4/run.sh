#!/usr/bin/env bash
# Call 4 as run on the GPU machine from the repo root (OUT set by the device runner): the tiles lab
# with the lean tiled kernel loading its mma operands through volatile shared loads: registers, the per-launch table with bit checks, the
# decode step's linears in a graph, and Nsight Compute of each 64-token layout at 64 rows of qkv.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=$OUT bash scripts/gpu_tiles_lab.sh > $OUT/log.txt 2>&1; rc=$?
grep -E "^qkv|^o |^down|^gate_up" $OUT/tiles_lab.txt | grep -E "mma|engine|lean" | head -150
tail -1 $OUT/tiles_lab.txt
grep -E "engine|lean" $OUT/chain.txt | head -80
timeout 200 ncu --clock-control none -k regex:'lab_(tiles|lean)_64x64' \
  --section SpeedOfLight --section SchedulerStats --section Occupancy --section InstructionStats \
  /tmp/tiles_lab profile-layouts > $OUT/ncu_layouts.txt 2>&1
grep -E "^  lab_|Duration|DRAM Throughput|Executed Instructions  |Issued Warp Per|Achieved Active Warps" $OUT/ncu_layouts.txt | head -60
exit $rc
