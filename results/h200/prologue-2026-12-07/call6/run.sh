# Call 6 (packed at the commit PACKED.txt names: HEAD's kernels, as at 1883d4f): HEAD's MoE
# figures beyond prompt 128 on an H100 (no H200 lent): V2-Lite and Moonlight at batch 1 / 8
# and prompts 2048 / 8192 (the staged inputs and argmax chunks were only measured at prompt 128).
#
#   run: timeout 200 bash results/h200/prologue-2026-12-07/call6/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=170
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
bench v2-long 80 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --prompt-lens 2048,8192 --repeats 1 --max-new-tokens 32
bench moon-long 80 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --prompt-lens 2048,8192 --repeats 1 --max-new-tokens 32
for f in $R/scaling_*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,11,16,18,19,20 $f; done
