# Call 2 (packed at dd19460 with stamps): call 1's comparison with the shared slices' weights
# asked of L2 by the latent attention's W_UV-merging blocks (after their wait) instead of
# mla_prep_uk's. V2-Lite batch 1/8/32 routing / gate-up / all, three times, interleaved;
# Moonlight once each; stamps at batch 1 of the three; GPU = CPU greedy and lossless on the
# sparse fixtures with `all`; the kernel checks (the attention forms' rows ask two spans ahead).
#
#   run: timeout 330 bash results/h200/ahead-2026-12-07/call2/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=230
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2 3; do
  SPECULA_SHARED_AHEAD=routing bench v2-routing-$rep 35 $V2
  SPECULA_SHARED_AHEAD=gate-up bench v2-gate-up-$rep 35 $V2
  SPECULA_SHARED_AHEAD=all bench v2-all-$rep 35 $V2
done
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32"
SPECULA_SHARED_AHEAD=routing bench moon-routing 35 $MOON
SPECULA_SHARED_AHEAD=gate-up bench moon-gate-up 35 $MOON
SPECULA_SHARED_AHEAD=all bench moon-all 35 $MOON
V2B1="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32"
SPECULA_STAMPS=1 SPECULA_SHARED_AHEAD=routing bench v2-stamps-routing 35 $V2B1
SPECULA_STAMPS=1 SPECULA_SHARED_AHEAD=gate-up bench v2-stamps-gate-up 35 $V2B1
SPECULA_STAMPS=1 SPECULA_SHARED_AHEAD=all bench v2-stamps-all 35 $V2B1
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
for f in $R/*kernel_shares*.csv; do echo "== $(basename $f)"; head -6 $f | cut -d, -f1,2,6; grep mla_ $f | cut -d, -f1,2,6; done
export SPECULA_SHARED_AHEAD=all
agree tiny-deepseek-v3 tiny-deepseek-v3
agree tiny-deepseek-v2 tiny-deepseek-v2
unset SPECULA_SHARED_AHEAD
kernel_checks 80 "^none$"
