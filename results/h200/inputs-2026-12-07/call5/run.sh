# Call 5 (the pack of call 2, 21c2bd6), asked for an H200 with the session's last device time
# (call 2 no longer fits it): HEAD on the H200 for V2-Lite batch 1/8/32 and Moonlight batch 1/8
# (issue 16's goal; last measured on an H200 at 24a096e: 52%), and the 8B at batch 1-64 at
# prompt 128 (issue 18's table's first column).
#
#   run: timeout 230 bash results/h200/inputs-2026-12-07/call5/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=170
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
bench v2 35 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
bench moon 35 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
bench l8 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,9,17 | tr '\n' ' ')"; done
