# Call 1: main as it stands (devrun/bin = 24a096e, whose kernels are 1f50ca2's, cubin
# a01eddb724b1294f): the kernel checks, `gpu agree` lossless and f32 GPU = CPU on tiny-llama and
# the five latent-attention / experts fixtures (main's kernels as a whole had not run on a GPU);
# then branch l2-hint (devrun/hint, ecfe7c4: every weight load of the linears and the grouped
# experts asks L2 for the 256-byte span around it, `ld.global.L2::256B` / `cp.async ...
# L2::256B`; same arithmetic) against main, the 8B at batch 1, 8, 64 and V2-Lite at batch 1,
# once each; last, l2-hint's kernel checks and tiny-llama lossless.
set -u
CALL_BUDGET_S=250
. scripts/gpu_call.sh
for d in bin hint; do cat devrun/$d/PACKED.txt; done
gunzip -f devrun/hint/specula.gz devrun/hint/specula-gpu-check.gz; chmod +x devrun/hint/*
cp devrun/bin/specula devrun/main-specula
timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "agree tiny-llama rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log) false $(grep -c 'lossless false' $R/agree-llama.log)"; rm -rf $R/agree
devrun/bin/specula fixtures random --shape bench/fixtures/mla16.json --seed 7 --out $R/fx/mla16 > /dev/null
for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe mla16; do
  [ -d $R/fx/$shape ] || devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 60 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-$shape.log), false $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "f32 GPU baseline vs CPU|rror" $R/agree-$shape.log | head -2; rm -rf $R/agree
done
rm -rf $R/fx
for rep in 1; do
  for d in main hint; do
    if [ $d = main ]; then cp devrun/main-specula devrun/bin/specula; else cp devrun/hint/specula devrun/bin/specula; fi
    bench l8-$d-$rep 45 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
    bench v2lite-$d-$rep 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
  done
done
cp devrun/main-specula devrun/bin/specula
if [ "$(el)" -lt 200 ]; then
  timeout 120 devrun/hint/specula-gpu-check $R/check --checks-only > $R/gpu_check-hint.log 2>&1; echo "checks (hint) rc $? at $(el) s"
  grep -E "FAIL|passed" $R/gpu_check-hint.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check-hint.log | cut -c1-220
  rm -rf $R/check
  timeout 60 devrun/hint/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama-hint.log 2>&1
  echo "agree tiny-llama (hint) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-hint.log) false $(grep -c 'lossless false' $R/agree-llama-hint.log)"; rm -rf $R/agree
fi
call_done
