# Call 15 (packed at 2a46ec6, as call 14): call 14 cut to ~250 s, for what device time is left.
# V2-Lite batch 1 by default against the three new forms of the latent attention's tail together
# (SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 SPECULA_MLA_MERGE=cluster), twice, interleaved; the
# cluster merge alone and the other two alone once; GPU = CPU greedy and lossless on the tiny
# DeepSeek-V3 fixture with all three; the kernel checks last.
#
#   run: timeout 250 bash results/h200/step-2026-12-06/call15/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=200
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
new() { (export SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 SPECULA_MLA_MERGE=cluster; "$@"); }
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  bench v2-default-$rep 30 $V2
  new bench v2-all-$rep 30 $V2
done
SPECULA_MLA_MERGE=cluster bench v2-cluster 30 $V2
SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 bench v2-uvdots 30 $V2
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
new agree tiny-deepseek-v3 tiny-deepseek-v3-new
kernel_checks 100 "mla_uv_in_merge|mla_prep_uk|mla_cluster_merge"
call_done
