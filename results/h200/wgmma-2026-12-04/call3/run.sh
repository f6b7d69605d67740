# Call 3: the wgmma linear with its tokens through the stages by cp.async and transposed in
# shared memory per stage (call 2's register staging stood an L2 load in every stage).
# Kernel checks, the timing of every layout, the 8B step at batch 8-64 with it on.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
. scripts/gpu_env.sh
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 220 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "FAIL|passed|NVRTC" $R/gpu_check.log | cut -c1-200 | head -20
grep -E "linear_wg" $R/gpu_check.log | grep -v " true " | head
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
echo "== wgmma timing"
timeout 150 devrun/bin/specula-gpu-check $R --wgmma-timing > $R/wgmma_timing.log 2>&1; echo "rc $? at $(el) s"
grep -vE "^(device|wgmma linear)" $R/wgmma_timing.log | head -70
B="devrun/bin/specula gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 2 --max-new-tokens 64"
if [ $(el) -lt 400 ]; then
  echo "== Llama-3.1-8B, SPECULA_LINEAR_WG=1"
  SPECULA_LINEAR_WG=1 timeout 120 $B --batch-sizes 8,16,32,64 --out $R/l8-wg1 > $R/l8-wg1.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|synthetic|warning|rror" $R/l8-wg1.log | cut -c1-200
  for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/l8-wg1/$f.csv ] && cp $R/l8-wg1/$f.csv $R/${f}_wg1.csv; done
  rm -rf $R/l8-wg1
fi
cd $OUT && tar czf r.tgz r && rm -rf r
