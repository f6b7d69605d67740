# Call 13: calls 10-12 cut to what ~450 s of device time can hold (packed at eb51159 as call 10).
# On an H200: issue 18's 8B table first (batch 1-64 at prompts 128 and 8192 in one bench, batch
# 64 at 8192 on the 141 GB card; prompt 32768; batch 128 / 256), then what is left of the time
# for issue 16's two new forms. On an H100: issue 16's two new forms only (the kernel checks,
# GPU = CPU greedy and lossless on the sparse fixtures with both, V2-Lite by default against
# both twice, interleaved, their stamps, Moonlight).
#
#   run: timeout 450 bash results/h200/step-2026-12-06/call13/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=400
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
if grep -q H200 "$R/card.txt"; then
  L8="--config bench/configs/llama-3.1-8b.json --repeats 1"
  bench l8-two 260 $L8 --batch-sizes 1,8,16,32,64 --prompt-lens 128,8192 --max-new-tokens 32
  grep -E "skipped|sizing|rror" $R/l8-two.log | cut -c1-240
  bench l8-32768 60 $L8 --batch-sizes 1 --prompt-lens 32768 --max-new-tokens 16
  bench l8-big 50 $L8 --batch-sizes 128,256 --max-new-tokens 16
  for f in $R/scaling_*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,9,10,11,15,16 $f; done
fi
if [ "$(el)" -lt 300 ]; then
  timeout 120 devrun/bin/specula-gpu-check $R/check --checks-only > $R/check.log 2>&1
  echo "check rc $? at $(el) s"
  tail -3 $R/check.log
  cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
  grep -v ",true," $R/kernel_checks.csv | head
  grep -E "mla_uv_in_merge|mla_prep_uk" $R/kernel_checks.csv | cut -c1-200
fi
if [ "$(el)" -lt 330 ]; then
  for shape in tiny-deepseek-v3 tiny-deepseek-v2; do
    devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
    SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 timeout 40 devrun/bin/specula gpu agree --target $R/fx/$shape/target \
      --draft $R/fx/$shape/draft --out $R/agree-$shape-new > $R/agree-$shape-new.log 2>&1
    echo "agree $shape new rc $? at $(el) s"; tail -4 $R/agree-$shape-new.log | cut -c1-200
    cp $R/agree-$shape-new/agreement.csv $R/agreement_$shape-new.csv 2>/dev/null; rm -rf $R/agree-$shape-new
  done
  rm -rf $R/fx
fi
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  bench v2-default-$rep 35 $V2
  SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 bench v2-both-$rep 35 $V2
done
SPECULA_MLA_UV=merge bench v2-uvmerge 35 $V2
SPECULA_STAMPS=1 SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 bench v2-stamps-both 35 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32"
bench moon-default 35 $MOON
SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 bench moon-both 35 $MOON
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
call_done
