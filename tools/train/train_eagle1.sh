#!/usr/bin/env bash
# Train the EAGLE-1/2 draft (models/tiny-llama/eagle1) against the committed target on one
# GPU machine, about 8 minutes wall:
#
#   bash tools/train/train_eagle1.sh            # results in devrun/eagle1/; the draft: devrun/eagle1/eagle1
#
# 1. gen_draft_data.py with the committed target (the retrain_eagle3.sh recipe with 20 instead
#    of 30 code and def+docstring starts per stdlib file, to save generation time).
# 2. train_eagle1.py, one run per smooth-L1 regression weight in $REGS, in parallel on the one
#    GPU, all ending by START + END_S (--end-at re-fits the step count and the cosine schedule).
# 3. stage 2: the run with regression weight $FT_REG continued alone (lr 1e-3 again, warm-up 50,
#    a new cosine) for FT_S seconds (model loading included) into devrun/eagle1/eagle1; FT_S=0 skips.
# The committed draft was made this way, stage 2 launched as a second command on the saved data
# and stage-1 draft (the same arguments as below).
# With $OUT set: the runs (drafts, reports, logs) as eagle1_runs.tgz and the data (15 MB parts).
# An existing devrun/eagle1/draft_data.pt is reused (no generation).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
T=tools/train
W=devrun/eagle1
START=$(date +%s)
END_S=${END_S:-270}          # training of every run ends by START + END_S
HARD_S=${HARD_S:-330}        # every python process is killed by START + HARD_S
DATA_ARGS=${DATA_ARGS:-"--code-per-file 20 --doc-per-file 20 --max-prompt 320 --batch 8192"}
REGS=${REGS:-"0 0.2 1.0"}
FT_REG=${FT_REG:-1.0}
FT_S=${FT_S:-170}
TRAIN_ARGS=${TRAIN_ARGS:-"--steps 100000 --lr 1e-3 --code-frac 0.55 --eval-every 500"}
mkdir -p $W
left() { echo $((START + HARD_S - $(date +%s))); }
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
DATA=$W/draft_data.pt
GENERATED=0
if [[ -s $DATA ]]; then
  echo "[eagle1] reusing $DATA"
else
  timeout $(left) python3 $T/gen_draft_data.py --out $DATA $DATA_ARGS 2>&1 | grep -v "Loading weights" | tee $W/gen.log
  GENERATED=1
fi
[[ -s $DATA ]] || { echo "[eagle1] no data"; exit 1; }
echo "[eagle1] data ready at $(( $(date +%s) - START ))s"
END_AT=$((START + END_S))
PIDS=()
for r in $REGS; do
  timeout $(left) python3 $T/train_eagle1.py --data $DATA --out $W/reg$r --reg-weight $r $TRAIN_ARGS \
    --end-at $END_AT > $W/reg$r.log 2>&1 &
  PIDS+=($!)
done
for p in "${PIDS[@]}"; do wait $p; echo "[eagle1] pid $p exit $?"; done
for r in $REGS; do
  echo "== reg $r"; grep -E "^(EAGLE|end-at|eval|done|step [0-9]*00 )" $W/reg$r.log | cut -c1-700 || true
  tail -2 $W/reg$r.log
done
if (( FT_S > 0 )) && [[ -s $W/reg$FT_REG/pytorch_model.bin ]]; then
  S2=$(date +%s)
  timeout $((FT_S + 60)) python3 $T/train_eagle1.py --data $DATA --init $W/reg$FT_REG --out $W/eagle1 \
    --reg-weight $FT_REG --lr 1e-3 --warmup 50 --code-frac 0.55 --steps 100000 --eval-every 100000 \
    --end-at $((S2 + FT_S)) 2>&1 | grep -v "Loading weights" > $W/eagle1.log
  echo "== stage 2"; grep -E "^(EAGLE|eval|done)" $W/eagle1.log | cut -c1-900 || tail -3 $W/eagle1.log
fi
if [[ -n "${OUT:-}" ]]; then
  tar czf "$OUT/eagle1_runs.tgz" $W/reg* $W/eagle1 $W/eagle1.log $W/gen.log 2>/dev/null || true
  if [[ $GENERATED == 1 ]]; then split -b 15m $DATA "$OUT/draft_data.pt.part-" || true; fi
fi
echo "[eagle1] done in $(( $(date +%s) - START ))s"
