# Call 12: one call for what is left of calls 10 and 11 when the session's device time allows
# only one (packed at eb51159 as call 10). On an H100: call 10 as it is (issue 16's two new forms,
# the checks, the agreement). On an H200: the kernel checks, V2-Lite by default against both new
# forms (SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4) twice, interleaved, then issue 18's 8B table
# (call 11: batch 1-64 at prompts 128 and 8192, batch 128 / 256, prompt 32768), then Moonlight.
#
#   run: timeout 590 bash results/h200/step-2026-12-06/call12/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash results/h200/step-2026-12-06/call10/run.sh
fi
CALL_BUDGET_S=500
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/check.log 2>&1
echo "check rc $? at $(el) s"
tail -3 $R/check.log
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
grep -v ",true," $R/kernel_checks.csv | head
grep -E "mla_uv_in_merge|mla_prep_uk" $R/kernel_checks.csv | cut -c1-200
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  bench v2-default-$rep 40 $V2
  SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 bench v2-both-$rep 40 $V2
done
L8="--config bench/configs/llama-3.1-8b.json --repeats 1"
bench l8-two 280 $L8 --batch-sizes 1,8,16,32,64 --prompt-lens 128,8192 --max-new-tokens 32
grep -E "skipped|sizing|rror" $R/l8-two.log | cut -c1-240
bench l8-32768 70 $L8 --batch-sizes 1 --prompt-lens 32768 --max-new-tokens 16
bench l8-big 60 $L8 --batch-sizes 128,256 --max-new-tokens 16
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32"
bench moon-default 40 $MOON
SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 bench moon-both 40 $MOON
for f in $R/scaling_*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,9,10,11,15,16 $f; done
call_done
