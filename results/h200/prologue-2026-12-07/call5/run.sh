# Call 5 (packed at the commit PACKED.txt names): the prologue's projection asks for both of its
# weight stages before the wait (a V2-Lite q + kv_a block's every weight in flight while it waits
# and norms), now opt-in (SPECULA_NORM_IN_LINEAR=1; the default keeps the norm's launch). The
# kernel checks, `gpu agree` on the tiny V2 fixture with it on, V2-Lite batch 1 on and off
# interleaved three times, Moonlight batch 1, V2-Lite batch 1 stamps with it on.
#
#   run: timeout 300 bash results/h200/prologue-2026-12-07/call5/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=240
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 150 "linear_mma_normed.*3648"
SPECULA_NORM_IN_LINEAR=1 agree tiny-deepseek-v2 tiny-deepseek-v2
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32 --batch-sizes 1"
MOON="--config bench/configs/moonlight-16b-a3b.json --repeats 1 --max-new-tokens 32 --batch-sizes 1"
for i in 1 2 3; do
    SPECULA_NORM_IN_LINEAR=1 bench v2-on-$i 25 $V2
    bench v2-off-$i 25 $V2
done
SPECULA_NORM_IN_LINEAR=1 bench moon-on 25 $MOON
bench moon-off 25 $MOON
SPECULA_NORM_IN_LINEAR=1 SPECULA_STAMPS=1 bench v2-stamps 25 $V2
head -12 $R/v2-stamps_kernel_shares_b1_p128.csv | cut -d, -f1-6
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
