# Call 6 (packed at the commit PACKED.txt names: the kernels of 1883d4f), a short H200 call for the
# last device time of the session of 2026-12-07 from 09:36 UTC (needs_h200): V2-Lite and Moonlight
# at batch 1 (issue 16's goal, last measured on an H200 at 24a096e), then issue 18's 8B table at
# prompts 128 and 8192, batch 1-64 in one bench (batch 64 at 8192 needs ~87 GB).
#
#   run: timeout 300 bash results/h200/inputs-2026-12-07/call6/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=200
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
bench v2 25 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
bench moon 25 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
bench l8-two 230 --config bench/configs/llama-3.1-8b.json --repeats 1 --batch-sizes 1,8,16,32,64 --prompt-lens 128,8192 --max-new-tokens 32
for f in $R/scaling_*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,11,16,20 $f; done
