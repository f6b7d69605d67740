# Call 15 (packed at e632bef, as call 14): call 14 cut to ~250 s, for what device time is left.
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
devrun/bin/specula fixtures random --shape tiny-deepseek-v3 --seed 7 --out $R/fx > /dev/null
new timeout 40 devrun/bin/specula gpu agree --target $R/fx/target --draft $R/fx/draft --out $R/agree-new > $R/agree-new.log 2>&1
echo "agree new rc $? at $(el) s"; tail -4 $R/agree-new.log | cut -c1-200
cp $R/agree-new/agreement.csv $R/agreement_tiny-deepseek-v3-new.csv 2>/dev/null; rm -rf $R/agree-new $R/fx
timeout 100 devrun/bin/specula-gpu-check $R/check --checks-only > $R/check.log 2>&1
echo "check rc $? at $(el) s"
tail -3 $R/check.log
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
grep -v ",true," $R/kernel_checks.csv | head
grep -E "mla_uv_in_merge|mla_prep_uk|mla_cluster_merge" $R/kernel_checks.csv | cut -c1-220
call_done
