# Call 18 (the pack of call 17, 1aa4cf3; the 8B's code paths unchanged since 24a096e): issue 18's
# 8B table on an H200 (asked with needs_h200: batch 64 at prompt 8192 needs ~87 GB): batch 1-64
# at prompts 128 and 8192 in one bench, prompt 32768 at batch 1, batch 128 / 256 at prompt 128.
#
#   run: timeout 560 bash results/h200/step-2026-12-06/call18/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=400
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
L8="--config bench/configs/llama-3.1-8b.json --repeats 1"
bench l8-two 300 $L8 --batch-sizes 1,8,16,32,64 --prompt-lens 128,8192 --max-new-tokens 32
grep -E "skipped|sizing|rror" $R/l8-two.log | cut -c1-240
bench l8-32768 80 $L8 --batch-sizes 1 --prompt-lens 32768 --max-new-tokens 16
bench l8-big 60 $L8 --batch-sizes 128,256 --max-new-tokens 16
for f in $R/scaling_l8*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,9,10,11,15,16,20 $f; done
