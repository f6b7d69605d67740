# Call 8: the grouped experts' register form with stages of 4 and 2 chunks (moe_mma4_bf16,
# moe_mma2_bf16: 166 / fewer registers a thread against 255, so more warps an SM; the same
# chunks in the same order), SPECULA_MOE_CHUNKS=8|4|2 (default 8), main at 5200750 + it. Kernel
# checks (new rows: 4 and 2 chunks against 8 bit for bit at V2-Lite's expert shapes), lossless
# with each, then V2-Lite batch 1 / 8 and Moonlight batch 1 with each, interleaved, twice.
set -u
CALL_BUDGET_S=330
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 100 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | head -2; grep -E " false " $R/gpu_check.log | cut -c1-200; grep -E "^moe_mma" $R/gpu_check.log | cut -c1-220
rm -rf $R/check
devrun/bin/specula fixtures random --shape tiny-deepseek-v3 --seed 7 --out $R/fx > /dev/null
for c in 4 2; do
  SPECULA_MOE_CHUNKS=$c timeout 50 devrun/bin/specula gpu agree --target $R/fx/target --draft $R/fx/draft --out $R/agree > $R/agree-$c.log 2>&1
  echo "agree tiny-deepseek-v3 ($c chunks) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-$c.log), false $(grep -c 'lossless false' $R/agree-$c.log)"; rm -rf $R/agree
done
rm -rf $R/fx
for rep in 1 2; do
  for c in 8 4 2; do
    SPECULA_MOE_CHUNKS=$c bench v2lite-$c-$rep 30 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  done
done
for c in 8 4 2; do
  SPECULA_MOE_CHUNKS=$c bench moonlight-$c 30 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
done
call_done
