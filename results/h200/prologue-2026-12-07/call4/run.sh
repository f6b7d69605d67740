# Call 4 (packed at the commit PACKED.txt names): the prologue's projection asks L2 for its
# block's weights in one bulk prefetch before the wait (SPECULA_NORM_IN_LINEAR=1, the default),
# against call 3's form (=registers: the first stage's weights into registers before the wait,
# which the norm's loads then returned behind) and the norm's own launch (=0). The kernel
# checks, `gpu agree` on the tiny V2 fixture, V2-Lite and Moonlight batch 1 interleaved, V2-Lite
# batch 1 stamps.
#
#   run: timeout 300 bash results/h200/prologue-2026-12-07/call4/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=240
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 150 "linear_mma_normed.*3648"
agree tiny-deepseek-v2 tiny-deepseek-v2
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32 --batch-sizes 1"
MOON="--config bench/configs/moonlight-16b-a3b.json --repeats 1 --max-new-tokens 32 --batch-sizes 1"
for i in 1 2; do
    bench v2-l2-$i 25 $V2
    SPECULA_NORM_IN_LINEAR=registers bench v2-reg-$i 25 $V2
    SPECULA_NORM_IN_LINEAR=0 bench v2-off-$i 25 $V2
done
bench moon-l2 25 $MOON
SPECULA_NORM_IN_LINEAR=0 bench moon-off 25 $MOON
SPECULA_STAMPS=1 bench v2-stamps 25 $V2
head -12 $R/v2-stamps_kernel_shares_b1_p128.csv | cut -d, -f1-6
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
