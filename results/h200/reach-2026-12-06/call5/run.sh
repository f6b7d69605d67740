# Call 5: the grouped experts' operands staged in shared memory by cp.async (moe_staged.cu: the
# same chunks and mma steps as the register form, STAGES - 1 stages in flight a warp at no
# register cost; SPECULA_MOE_STAGED=8x4|4x6|4x4 chunks a stage x stages, default 0: the register
# form), main at 93efb42 + it. Kernel checks (the new rows moe_staged: each staged form against
# the register form bit for bit at V2-Lite's expert shapes, 1 / 8 / 64 rows), lossless runs with
# each staged form, then V2-Lite batch 1 / 8 and Moonlight batch 1 with each form, interleaved.
set -u
CALL_BUDGET_S=540
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed|ceilings" $R/gpu_check.log | cut -c1-200 | head -3; grep -E " false " $R/gpu_check.log | cut -c1-220; grep -E "^moe_staged" $R/gpu_check.log | cut -c1-240
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
devrun/bin/specula fixtures random --shape tiny-deepseek-v3 --seed 7 --out $R/fx > /dev/null
for f in 8x4 4x6 4x4; do
  SPECULA_MOE_STAGED=$f timeout 60 devrun/bin/specula gpu agree --target $R/fx/target --draft $R/fx/draft --out $R/agree > $R/agree-$f.log 2>&1
  echo "agree tiny-deepseek-v3 ($f) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-$f.log), false $(grep -c 'lossless false' $R/agree-$f.log)"; grep -iE "f32 GPU baseline" $R/agree-$f.log | head -1; rm -rf $R/agree
done
rm -rf $R/fx
for rep in 1 2; do
  for f in 0 8x4 4x6 4x4; do
    SPECULA_MOE_STAGED=$f bench v2lite-$f-$rep 30 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  done
done
for f in 0 8x4 4x6 4x4; do
  SPECULA_MOE_STAGED=$f bench moonlight-$f 30 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
done
if grep -q H200 $R/card.txt; then
  # The issues' card: their tables too (main's default forms).
  bench l8 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
  bench l8-8192 150 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
  bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
  bench v2lite-b32 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 32 --repeats 1 --max-new-tokens 32
  bench moonlight-b8 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 8 --repeats 1 --max-new-tokens 32
fi
call_done
