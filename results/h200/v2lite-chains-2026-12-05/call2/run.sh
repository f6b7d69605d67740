# Ready, not run (written by a session lent no device machine). Carry ["devrun"] with devrun/new
# (main's kernels, 2e6f8ea), devrun/chains (branch v2lite-chains, 30fe1ae) and their two cubins
# (a19690f9351341d2, 9e71f70bbf68684c) in devrun/kernels; see ../README.md for what to stash.
# Call 2: branch v2lite-chains (the grouped experts' slot table, batched tail chunks, the down
# product's output by route and the combine's loads in flight together; the latent attention's
# query staged under its first keys and its merge's partials loaded early; the cache entry's
# loads together; same arithmetic) against main: its kernel checks (the MoE and latent-attention
# rows; a new MoE shape with a whole stage and three chunks past it), lossless and f32 GPU = CPU
# on the five latent-attention / experts fixtures, then DeepSeek-V2-Lite at batch 1, 8, 32
# interleaved twice (main, branch, main, branch) and Moonlight at batch 1 once each; main with
# one column tile a block everywhere (SPECULA_MMA_GROUPS=1) against its default on V2-Lite at
# batch 1 and 8 (the 4096-output rule, unmeasured on V2-Lite); last, one profiled V2-Lite batch-1
# forward each (SPECULA_GPU_PROFILE=1: eager, an event between operations) for the spans.
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
for d in new chains; do for b in specula specula-gpu-check; do [ -f devrun/$d/$b.gz ] && gunzip -f devrun/$d/$b.gz; [ -f devrun/$d/$b ] && chmod +x devrun/$d/$b; done; done
timeout 150 devrun/chains/specula-gpu-check $R/check --checks-only > $R/gpu_check-chains.log 2>&1; echo "checks (chains) rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check-chains.log | cut -c1-200 | head -4; grep -E " false |^moe|^mla" $R/gpu_check-chains.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/kernel_checks-chains.csv 2>/dev/null; rm -rf $R/check
devrun/chains/specula fixtures random --shape bench/fixtures/mla16.json --seed 7 --out $R/fx/mla16 > /dev/null
for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe mla16; do
  [ -d $R/fx/$shape ] || devrun/chains/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 60 devrun/chains/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-$shape.log), false $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "f32 GPU baseline vs CPU|rror" $R/agree-$shape.log | head -2; rm -rf $R/agree
done
rm -rf $R/fx
for rep in 1 2; do
  for d in new chains; do
    cp devrun/$d/specula devrun/bin/specula
    bench v2lite-$d-$rep 50 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
  done
done
for d in new chains; do
  cp devrun/$d/specula devrun/bin/specula
  bench moonlight-$d 30 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
done
cp devrun/new/specula devrun/bin/specula
for rep in 1 2; do
  for g in default 1; do
    if [ $g = 1 ]; then export SPECULA_MMA_GROUPS=1; else unset SPECULA_MMA_GROUPS; fi
    bench v2lite-groups-$g-$rep 30 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  done
done
unset SPECULA_MMA_GROUPS
for d in new chains; do
  cp devrun/$d/specula devrun/bin/specula
  SPECULA_GPU_PROFILE=1 bench v2lite-prof-$d 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 16
done
call_done
