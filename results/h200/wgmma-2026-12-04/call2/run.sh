# Call 2: the warpgroup-mma linear (linear_wg.cu, engine compiled for sm_90a), binaries of the
# commit that adds it. Kernel checks (its bits against the small-row kernel's rows alone and
# every batch, in every layout); its timing in every layout against the engine's form per
# Llama-3.1-8B projection at 16-384 rows (cold weights); lossless agreement with it switched
# on (SPECULA_LINEAR_WG=1) on tiny-llama at batch 1 and 64 and a random DeepSeek-V3 fixture;
# the 8B decode step at batch 1-64 with it off and on, same run.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
. scripts/gpu_env.sh
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 200 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "FAIL|passed|linear_wg" $R/gpu_check.log | cut -c1-200 | head -20
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
echo "== wgmma timing"
timeout 150 devrun/bin/specula-gpu-check $R --wgmma-timing > $R/wgmma_timing.log 2>&1; echo "rc $? at $(el) s"
grep -vE "^(device|wgmma linear)" $R/wgmma_timing.log | head -70
echo "== agree with wgmma"
devrun/bin/specula fixtures random --shape tiny-deepseek-v3 --seed 7 --out $R/fx > /dev/null
SPECULA_LINEAR_WG=1 timeout 100 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree-llama > $R/agree-llama.log 2>&1; echo "tiny-llama rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log), false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "vs CPU|warning|rror" $R/agree-llama.log | head -3
SPECULA_LINEAR_WG=1 timeout 100 devrun/bin/specula gpu agree --target $R/fx/target --draft $R/fx/draft --out $R/agree-v3 > $R/agree-v3.log 2>&1; echo "tiny-v3 rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-v3.log), false $(grep -c 'lossless false' $R/agree-v3.log)"
grep -iE "vs CPU|warning|rror" $R/agree-v3.log | head -3
rm -rf $R/fx
B="devrun/bin/specula gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 2 --max-new-tokens 64"
for v in 0 1; do
  if [ $(el) -gt 440 ]; then echo "== wg=$v skipped at $(el) s"; continue; fi
  echo "== Llama-3.1-8B, SPECULA_LINEAR_WG=$v"
  SPECULA_LINEAR_WG=$v timeout 150 $B --batch-sizes 1,8,16,32,64 --out $R/l8-wg$v > $R/l8-wg$v.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|synthetic|warning|rror" $R/l8-wg$v.log | cut -c1-200
  for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/l8-wg$v/$f.csv ] && cp $R/l8-wg$v/$f.csv $R/${f}_wg$v.csv; done
  rm -rf $R/l8-wg$v
done
cd $OUT && tar czf r.tgz r && rm -rf r
