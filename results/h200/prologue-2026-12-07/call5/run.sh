# Call 5 (packed at the commit PACKED.txt names): two weight stages asked for before the wait.
# (a) The prologue's projection (SPECULA_NORM_IN_LINEAR=1; now always two stages: every weight of
# a V2-Lite q + kv_a block in flight while it waits and norms). (b) The plain one-tile kernel
# the same way (SPECULA_MMA_EARLY=2, `linear_mma_tile1*_early2`), the norm apart: its blocks
# wait resident through the norm's launch with all their weights in flight. The kernel checks
# (default, and with SPECULA_MMA_EARLY=2: the linear_mma_invariant rows then compare the early2
# kernel with the looped one bit for bit), `gpu agree` on the tiny V2 fixture with each on,
# V2-Lite batch 1 default / norm in prologue / early2 interleaved, Moonlight and the 8B.
#
#   run: timeout 330 bash results/h200/prologue-2026-12-07/call5/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=270
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 150 "linear_mma_normed.*3648"
SPECULA_MMA_EARLY=2 kernel_checks 150 "linear_mma_invariant"
SPECULA_NORM_IN_LINEAR=1 agree tiny-deepseek-v2 tiny-deepseek-v2
SPECULA_MMA_EARLY=2 agree tiny-deepseek-v2 tiny-deepseek-v2-early2
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32 --batch-sizes 1"
MOON="--config bench/configs/moonlight-16b-a3b.json --repeats 1 --max-new-tokens 32 --batch-sizes 1"
L8="--config bench/configs/llama-3.1-8b.json --repeats 1 --max-new-tokens 32 --batch-sizes 1"
for i in 1 2 3; do
    bench v2-off-$i 25 $V2
    SPECULA_NORM_IN_LINEAR=1 bench v2-pro-$i 25 $V2
    SPECULA_MMA_EARLY=2 bench v2-early2-$i 25 $V2
done
bench moon-off 25 $MOON
SPECULA_NORM_IN_LINEAR=1 bench moon-pro 25 $MOON
SPECULA_MMA_EARLY=2 bench moon-early2 25 $MOON
bench l8-off 30 $L8
SPECULA_MMA_EARLY=2 bench l8-early2 30 $L8
SPECULA_MMA_EARLY=2 SPECULA_STAMPS=1 bench v2-stamps 25 $V2
head -12 $R/v2-stamps_kernel_shares_b1_p128.csv | cut -d, -f1-6
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
