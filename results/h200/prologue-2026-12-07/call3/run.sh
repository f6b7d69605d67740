# Call 3 (packed at the commit PACKED.txt names): call 2 again with the prologue's norm rebuilt: each thread
# makes its vectors two at a time (every load in flight together), the norm weights asked for
# before the wait, the sums from shared memory. The kernel checks, `gpu agree` on
# the tiny V2 fixture, V2-Lite and Moonlight batch 1 (and V2-Lite batch 8) with the norm in the
# prologue and SPECULA_NORM_IN_LINEAR=0 interleaved, V2-Lite batch 1 stamps.
#
#   run: timeout 300 bash results/h200/prologue-2026-12-07/call3/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=240
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 150 "linear_mma_normed|moe_combine_norm"
agree tiny-deepseek-v2 tiny-deepseek-v2
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
MOON="--config bench/configs/moonlight-16b-a3b.json --repeats 1 --max-new-tokens 32"
bench v2-on 30 $V2 --batch-sizes 1,8
SPECULA_NORM_IN_LINEAR=0 bench v2-off 30 $V2 --batch-sizes 1,8
bench v2-on2 25 $V2 --batch-sizes 1
SPECULA_NORM_IN_LINEAR=0 bench v2-off2 25 $V2 --batch-sizes 1
bench moon-on 25 $MOON --batch-sizes 1
SPECULA_NORM_IN_LINEAR=0 bench moon-off 25 $MOON --batch-sizes 1
bench v2-on3 25 $V2 --batch-sizes 1
SPECULA_NORM_IN_LINEAR=0 bench v2-off3 25 $V2 --batch-sizes 1
SPECULA_STAMPS=1 bench v2-stamps 25 $V2 --batch-sizes 1
head -12 $R/v2-stamps_kernel_shares_b1_p128.csv | cut -d, -f1-6
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
