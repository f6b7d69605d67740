#!/usr/bin/env bash
# The per-shape linear rule (MmaForm::for_shape) against the rule before it
# (SPECULA_LINEAR_TILES=64: the small-row kernel to 64 rows, tiles above) in
# one run: kernel checks, lossless agreement up to batch 64 with trees of 16
# tokens, and the decode / synthetic-speedup bench at batch 1-64 for each rule
# (Llama-3.1-8B shape, random weights). Binaries (gzipped or not) in BIN.
#
#   bash scripts/gpu_rows_rule.sh [OUT=results/h200/rows-rule] [BIN=devrun/bin]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/h200/rows-rule}
BIN=${2:-devrun/bin}
mkdir -p "$OUT"
for f in "$BIN"/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x "$BIN"/* 2>/dev/null
. scripts/gpu_env.sh
status=0
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks (default rule)"
timeout 150 "$BIN/specula-gpu-check" "$OUT/check" --checks-only > "$OUT/gpu_check.log" 2>&1 || status=1
grep -iE "fail|error" "$OUT/gpu_check.log" | head -20; tail -2 "$OUT/gpu_check.log"; echo "at $(el) s"
echo "== gpu agree, batch 1,2,4,64 (default rule)"
timeout 200 "$BIN/specula" gpu agree --batch-sizes 1,2,4,64 --out "$OUT/agree" > "$OUT/agree.log" 2>&1 || status=1
echo "lossless true: $(grep -c 'lossless true' "$OUT/agree.log"), false: $(grep -c 'lossless false' "$OUT/agree.log")"
tail -3 "$OUT/agree.log"; echo "at $(el) s"
B="$BIN/specula gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 1 --max-new-tokens 64 --batch-sizes 1,8,16,32,64 --prompt-lens 128"
for rule in shape 64 shape2; do
    v=""; [ "$rule" = 64 ] && v=64
    echo "== bench, rule $rule"
    SPECULA_LINEAR_TILES=$v timeout 200 $B --out "$OUT/bench-$rule" > "$OUT/bench-$rule.log" 2>&1 || status=1
    cat "$OUT/bench-$rule/scaling.csv" 2>/dev/null | cut -d, -f1-12; echo "at $(el) s"
done
exit $status
