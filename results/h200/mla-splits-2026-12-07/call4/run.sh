# Call 4 (packed at the commit PACKED.txt names): the tensor-core latent attention two rows a
# block (SPECULA_MLA_PAIRS, default on): a verify's rows of one sequence stage each chunk of their
# cached prefix once. Kernel checks (mla_pairs: a chain, tree siblings and an unshared pair under
# three split rules, each row against the row alone, bit for bit; the tensor-core rows of
# mla_batch_invariant and mla_split_rule_invariant, whose batches now run in pairs); the latent
# attention alone, pairs on and off; gpu agree (the tiny V2; the 16-head fixture with decode and
# verify rows on tensor cores from 64 keys); V2-Lite batch 1/8 at 8192, pairs on and off.
#
#   run: timeout 260 bash results/h200/mla-splits-2026-12-07/call4/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=200
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 100 "mla_pairs|mla_split_rule_inv|mla_long_rows|mla_batch_invariant.*tensor"
for pairs in 1 0; do
    SPECULA_MLA_PAIRS=$pairs timeout 60 devrun/bin/specula-gpu-check "$R/mt" --mla-timing > "$R/mla_timing_pairs$pairs.log" 2>&1
    echo "mla timing pairs=$pairs rc $? at $(el) s"
    cp "$R/mt/mla_times.csv" "$R/mla_times_pairs$pairs.csv" 2>/dev/null; rm -rf "$R/mt"
done
paste -d' ' <(grep -E "^(fma|mma/128x1) " $R/mla_timing_pairs1.log | cut -c1-60) <(grep -E "^(fma|mma/128x1) " $R/mla_timing_pairs0.log | awk '{print $5}')
agree tiny-deepseek-v2 tiny-deepseek-v2
SPECULA_MLA_LONG=64 agree results/h200/mla-long-2026-12-07/mla16.json mla16-from64
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32 --batch-sizes 1,8 --prompt-lens 8192"
bench v2 70 $V2
SPECULA_MLA_PAIRS=0 bench v2-nopairs 70 $V2
for f in $R/scaling_v2*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,15,16,18,19,20 $f; done
