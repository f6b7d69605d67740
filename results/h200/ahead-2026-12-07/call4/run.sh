# Call 4 (the pack of call 3, 5f17efc), on an H100 with the session's last device time: the
# DeepSeek-V3 4-layer shape with its SpecForge draft shape at HEAD's defaults (~73 GB of random
# bf16 weights: the 80 GB card may not hold batch 64), and V2-Lite batch 1 in the same run.
#
#   run: timeout 150 bash results/h200/ahead-2026-12-07/call4/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=100
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
bench v2 30 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
bench v3-4 90 --config bench/configs/deepseek-v3-4-layers.json --draft-config bench/drafts/deepseek-v3-eagle3.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
grep -iE "memory|skipp" $R/v3-4.log | cut -c1-200 | head -5
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
