# Call 3b (call 3's binaries, right after it): V2-Lite under SPECULA_MLA_SPLITS=128 (one chunk a
# split up to 128 splits, then 128 splits) at batch 1/8 and prompts 512/2048/8192, beside call 3's
# 128x2 and 32; Moonlight batch 1 at 8160 (its 8192 positions) under 128x2, 128 and 32.
#
#   run: timeout 300 bash results/h200/mla-splits-2026-12-07/call3b/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=260
. scripts/gpu_call.sh
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
SPECULA_MLA_SPLITS=128 bench v2-128 110 $V2 --batch-sizes 1,8 --prompt-lens 512,2048,8192
cut -d, -f1,2,4,7,11,15,16,20 $R/scaling_v2-128.csv
MOON="--config bench/configs/moonlight-16b-a3b.json --repeats 1 --max-new-tokens 32 --batch-sizes 1 --prompt-lens 8160"
bench moon 40 $MOON
SPECULA_MLA_SPLITS=128 bench moon-128 40 $MOON
SPECULA_MLA_SPLITS=32 bench moon-32 40 $MOON
for f in $R/scaling_moon*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,2,4,7,11,15,16,20 | tr '\n' ' ')"; done
