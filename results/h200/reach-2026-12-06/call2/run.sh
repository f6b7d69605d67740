# Call 2: two changes against 20826c0 (devrun/base): o past 96 rows on the wgmma layout 2x64
# with a producer (call 1: 34.4 against 50.6 us at 128 rows, 68.7 against 131.7 at 384), and the
# routed down product reading its slot and first weights before waiting on the gate|up launch
# (devrun/bin). Checks and lossless runs of the new binary, then the 8B at batch 32 / 64 (its
# verify: 192 / 384 rows) and 128 / 256, and V2-Lite / Moonlight at batch 1 and 8, interleaved.
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
for d in base bin; do cat devrun/$d/PACKED.txt; done
gunzip -f devrun/base/*.gz; chmod +x devrun/base/*
cp devrun/bin/specula devrun/new-specula
timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-220; cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,16,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "agree tiny-llama rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log) false $(grep -c 'lossless false' $R/agree-llama.log)"; rm -rf $R/agree
for shape in tiny-deepseek-v3 tiny-qwen3-moe; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 60 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-$shape.log), false $(grep -c 'lossless false' $R/agree-$shape.log)"; grep -iE "f32 GPU baseline" $R/agree-$shape.log | head -1; rm -rf $R/agree
done
rm -rf $R/fx
for rep in 1 2; do
  for d in base new; do
    if [ $d = base ]; then cp devrun/base/specula devrun/bin/specula; else cp devrun/new-specula devrun/bin/specula; fi
    bench v2lite-$d-$rep 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
    bench l8-$d-$rep 45 --config bench/configs/llama-3.1-8b.json --batch-sizes 32,64 --repeats 1 --max-new-tokens 32
    bench l8-big-$d-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
  done
done
cp devrun/new-specula devrun/bin/specula
bench moonlight-new 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
cp devrun/base/specula devrun/bin/specula
bench moonlight-base 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
cp devrun/new-specula devrun/bin/specula
call_done
