# Call 1: the binaries of 3ae5e6e. First the kernel checks and the agreement runs (the
# NaN-aware normwise error and the review commits of the last session had not met a device),
# then whether warpgroup mma (wgmma.m64nNk16) gives the bits of the engine's mma.sync.m16n8k16
# chains (--wgmma-bits) and what a plain wgmma linear costs against the engine's linears at
# 32-128 rows (--wgmma-timing). Each step is skipped once the call has run 450 s.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
. scripts/gpu_env.sh
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== checks"; bash scripts/gpu_run_sparse.sh $R devrun/bin "checks agree" > $R/sparse.log 2>&1; echo "rc $? at $(el) s"
grep -E "passed|failed|FAIL|lossless|agree|skipped" $R/sparse.log | tail -30
if [ $(el) -lt 450 ]; then echo "== wgmma bits"; timeout 120 devrun/bin/specula-gpu-check $R --wgmma-bits > $R/wgmma_bits.log 2>&1; echo "rc $? at $(el) s"; cat $R/wgmma_bits.log | tail -40; fi
if [ $(el) -lt 450 ]; then echo "== wgmma timing"; timeout 120 devrun/bin/specula-gpu-check $R --wgmma-timing > $R/wgmma_timing.log 2>&1; echo "rc $? at $(el) s"; cat $R/wgmma_timing.log | tail -40; fi
cd $OUT && tar czf r.tgz r && rm -rf r
