#!/usr/bin/env bash
# A/A experiment of the gate: N+1 runs of bench/sweeps/gate.toml with one
# build, then the gate on each consecutive pair (run i as the baseline,
# run i+1 as the current): N trials of "two runs of the same build".
#
#   bash bench/gate_aa.sh [N=20] [SPECULA=target/debug/specula] [OUT=results/runs/aa]
#
# Prints one line per trial and "A/A: P of N trials passed".
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
bin=${2:-target/debug/specula}
out=${3:-results/runs/aa-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
for i in $(seq 0 "$n"); do
  "$bin" sweep bench/sweeps/gate.toml --quiet --out "$out/run$i" >/dev/null
done
pass=0
for i in $(seq 1 "$n"); do
  if "$bin" gate --baseline "$out/run$((i - 1))" --current "$out/run$i" --markdown "$out/gate$i.md" >/dev/null; then
    pass=$((pass + 1)); echo "trial $i: pass"
  else
    echo "trial $i: exit $? (see $out/gate$i.md)"
  fi
done
echo "A/A: $pass of $n trials passed"
