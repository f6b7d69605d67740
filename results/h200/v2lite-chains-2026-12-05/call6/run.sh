# Call 6: main after call 5's two reverts (devrun/final, 1f50ca2: the slot table without the first
# row, the latent attention's merge loading its partials after the pairs, and the review's
# cleanup) against main before them (devrun/chains, c140f80): final's kernel checks, lossless and f32 GPU = CPU on tiny-llama and
# the five latent-attention / experts fixtures, then V2-Lite at batch 1, 8, 32 and Moonlight at
# batch 1 interleaved twice, and one profiled V2-Lite batch-1 forward of final.
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
for d in chains final; do for b in specula specula-gpu-check; do [ -f devrun/$d/$b.gz ] && gunzip -f devrun/$d/$b.gz; [ -f devrun/$d/$b ] && chmod +x devrun/$d/$b; done; done
timeout 150 devrun/final/specula-gpu-check $R/check --checks-only > $R/gpu_check-final.log 2>&1; echo "checks (final) rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check-final.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check-final.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/kernel_checks-final.csv 2>/dev/null; rm -rf $R/check
timeout 60 devrun/final/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "agree tiny-llama rc $? true $(grep -c 'lossless true' $R/agree-llama.log) false $(grep -c 'lossless false' $R/agree-llama.log)"; rm -rf $R/agree
devrun/final/specula fixtures random --shape bench/fixtures/mla16.json --seed 7 --out $R/fx/mla16 > /dev/null
for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe mla16; do
  [ -d $R/fx/$shape ] || devrun/final/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 60 devrun/final/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-$shape.log), false $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "f32 GPU baseline vs CPU|rror" $R/agree-$shape.log | head -2; rm -rf $R/agree
done
rm -rf $R/fx
for rep in 1 2; do
  for d in chains final; do
    cp devrun/$d/specula devrun/bin/specula
    bench v2lite-$d-$rep 50 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
    bench moonlight-$d-$rep 30 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
  done
done
cp devrun/final/specula devrun/bin/specula
SPECULA_GPU_PROFILE=1 bench v2lite-prof-final 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 16
call_done
