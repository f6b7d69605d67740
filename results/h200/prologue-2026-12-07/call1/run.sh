# Call 1 (packed at the commit PACKED.txt names): the input norm in the q + kv_a projection's
# prologue at one row (SPECULA_NORM_IN_LINEAR, default on; 0 = the norm's own launch). The
# kernel checks (linear_mma_normed: fused vs apart bit for bit, every delta and block size),
# `gpu agree` on the tiny V2 and V3 fixtures (bf16 lossless at batch 1 compares the baseline's
# one-row decode, which takes the prologue, with the verify's rows, which do not), then V2-Lite
# and Moonlight batch 1 / 8, on and off interleaved, and V2-Lite batch 1 stamps.
#
#   run: timeout 420 bash results/h200/prologue-2026-12-07/call1/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=330
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 150 "linear_mma_normed"
agree tiny-deepseek-v2 tiny-deepseek-v2
agree tiny-deepseek-v3 tiny-deepseek-v3
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
MOON="--config bench/configs/moonlight-16b-a3b.json --repeats 1 --max-new-tokens 32"
bench v2-on 30 $V2 --batch-sizes 1,8
SPECULA_NORM_IN_LINEAR=0 bench v2-off 30 $V2 --batch-sizes 1,8
bench v2-on2 25 $V2 --batch-sizes 1
SPECULA_NORM_IN_LINEAR=0 bench v2-off2 25 $V2 --batch-sizes 1
bench moon-on 30 $MOON --batch-sizes 1,8
SPECULA_NORM_IN_LINEAR=0 bench moon-off 30 $MOON --batch-sizes 1,8
SPECULA_STAMPS=1 bench v2-stamps 25 $V2 --batch-sizes 1
head -12 $R/v2-stamps_kernel_shares_b1_p128.csv | cut -d, -f1-6
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
