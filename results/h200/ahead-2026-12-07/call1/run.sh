# Call 1 (packed at d4cbd61: 69931ff's kernels, the routing's arguments built once (3916071), the L2 check counting the small runs (d4cbd61) with stamps): the stacked shared slices' weights asked of L2 by the
# latent attention's mla_prep_uk blocks while the attention leaves DRAM idle
# (SPECULA_SHARED_AHEAD=gate-up: their gate|up; =all: gate|up and down; routing, the default:
# neither, as 5624166). V2-Lite batch 1/8/32 each way, three times, interleaved; Moonlight once
# each; stamps at batch 1 of routing and all; GPU = CPU greedy and lossless on the sparse
# fixtures with `all`; the kernel checks last (row mla_prep_uk now asks two spans ahead).
#
#   run: timeout 330 bash results/h200/ahead-2026-12-07/call1/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
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
SPECULA_STAMPS=1 SPECULA_SHARED_AHEAD=all bench v2-stamps-all 35 $V2B1
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
export SPECULA_SHARED_AHEAD=all
agree tiny-deepseek-v3 tiny-deepseek-v3
agree tiny-deepseek-v2 tiny-deepseek-v2
unset SPECULA_SHARED_AHEAD
kernel_checks 80 "mla_prep_uk"
