#!/usr/bin/env bash
# The opt-in GPU kernels (issue 18) on a device, before they may become the
# default: every kernel against its CPU reference with both switched on, the
# default path's end-to-end agreement, and the opt-in path's agreement up to
# batch 64 with trees of 16 tokens (1024 verify rows).
#
#   bash scripts/gpu_check_opt_in.sh [OUT=results/h200/opt-in] [BIN=devrun/bin]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/h200/opt-in}
BIN=${2:-devrun/bin}
mkdir -p "$OUT"
. scripts/gpu_env.sh
status=0
echo "== 1. kernel checks, SPECULA_ATTENTION=flash SPECULA_LINEAR_TILES=1"
SPECULA_ATTENTION=flash SPECULA_LINEAR_TILES=1 "$BIN/specula-gpu-check" "$OUT/check" --checks-only \
    > "$OUT/gpu_check.log" 2>&1 || status=1
grep -iE "fail|mismatch|differ|error" "$OUT/gpu_check.log" | grep -v " 0 differ" | head -40
tail -5 "$OUT/gpu_check.log"
echo "== 2. gpu agree on the default path"
"$BIN/specula" gpu agree --out "$OUT/agree-default" > "$OUT/agree_default.log" 2>&1 || status=1
tail -6 "$OUT/agree_default.log"
echo "== 3. gpu agree, opt-in kernels, batch 1,2,4,64"
SPECULA_ATTENTION=flash SPECULA_LINEAR_TILES=1 "$BIN/specula" gpu agree --batch-sizes 1,2,4,64 \
    --out "$OUT/agree-opt-in" > "$OUT/agree_opt_in.log" 2>&1 || status=1
tail -6 "$OUT/agree_opt_in.log"
exit $status
