#!/usr/bin/env bash
# Packs what a device call carries (the device machine has no Rust): this checkout's `specula`
# and `specula-gpu-check` (release, feature cuda), stripped and gzipped into devrun/DIR, and
# their kernels compiled for sm_90a by NVRTC here into devrun/kernels (the cubin cache the
# binaries read on the device through SPECULA_KERNEL_CACHE, so no compile costs device time);
# devrun/DIR/PACKED.txt names the commit and the cubin. devrun/ is git-ignored: name it in the
# device call's `carry`. A binary finds only the cubin of its own kernel source: pack every
# binary a call compares (e.g. DIR=old from a worktree of the base commit, same devrun).
#
#   NVRTC=<dir of libnvrtc.so> [STAMPS=1] bash scripts/devrun_pack.sh [DIR=bin] [DEVRUN=devrun]
#
# STAMPS=1 also packs the cubin that SPECULA_STAMPS=1 runs read (the kernels with wait-return
# stamps: docs/DESIGN.md 7.12), another minute here instead of ~90 s of device time.
#
# libnvrtc without a GPU: PyPI's wheel (13.0 matches the H200 machine's CUDA):
#   pip download --no-deps -d /tmp/nvrtc "nvidia-cuda-nvrtc==13.0.*"
#   unzip -q -o /tmp/nvrtc/nvidia_cuda_nvrtc-*.whl -d /tmp/nvrtc/w  # NVRTC=/tmp/nvrtc/w/nvidia/cu13/lib
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-bin}
DEVRUN=$(realpath -m "${2:-devrun}")
: "${NVRTC:?set NVRTC to the directory holding libnvrtc.so (see the comment at the top)}"
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release --features cuda
mkdir -p "$DEVRUN/$DIR" "$DEVRUN/kernels"
for b in specula specula-gpu-check; do
    cp "$TARGET/release/$b" "$DEVRUN/$DIR/$b"
    strip "$DEVRUN/$DIR/$b"
    gzip -f "$DEVRUN/$DIR/$b"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LD_LIBRARY_PATH=$NVRTC "$TARGET/release/specula-gpu-check" "$tmp" --compile-only --arch=sm_90a
cubin=$(basename "$(ls "$tmp"/*.cubin)")
gzip -c "$tmp/$cubin" > "$DEVRUN/kernels/$cubin.gz"
if [ "${STAMPS:-0}" = 1 ]; then
    rm -f "$tmp"/*.cubin
    SPECULA_STAMPS=1 LD_LIBRARY_PATH=$NVRTC "$TARGET/release/specula-gpu-check" "$tmp" --compile-only --arch=sm_90a
    stamped=$(basename "$(ls "$tmp"/*.cubin)")
    gzip -c "$tmp/$stamped" > "$DEVRUN/kernels/$stamped.gz"
    cubin="$cubin (stamps: $stamped)"
fi
rev=$(git rev-parse --short HEAD)
git diff --quiet HEAD || rev="$rev+uncommitted"
echo "$(date -u +%FT%TZ) $(git branch --show-current) $rev cubin $cubin" > "$DEVRUN/$DIR/PACKED.txt"
cat "$DEVRUN/$DIR/PACKED.txt"
echo "cubins in $DEVRUN/kernels (a binary reads only its own; remove the stale ones):"
ls -1 "$DEVRUN/kernels"
du -sh "$DEVRUN"
