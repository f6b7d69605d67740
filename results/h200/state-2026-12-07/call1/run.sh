# Call 1 (packed at the commit PACKED.txt names): main at 4350439 (21c94d6 and the spec-run stamps) on whatever card comes
# (an H200 asked first: issue 16's and 18's tables have had none since tables-2026-12-06).
# The kernel checks (484c23a: a row alone runs in its batch's kind of forward, so
# mla_batch_invariant and mla_long_rows must pass again), gpu agree (the tiny V2, the
# 16-head fixture with decode and verify rows on tensor cores from 64 keys), then issue
# 16's tables (V2-Lite batch 1/8/32 at prompt 128, batch 1/8 at 8192; Moonlight 1/8), the
# stamps of a synthetic run (the draft's forwards: 243 us each at V2-Lite batch 1 for ~300 MB of
# weights), and,
# as time allows, issue 18's 8B table.
#
#   run: timeout 560 bash results/h200/state-2026-12-07/call1/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 110 "mla_pairs|mla_split_rule_inv|mla_long_rows|mla_batch_invariant"
agree tiny-deepseek-v2 tiny-deepseek-v2
SPECULA_MLA_LONG=64 agree results/h200/mla-long-2026-12-07/mla16.json mla16-from64
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
bench v2 40 $V2 --batch-sizes 1,8,32
bench v2-8192 70 $V2 --batch-sizes 1,8 --prompt-lens 8192
bench moon 35 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
SPECULA_STAMPS=1 bench v2-stamps 30 $V2 --batch-sizes 1
SPECULA_STAMPS=1 bench l8-stamps 40 --config bench/configs/llama-3.1-8b.json --repeats 1 --max-new-tokens 32 --batch-sizes 1
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
for f in $R/scaling_v2*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,15,16,18,19,20 $f; done
L8="--config bench/configs/llama-3.1-8b.json --repeats 1"
bench l8-two 200 $L8 --batch-sizes 1,8,16,32,64 --prompt-lens 128,8192 --max-new-tokens 32
grep -E "skipped|sizing|rror" $R/l8-two.log | cut -c1-240
for f in $R/scaling_l8*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,9,10,11,15,16,20 $f; done
