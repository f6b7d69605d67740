# Call 19 (packed at HEAD's defaults: the latent attention's new tail, the one-row cluster
# routing, the shared slices' down from L2 where every expert fits one slot): HEAD with no switch
# set against the first forms (W_UV apart, last block, one output a warp, the ticket, no L2
# form), twice, interleaved, on V2-Lite; Moonlight once each; GPU = CPU greedy and lossless on
# the sparse fixtures with the defaults; stamps of the default at batch 1.
#
#   run: timeout 170 bash results/h200/step-2026-12-06/call19/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=120
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
old() { (export SPECULA_MLA_UV=apart SPECULA_MLA_DOTS=1 SPECULA_MLA_MERGE=last SPECULA_ROUTE_ONE=ticket SPECULA_MOE_L2=off; "$@"); }
agree tiny-deepseek-v3 tiny-deepseek-v3
agree tiny-deepseek-v2 tiny-deepseek-v2
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  bench v2-default-$rep 35 $V2
  old bench v2-old-$rep 35 $V2
done
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32"
bench moon-default 35 $MOON
old bench moon-old 35 $MOON
SPECULA_STAMPS=1 bench v2-stamps 35 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
for f in $R/scaling_v2*.csv $R/scaling_moon*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,15,16,20 | tr '\n' ' ')"; done
