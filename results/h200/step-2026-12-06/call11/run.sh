# Call 11: issue 18's table on the card the issue names (an H200), with HEAD's defaults: the 8B
# at batch 1-64 and prompts 128 and 8192 in one bench (batch 64 at 8192 needs ~87 GB: it runs
# only on the 141 GB card), batch 128 / 256, prompt 32768 at batch 1; then V2-Lite and Moonlight
# by default on the same card (issue 16's figures were all an H100's). If an H100 comes, only
# the MoE rows run (the 8B's table on an H100 is reach-2026-12-06's).
#
#   run: timeout 590 bash results/h200/step-2026-12-06/call11/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
L8="--config bench/configs/llama-3.1-8b.json --repeats 1"
if grep -q H200 "$R/card.txt"; then
  bench l8-two 280 $L8 --batch-sizes 1,8,16,32,64 --prompt-lens 128,8192 --max-new-tokens 32
  grep -E "skipped|sizing|rror" $R/l8-two.log | cut -c1-240
  bench l8-big 60 $L8 --batch-sizes 128,256 --max-new-tokens 16
  bench l8-32768 70 $L8 --batch-sizes 1 --prompt-lens 32768 --max-new-tokens 16
fi
bench v2-default 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
bench moon-default 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
for f in $R/scaling_*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,9,10,11,15,16 $f; done
for f in $R/synthetic_speedup_*.csv; do echo "== $(basename $f)"; head -20 $f | cut -c1-160; done
call_done
