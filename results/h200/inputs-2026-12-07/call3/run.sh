# Call 3 (the pack of call 2, 21c2bd6), on an H100 if no H200 comes: the bench's kernel shares
# beginning at the decode graph's root kernel (V2-Lite batch 1 with stamps: the
# `... + the wait for the next step` row), V2-Lite batch 1/8 again, and the DeepSeek-V3 4-layer
# shape with its SpecForge draft shape (~73 GB of random bf16 weights: batch 64 may not fit).
#
#   run: timeout 200 bash results/h200/inputs-2026-12-07/call3/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=140
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
bench v2 30 $V2 --batch-sizes 1,8
SPECULA_STAMPS=1 bench v2-stamps 25 $V2 --batch-sizes 1
grep -A9 "where a replayed step goes" $R/v2-stamps.log | cut -c1-160
grep wait $R/v2-stamps_kernel_shares_b1_p128.csv
bench v3-4 90 --config bench/configs/deepseek-v3-4-layers.json --draft-config bench/drafts/deepseek-v3-eagle3.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
grep -iE "memory|skipp" $R/v3-4.log | cut -c1-200 | head -5
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
