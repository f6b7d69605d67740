# Ready, not run (this session's device time was spent): devrun/new holds 2e6f8ea (main's kernels),
# devrun/three ad0e8cd (branch tree-stages3). Trimmed on 2026-12-05 (session from 20:55 UTC): the
# DeepSeek-V2-Lite / Moonlight / 8B runs of 6ae60a1 against main moved to
# ../../v2lite-chains-2026-12-05/call2 (main with SPECULA_MMA_GROUPS=1 there stands for the
# one-column-tile layout), so devrun/base is no longer carried.
# Call 8: the 8B with eight tiles for every weight at 33-64 rows (SPECULA_MMA_EIGHT_TILES=all, in
# stream order: gate|up, qkv and the LM head too) against the default, interleaved twice at batch
# 8 (verify of 48 rows) and 64; and the tree attention / the wgmma and tiled linears launched in
# stream order (SPECULA_IN_ORDER). Last, branch tree-stages3 (devrun/three: the tree attention
# with three stages of tiles, SPECULA_TREE_STAGES=3, compiled and never run): its checks,
# tiny-llama lossless with three stages, and the 8B at batch 8 and 64 interleaved twice: main /
# that branch's default (is its two-stage path as fast?) / three stages.
set -u
CALL_BUDGET_S=330
. scripts/gpu_call.sh
for d in new three; do gunzip -f devrun/$d/specula.gz; chmod +x devrun/$d/specula; done
gunzip -f devrun/three/specula-gpu-check.gz; chmod +x devrun/three/specula-gpu-check
for sw in SPECULA_MMA_EIGHT_TILES=all SPECULA_IN_ORDER=tree,sliced; do
  env $sw timeout 60 devrun/new/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-${sw%%=*}.log 2>&1
  echo "agree $sw rc $? true $(grep -c 'lossless true' $R/agree-${sw%%=*}.log) false $(grep -c 'lossless false' $R/agree-${sw%%=*}.log)"; rm -rf $R/agree
done
cp devrun/new/specula devrun/bin/specula
for rep in 1 2; do
  for r in narrow all; do
    SPECULA_MMA_EIGHT_TILES=$r bench l8-eight-$r-$rep 30 --config bench/configs/llama-3.1-8b.json --batch-sizes 8,64 --repeats 1 --max-new-tokens 32
  done
  for o in tree sliced; do
    SPECULA_IN_ORDER=$o bench l8-order-$o-$rep 30 --config bench/configs/llama-3.1-8b.json --batch-sizes 8,64 --repeats 1 --max-new-tokens 32
  done
done
timeout 120 devrun/three/specula-gpu-check $R/check --checks-only > $R/gpu_check-three.log 2>&1; echo "checks (three) rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check-three.log | head -3; grep -E "attention_tree_stages| false " $R/gpu_check-three.log | cut -c1-200
cp $R/check/kernel_checks.csv $R/kernel_checks-three.csv 2>/dev/null; rm -rf $R/check
SPECULA_TREE_STAGES=3 timeout 60 devrun/three/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-three.log 2>&1
echo "agree three stages rc $? true $(grep -c 'lossless true' $R/agree-three.log) false $(grep -c 'lossless false' $R/agree-three.log)"; rm -rf $R/agree
for rep in 1 2; do
  for c in new/auto three/auto three/3; do
    cp devrun/${c%/*}/specula devrun/bin/specula
    if [ ${c#*/} = 3 ]; then export SPECULA_TREE_STAGES=3; else unset SPECULA_TREE_STAGES; fi
    bench l8-${c%/*}-s${c#*/}-$rep 30 --config bench/configs/llama-3.1-8b.json --batch-sizes 8,64 --repeats 1 --max-new-tokens 32
  done
done
unset SPECULA_TREE_STAGES
call_done
