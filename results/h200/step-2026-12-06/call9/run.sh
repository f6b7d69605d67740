# Call 9: HEAD with the shared experts stacked by default (no SPECULA_* switches set), to confirm
# what call 8 measured under SPECULA_SHARED=stacked: the kernel checks, GPU greedy = CPU greedy
# and lossless on the two random sparse fixtures (the trained tiny DeepSeek-V3 pair is not
# carried: too big for the call), then V2-Lite batch 1 / 8 / 32 by default and with
# SPECULA_SHARED=beside, interleaved, and Moonlight batch 1 / 8 by default. On an H200, the
# 8B's decode table at prompt 128 after (issue 18).
set -u
CALL_BUDGET_S=200
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 100 devrun/bin/specula-gpu-check $R/check --checks-only > $R/check.log 2>&1
echo "check rc $? at $(el) s"
tail -1 $R/check.log
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
for shape in tiny-deepseek-v3 tiny-deepseek-v2; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 60 devrun/bin/specula gpu agree --target $R/fx/$shape/target \
    --draft $R/fx/$shape/draft --out $R/agree-$shape > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s"; grep -E "CPU engine|lossless" $R/agree-$shape.log | grep -c "true\|identical"
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv 2>/dev/null; rm -rf $R/agree-$shape
done
rm -rf $R/fx
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
bench v2-default-1 40 $V2
SPECULA_SHARED=beside bench v2-beside-1 40 $V2
bench v2-default-2 40 $V2
bench moon-default 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
if grep -q H200 "$R/card.txt"; then
  CALL_BUDGET_S=260
  bench l8-1 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
fi
call_done
