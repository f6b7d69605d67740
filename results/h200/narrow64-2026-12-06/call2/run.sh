# Call 2 (devrun/bin = 2fc97d5: main's kernels plus the lean forms of the wgmma and tiled linears,
# off unless SPECULA_WG_LEAN=1 / SPECULA_TILES_LEAN=1): the lean forms' checks and lossless runs,
# their bits and cold timings against the first forms at the 8B's 32- and 64-row linears, then
# the 8B decode step at batch 16 / 32 / 64 with and without them, interleaved twice, each alone,
# and both forms with the wide weights at 17-32 rows in the small-row kernel
# (SPECULA_LINEAR_TILES=64, the lead of ../tables-2026-12-06/call3).
set -u
CALL_BUDGET_S=330
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
LEAN="SPECULA_WG_LEAN=1 SPECULA_TILES_LEAN=1"
env $LEAN timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check-lean.log 2>&1; echo "checks (lean) rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check-lean.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check-lean.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/kernel_checks-lean.csv 2>/dev/null; rm -rf $R/check
env $LEAN SPECULA_LINEAR_WG=1 timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama-lean.log 2>&1
echo "agree tiny-llama (lean, every wgmma) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-lean.log) false $(grep -c 'lossless false' $R/agree-llama-lean.log)"; rm -rf $R/agree
env $LEAN SPECULA_LINEAR_TILES=1 timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama-lean-tiles.log 2>&1
echo "agree tiny-llama (lean, tiles past 32 rows) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-lean-tiles.log) false $(grep -c 'lossless false' $R/agree-llama-lean-tiles.log)"; rm -rf $R/agree
ONLY="--only=qkv:32,o:32,down:32,gate_up:32,qkv:64,o:64,down:64,gate_up:64"
for form in first lean; do
  if [ $form = lean ]; then E="$LEAN"; else E="SPECULA_WG_LEAN=0"; fi
  env $E timeout 80 devrun/bin/specula-gpu-check $R/wgt --wgmma-timing $ONLY > $R/wgmma_timing-$form.txt 2>&1; echo "wgmma timing ($form) rc $? at $(el) s"
  grep -E "rows|bits" $R/wgmma_timing-$form.txt | cut -c1-230
  cp $R/wgt/wgmma_timing.csv $R/wgmma_timing-$form.csv 2>/dev/null; rm -rf $R/wgt
done
L8="--config bench/configs/llama-3.1-8b.json --batch-sizes 16,32,64 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  bench l8-first-$rep 40 $L8
  SPECULA_WG_LEAN=1 SPECULA_TILES_LEAN=1 bench l8-lean-$rep 40 $L8
done
SPECULA_WG_LEAN=1 bench l8-wglean 40 $L8
SPECULA_TILES_LEAN=1 bench l8-tileslean 40 $L8
SPECULA_LINEAR_TILES=64 bench l8-first-tiles64 40 $L8
SPECULA_WG_LEAN=1 SPECULA_TILES_LEAN=1 SPECULA_LINEAR_TILES=64 bench l8-lean-tiles64 40 $L8
call_done
