# Call 7 (packed at the commit PACKED.txt names: 223c22a, HEAD's kernels and the bench fix): a
# prompt length past the target's positions is now refused before any device work (Moonlight at
# 8192: call 6 lost its finished 2048 rows), and the tables are written after every case;
# Moonlight at batch 1 and prompts 2048 / 8160 (the longest that fits with 32 new tokens); then
# V2-Lite at prompt 8192 with four heads a latent-attention block (SPECULA_MLA_HEADS=4, from
# the commit after this script's: repack first) against the default's one head a block.
#
#   run: timeout 300 bash results/h200/prologue-2026-12-07/call7/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=250
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1 --repeats 1 --max-new-tokens 32"
bench moon-8192 20 $MOON --prompt-lens 2048,8192
ls $R/moon-8192 2>/dev/null
bench moon-8160 80 $MOON --prompt-lens 2048,8160
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32 --prompt-lens 8192"
bench v2-8192 60 $V2
SPECULA_MLA_HEADS=4 bench v2-8192-h4 60 $V2
for f in $R/scaling_*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,11,16,20 $f; done
