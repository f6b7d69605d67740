#!/usr/bin/env bash
# Train models/tiny-deepseek-v3 (issue 16, item 6) on one GPU machine, about 8 minutes wall:
# a DeepseekV3ForCausalLM target trained like models/tiny-llama (same tokenizer, copied; same
# corpus and recipe) and an EAGLE-3 draft on ids [-1, 2, 4] (boundary: the embedding output and
# the residual streams entering layers 2 and 4), the draft of the original incident at small
# scale (trained on [embedding, 3, 31] of a 61-layer target, served [3, 31, 59]).
#
#   bash tools/train/train_deepseek_v3.sh     # results in devrun/dsv3/; the pair: devrun/dsv3/tiny-deepseek-v3
#
# 1. train_target.py --arch deepseek_v3 (hidden 256, 8 layers, MLA q_lora 128 / kv_lora 64,
#    first layer dense, then 8 routed experts (moe_intermediate 128, top-2 of groups 4 / topk_group 2,
#    sigmoid + e_score_correction_bias) + 1 shared expert), cut to TARGET_S seconds of training;
# 2. gen_draft_data.py: the target's greedy continuations of GSM8K train and stdlib code starts;
# 3. train_eagle3.py --ids=-1,2,4 (a Llama draft layer: 8 heads / 2 kv heads, head_dim 32, MLP 768),
#    training ending by START + END_S.
# With $OUT set: the target, draft, reports and logs as $OUT/dsv3.tgz.part-* (15 MB parts: the device
# tool returns files of at most 16 MB; `cat dsv3.tgz.part-* | tar xzf -`).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
T=tools/train
W=devrun/dsv3
M=$W/tiny-deepseek-v3
START=$(date +%s)
TARGET_S=${TARGET_S:-100}
END_S=${END_S:-470}
HARD_S=${HARD_S:-530}
GEN_ARGS=${GEN_ARGS:-"--batch 4096 --max-prompt 320"}
DRAFT_ARGS=${DRAFT_ARGS:-"--steps 100000 --lr 1e-3 --eval-every 400 --val-max 256"}
mkdir -p $W
left() { echo $((START + HARD_S - $(date +%s))); }
pack() {
  if [[ -n "${OUT:-}" ]]; then
    rm -f "$OUT"/dsv3.tgz.part-*
    tar czf - $M $W/*.log 2>/dev/null | split -b 15m - "$OUT/dsv3.tgz.part-" || true
  fi
}
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
timeout $(left) python3 $T/train_target.py --arch deepseek_v3 --tokenizer-from models/tiny-llama \
  --inter 512 --out $M --time-budget $TARGET_S 2>&1 | tee $W/target.log
[[ -s $M/model.safetensors ]] || { echo "[dsv3] no target"; pack; exit 1; }
pack
echo "[dsv3] target at $(( $(date +%s) - START ))s"
timeout $(left) python3 $T/gen_draft_data.py --target $M --out $W/draft_data.pt $GEN_ARGS 2>&1 \
  | grep -v "Loading weights" | tee $W/gen.log
[[ -s $W/draft_data.pt ]] || { echo "[dsv3] no data"; pack; exit 1; }
echo "[dsv3] data at $(( $(date +%s) - START ))s"
timeout $(left) python3 $T/train_eagle3.py --target $M --data $W/draft_data.pt --out $M/eagle3-embed \
  --ids=-1,2,4 --draft-geometry 768,8,2,32 $DRAFT_ARGS --end-at $((START + END_S)) 2>&1 \
  | grep -v "Loading weights" | tee $W/draft.log
pack
echo "[dsv3] done in $(( $(date +%s) - START ))s"
