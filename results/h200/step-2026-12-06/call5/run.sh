# Call 5: main at a213338 (SPECULA_SHARED=stacked, SPECULA_ROUTE_NORM=fused). Call 4's stamps put
# V2-Lite's batch-1 experts region (norm to combine) at ~62 us a layer against ~46 at copy, the
# routing and the routed experts waiting on the side stream's shared experts for SM slots. First
# the kernel checks (the stacked shared slices against the CPU and their bits across row counts;
# the routing with the post-attention norm against the norm apart) and GPU greedy = CPU greedy
# with the shared experts stacked and the norm in the routing on two sparse fixtures; then the
# shared experts beside (side stream, the default), stacked with the routed experts (one grouped
# gate|up and one grouped down a layer), and stacked with the norm in the routing, interleaved
# twice: V2-Lite batch 1 / 8 / 32; between (main stream) once; stacked with an expert's pairs in
# one block (SPECULA_MOE_SLOT=off); stamps of stacked + fused; Moonlight beside / stacked + fused.
set -u
CALL_BUDGET_S=500
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/check.log 2>&1
echo "check rc $? at $(el) s"
grep -iE "moe|passed|failed|checks" $R/check.log | tail -30
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
for shape in tiny-deepseek-v3 tiny-deepseek-v2; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  SPECULA_SHARED=stacked SPECULA_ROUTE_NORM=fused timeout 60 devrun/bin/specula gpu agree --target $R/fx/$shape/target \
    --draft $R/fx/$shape/draft --out $R/agree-$shape > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s"; tail -4 $R/agree-$shape.log | cut -c1-200
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv 2>/dev/null; rm -rf $R/agree-$shape
done
rm -rf $R/fx
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  SPECULA_SHARED=beside bench v2-beside-$rep 40 $V2
  SPECULA_SHARED=stacked bench v2-stacked-$rep 40 $V2
  SPECULA_SHARED=stacked SPECULA_ROUTE_NORM=fused bench v2-fused-$rep 40 $V2
done
SPECULA_SHARED=between bench v2-between 40 $V2
SPECULA_SHARED=stacked SPECULA_ROUTE_NORM=fused SPECULA_MOE_SLOT=off bench v2-fused-slotoff 40 $V2
SPECULA_STAMPS=1 SPECULA_SHARED=stacked SPECULA_ROUTE_NORM=fused bench v2-stamps-fused 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
SPECULA_SHARED=beside bench moon-beside 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
SPECULA_SHARED=stacked SPECULA_ROUTE_NORM=fused bench moon-fused 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
call_done
