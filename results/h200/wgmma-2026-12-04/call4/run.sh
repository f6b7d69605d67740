# Call 4 (binaries with six early-transpose layouts timed beside the rest, not picked by default): the wgmma linear where it is faster (WgLaunch::for_shape, the default now) against
# none (SPECULA_LINEAR_WG=0), same run: kernel checks, the timing of every layout, lossless
# with it everywhere (SPECULA_LINEAR_WG=1) on tiny-llama at batch 1 and 64, the 8B step at
# batch 1-64 both ways, then DeepSeek-V3 (4 layers) with its SpecForge draft shape if time is left.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
. scripts/gpu_env.sh
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 220 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "FAIL|passed|NVRTC" $R/gpu_check.log | cut -c1-200 | head -20
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
echo "== wgmma timing"
timeout 150 devrun/bin/specula-gpu-check $R --wgmma-timing > $R/wgmma_timing.log 2>&1; echo "rc $? at $(el) s"
grep -E "gave|differ" $R/wgmma_timing.log
SPECULA_LINEAR_WG=1 timeout 100 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree-llama > $R/agree-llama.log 2>&1; echo "tiny-llama rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log), false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "f32 GPU baseline vs CPU|warning|rror" $R/agree-llama.log | head -3
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 2 --max-new-tokens 64"
for v in 0 by-shape; do
  echo "== Llama-3.1-8B, SPECULA_LINEAR_WG=$v"
  if [ $v = 0 ]; then export SPECULA_LINEAR_WG=0; else unset SPECULA_LINEAR_WG; fi
  timeout 120 $B --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --out $R/l8-$v > $R/l8-$v.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|synthetic|warning|rror" $R/l8-$v.log | cut -c1-200
  for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/l8-$v/$f.csv ] && cp $R/l8-$v/$f.csv $R/${f}_l8_$v.csv; done
  rm -rf $R/l8-$v
done
unset SPECULA_LINEAR_WG
if [ $(el) -lt 380 ]; then
  echo "== DeepSeek-V3 4 layers, SpecForge draft shape, batch 1,8,64 prompt 128"
  timeout $(( 540 - $(el) )) devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 1 --max-new-tokens 32 \
    --config bench/configs/deepseek-v3-4-layers.json --draft-config bench/drafts/deepseek-v3-eagle3.json --batch-sizes 1,8,64 --out $R/v3 > $R/v3.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|synthetic|warning|rror" $R/v3.log | cut -c1-220
  for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/v3/$f.csv ] && cp $R/v3/$f.csv $R/${f}_v3.csv; done
  rm -rf $R/v3
fi
cd $OUT && tar czf r.tgz r && rm -rf r
