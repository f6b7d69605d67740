# Call 1 (binaries and precompiled cubin of the commit it runs from, rebuilt into devrun/ first): the
# last session's host-tested refactor (launch_sliced, WeightStream, stream_prologue, the check
# sweep, --wgmma-timing's bits) and the kernel cache run on a device for the first time; the 8B
# step at batch 1-64 and 128/256; Nsight Compute on the narrow projections at 64 rows (o, down):
# the engine's tiled form against the wgmma layouts, to see what holds them at 24-33% of copy.
# Timings hold the stream before the start event (GpuTimer, hold.cu) so that they are GPU time;
# --wgmma-timing is run both ways (SPECULA_TIMER_HOLD=0: the old single-launch timing).
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
. scripts/gpu_env.sh
export SPECULA_KERNEL_CACHE=$PWD/devrun/kernels
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks"
timeout 200 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "FAIL|passed|NVRTC|cache|cubin" $R/gpu_check.log | cut -c1-200 | head -20
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
echo "== wgmma timing, narrow and wide at 32 and 64 rows"
timeout 100 devrun/bin/specula-gpu-check $R --wgmma-timing --only=o:32,o:64,qkv:32,qkv:64,down:32,down:64,gate_up:32,gate_up:64 > $R/wgmma_timing.log 2>&1; echo "rc $? at $(el) s"
grep -E "gave|differ|^ *(o|qkv|down|gate_up) " $R/wgmma_timing.log | head -20
echo "== the same, timed the old way (no hold before the start event: host launch time counted)"
mkdir -p $R/nohold
SPECULA_TIMER_HOLD=0 timeout 100 devrun/bin/specula-gpu-check $R/nohold --wgmma-timing --only=o:32,o:64,qkv:32,qkv:64,down:32,down:64,gate_up:32,gate_up:64 > $R/nohold/wgmma_timing.log 2>&1; echo "rc $? at $(el) s"
grep -E "^ *(o|qkv|down|gate_up) " $R/nohold/wgmma_timing.log | head -20
for v in unset 1; do
  if [ $v = 1 ]; then export SPECULA_LINEAR_WG=1; else unset SPECULA_LINEAR_WG; fi
  timeout 100 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree-$v > $R/agree-llama-$v.log 2>&1; echo "tiny-llama WG=$v rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-$v.log), false $(grep -c 'lossless false' $R/agree-llama-$v.log)"
  grep -iE "f32 GPU baseline vs CPU|warning|rror" $R/agree-llama-$v.log | head -3
  rm -rf $R/agree-$v
done
unset SPECULA_LINEAR_WG
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --max-new-tokens 64"
bench() { # name, timeout, args...
  local n=$1 t=$2; shift 2
  echo "== $n"
  timeout $t $B "$@" --out $R/$n > $R/$n.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|kernels a step|synthetic|warning|rror" $R/$n.log | cut -c1-200
  for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/$n/$f.csv ] && cp $R/$n/$f.csv $R/${f}_$n.csv; done
  rm -rf $R/$n
}
bench l8 120 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 2
bench l8-big 120 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
G="devrun/bin/specula-gpu-check $R/ncu-x --wgmma-timing"
for c in "o:64 linear_tiles" "o:64 linear_wg_2_64_2_4e" "o:64 linear_wg_1_32_2_3_" "down:64 linear_wg_1_64_2_4_" "gate_up:64 linear_wg_2_64_2_4e"; do
  set -- $c
  if [ $(el) -gt 480 ]; then echo "== ncu $1 $2 skipped at $(el) s"; continue; fi
  echo "== ncu $1 $2"
  timeout 60 $NCU -k regex:"$2" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    $G --only=$1 > $R/ncu_${1/:/_}_$2.txt 2>&1; echo "rc $? at $(el) s"
  grep -E "^  [a-z_]+.*\(|Duration|Grid Size|Block Size|Dynamic Shared|Warp Cycles Per Issued|Achieved Active|Issued Warp|No Eligible|Memory Throughput|DRAM Throughput|L2 Hit|L1/TEX Hit|Stall" $R/ncu_${1/:/_}_$2.txt | head -24
done
rm -rf $R/ncu-x
cd $OUT && tar czf r.tgz r && rm -rf r
