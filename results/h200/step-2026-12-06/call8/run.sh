# Call 8: the stacked layout with the shared slices' gate|up run beside the routing. Call 7's
# Nsight Compute run put the routing launch's time in its last block: ~1100 instructions of one
# warp after the other (route the row, count, prefix, slots, pairs) at ~12 cycles each, with the
# SMs otherwise idle. Beside, the shared experts' gate|up (side stream) ran under it; stacked,
# nothing did. Now the plan puts the shared slices' slots first (fixed: slice j's pairs j * rows..)
# and the grouped gate|up's blocks for them start before waiting on the routing. Here: the kernel
# checks (the stacked shared slices against the CPU and across row counts; the norm in the
# routing, where the early start must stay off), GPU greedy = CPU greedy and lossless with the
# shared experts stacked on two sparse fixtures, then beside against stacked, V2-Lite batch 1 / 8 /
# 32 interleaved twice, Moonlight batch 1 / 8, stamps of stacked at batch 1. devrun/bin is the
# early shared gate|up alone (dfe4be2), devrun/bin2 (17302f3) adds one row's plan by the routing
# warp alone (no count / prefix / layout passes in the routing's last block); the checks, the
# agreement and the stamps run bin2.
set -u
CALL_BUDGET_S=420
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt devrun/bin2/PACKED.txt
timeout 150 devrun/bin2/specula-gpu-check $R/check --checks-only > $R/check.log 2>&1
echo "check rc $? at $(el) s"
tail -3 $R/check.log
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
grep -v ",true," $R/kernel_checks.csv | head
for shape in tiny-deepseek-v3 tiny-deepseek-v2; do
  devrun/bin2/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  SPECULA_SHARED=stacked timeout 60 devrun/bin2/specula gpu agree --target $R/fx/$shape/target \
    --draft $R/fx/$shape/draft --out $R/agree-$shape > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s"; tail -4 $R/agree-$shape.log | cut -c1-200
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv 2>/dev/null; rm -rf $R/agree-$shape
done
rm -rf $R/fx
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  SPECULA_SHARED=beside bench v2-beside-$rep 40 $V2
  SPECULA_SHARED=stacked bench v2-stacked-$rep 40 $V2
  SPECULA_BIN=devrun/bin2/specula SPECULA_SHARED=beside bench v2-beside-onerow-$rep 40 $V2
  SPECULA_BIN=devrun/bin2/specula SPECULA_SHARED=stacked bench v2-stacked-onerow-$rep 40 $V2
done
export SPECULA_BIN=devrun/bin2/specula
SPECULA_STAMPS=1 SPECULA_SHARED=stacked bench v2-stamps-stacked 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
SPECULA_SHARED=beside bench moon-beside 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
SPECULA_SHARED=stacked bench moon-stacked 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
for f in $R/*_kernel_shares_b1_p128.csv; do echo "== $(basename $f)"; head -12 $f | cut -d, -f1-6; done
if grep -q H200 "$R/card.txt"; then
  CALL_BUDGET_S=300
  bench l8-1 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
  bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
  bench l8-8192 150 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
fi
call_done
