# Call 17 (packed at 1aa4cf3 with stamps): HEAD's defaults, the latent attention's new tail (W_UV
# in the merge, four outputs a warp, clusters at one row) and a row alone routed by its logit
# blocks as one cluster (moe_route_one), against the first forms and the ticket. The kernel
# checks (moe_route_one and the V2-Lite-sized router among them), GPU = CPU greedy and lossless
# on the sparse fixtures by default; V2-Lite by default / with the ticket / with the first
# forms and the ticket, three times, interleaved, and with SPECULA_MOE_L2=ahead (the grouped experts'
# weights streamed evict-first, the shared slices' down asked of L2 while the routing runs);
# Moonlight the same once; stamps of the default and of L2 ahead.
#
#   run: timeout 380 bash results/h200/step-2026-12-06/call17/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
# The first forms of the latent attention's tail and the ticket (a subshell's exports).
old() { (export SPECULA_MLA_UV=apart SPECULA_MLA_DOTS=1 SPECULA_MLA_MERGE=last SPECULA_ROUTE_ONE=ticket; "$@"); }
kernel_checks 150 "moe_route_one|moe_l2_ahead|mla_cluster_merge|mla_uv_in_merge"
# The pack's default routes a row alone in a cluster (HEAD's is the ticket until this call):
# set here either way.
export SPECULA_ROUTE_ONE=cluster
agree tiny-deepseek-v3 tiny-deepseek-v3
agree tiny-deepseek-v2 tiny-deepseek-v2
unset SPECULA_ROUTE_ONE
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2 3; do
  SPECULA_ROUTE_ONE=cluster bench v2-default-$rep 35 $V2
  SPECULA_ROUTE_ONE=ticket bench v2-ticket-$rep 35 $V2
  old bench v2-old-$rep 35 $V2
  SPECULA_ROUTE_ONE=cluster SPECULA_MOE_L2=ahead bench v2-l2-$rep 35 $V2
done
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32"
SPECULA_ROUTE_ONE=cluster bench moon-default 35 $MOON
old bench moon-old 35 $MOON
SPECULA_ROUTE_ONE=cluster SPECULA_MOE_L2=ahead bench moon-l2 35 $MOON
SPECULA_STAMPS=1 SPECULA_ROUTE_ONE=cluster bench v2-stamps 35 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
SPECULA_STAMPS=1 SPECULA_ROUTE_ONE=cluster SPECULA_MOE_L2=ahead bench v2-stamps-l2 35 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
for f in $R/scaling_v2*.csv $R/scaling_moon*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,15,16,20 | tr '\n' ' ')"; done
