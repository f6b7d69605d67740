# Call 7: main at 0af0b06 (devrun/new: eight tiles in order, two column tiles a block to 32 rows)
# against 6ae60a1 (devrun/base) in one call: checks, lossless on tiny-llama and on the random
# DeepSeek-V3 and DeepSeek-V2 fixtures, the 8B decode step at batch 1-64 interleaved twice, then
# main alone at prompt 8192 / 32768, batch 128 / 256, and DeepSeek-V2-Lite (both binaries) and
# Moonlight: the issue tables.
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
for d in base new; do for b in specula specula-gpu-check; do gunzip -f devrun/$d/$b.gz; chmod +x devrun/$d/$b; done; done
timeout 120 devrun/new/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
timeout 60 devrun/new/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "agree tiny-llama rc $? true $(grep -c 'lossless true' $R/agree-llama.log) false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "f32 GPU baseline vs CPU" $R/agree-llama.log | head -1; rm -rf $R/agree
for shape in tiny-deepseek-v3 tiny-deepseek-v2; do
  devrun/new/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 60 devrun/new/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-$shape.log), false $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "f32 GPU baseline vs CPU|rror" $R/agree-$shape.log | head -2; rm -rf $R/agree
done
rm -rf $R/fx
for rep in 1 2; do
  for d in base new; do
    cp devrun/$d/specula devrun/bin/specula
    bench l8-$d-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  done
done
for d in base new; do
  cp devrun/$d/specula devrun/bin/specula
  bench v2lite-$d 50 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
done
bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
bench l8-long 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 8192,32768 --repeats 1 --max-new-tokens 32
bench l8-8192-b8 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 32
call_done
