#!/usr/bin/env bash
# Call 5 as run on the GPU machine from the repo root (OUT set by the device runner): the tiles lab
# with the lean kernel's dependents launched from its start (/0) or after its k loop (/1): the
# per-launch table with bit checks, then the decode step's linears in a graph.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/tiles_lab kernels/lab/tiles_lab.cu -lcuda 2>/dev/null || exit 1
/tmp/tiles_lab chain > $OUT/chain.txt; rc1=$?
/tmp/tiles_lab > $OUT/tiles_lab.txt; rc=$?
wc -l $OUT/chain.txt
tail -1 $OUT/tiles_lab.txt
exit $((rc | rc1))
