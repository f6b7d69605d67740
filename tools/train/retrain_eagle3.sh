#!/usr/bin/env bash
# Retrain only the `eagle3` draft (ids [2,4,5]) against the committed target, with more
# code data; one GPU machine, about 7 minutes wall. The target, tokenizer, goldens and
# eagle3-embed are not touched; the candidates land in devrun/retrain/ (not in models/).
#
#   bash tools/train/retrain_eagle3.sh
#
# 1. gen_draft_data.py with the committed target: every GSM8K train question, up to 30
#    code starts per stdlib file (was 10) and up to 30 def+docstring starts per file
#    (new: the function's signature and whole docstring, sometimes after a few of the
#    file's imports, so the continuation is a function body), prompts up to 320 tokens.
# 2. two candidates in parallel until END_S seconds after the start:
#    A  from scratch, draft vocab from gsm8k/code token frequencies weighted equally,
#       55% of the generated rows code;
#    C  starts from the committed eagle3 (its weights and vocab), lr 5e-4, same data mix.
#    and the committed draft evaluated on the same new validation sets.
# With $OUT set: log, the candidates (drafts.tgz) and the data (15 MB parts) go there.
# Reads datasets/public/gsm8k_train.jsonl; devrun/draft_data.pt (the old data) is the fallback
# if generation fails. An existing devrun/retrain/draft_data_v2.pt is reused (no generation).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
T=tools/train
M=models/tiny-llama
W=devrun/retrain
START=$(date +%s)
END_S=${END_S:-400}          # training of both candidates ends by START + END_S
HARD_S=${HARD_S:-450}        # every python process is killed by START + HARD_S
DATA_ARGS=${DATA_ARGS:-"--code-per-file 30 --doc-per-file 30 --max-prompt 320 --batch 8192"}
A_ARGS=${A_ARGS:-"--steps 100000 --lr 1e-3 --vocab-balance --code-frac 0.55"}
C_ARGS=${C_ARGS:-"--steps 100000 --lr 5e-4 --warmup 50 --init $M/eagle3 --code-frac 0.55"}
COMMON_ARGS=${COMMON_ARGS:-"--eval-every 500"}
mkdir -p $W
left() { echo $((START + HARD_S - $(date +%s))); }

pack() {
  if [[ -n "${OUT:-}" ]]; then
    tar czf "$OUT/drafts.tgz" $W/A $W/C $W/*.log 2>/dev/null || true
    echo "[retrain] packed at $(( $(date +%s) - START ))s"
  fi
}

DATA=$W/draft_data_v2.pt
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
GENERATED=0
if [[ -s $DATA ]]; then
  echo "[retrain] reusing $DATA (made by an earlier run of this script with the same target)"
else
  timeout $(left) python3 $T/gen_draft_data.py --out $DATA $DATA_ARGS 2>&1 | grep -v "Loading weights" | tee $W/gen.log
  GENERATED=1
fi
if [[ ! -s $DATA ]]; then
  echo "[retrain] generation failed: falling back to devrun/draft_data.pt"
  DATA=devrun/draft_data.pt
fi
echo "[retrain] data ready at $(( $(date +%s) - START ))s"
END_AT=$((START + END_S))
timeout $(left) python3 $T/train_eagle3.py --data $DATA --out $W/A $A_ARGS $COMMON_ARGS --end-at $END_AT > $W/A.log 2>&1 &
PA=$!
timeout $(left) python3 $T/train_eagle3.py --data $DATA --out $W/C $C_ARGS $COMMON_ARGS --end-at $END_AT > $W/C.log 2>&1 &
PC=$!
if [[ ${EVAL_COMMITTED:-1} == 1 ]]; then
  timeout $(left) python3 $T/train_eagle3.py --data $DATA --out $W/X --init $M/eagle3 --eval-only > $W/committed_eval.log 2>&1 || true
  grep -h "^eval" $W/committed_eval.log || tail -5 $W/committed_eval.log
fi
wait $PA; echo "[retrain] A exit $?"
wait $PC; echo "[retrain] C exit $?"
for v in A C; do
  echo "== $v"; grep -E "^(layer|draft|end-at|eval|done|step [0-9]*000 )" $W/$v.log | cut -c1-900 || true
  tail -3 $W/$v.log
done
pack
if [[ -n "${OUT:-}" && $GENERATED == 1 && -s $W/draft_data_v2.pt ]]; then
  split -b 15m $W/draft_data_v2.pt "$OUT/draft_data_v2.pt.part-" || true
fi
echo "[retrain] done in $(( $(date +%s) - START ))s"
