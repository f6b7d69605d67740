# Call 1 (issue 16 item 5): the day's baseline of DeepSeek-V2-Lite at batch 1 and 8, and every
# kernel's own duration inside the decode graph (Nsight Compute, one metric, graph nodes profiled
# one by one, caches and clocks left alone). Binaries: devrun/bin (gzipped release builds).
set -u
for f in devrun/bin/*.gz; do gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
B="devrun/bin/specula gpu bench --config bench/configs/deepseek-v2-lite.json --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
echo "== bench, batch 1 and 8, 3 repeats"
timeout 200 $B --batch-sizes 1,8 --repeats 3 --max-new-tokens 64 --out $R/base > $R/base.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic" $R/base.log | head -12
echo "== ncu: each kernel's duration, batch 1, 6 new tokens"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 300 $NCU --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
  --launch-count 6000 --csv --log-file $R/ncu.csv $B --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu > $R/ncu.log 2>&1; echo "rc $? at $(el) s"
tail -3 $R/ncu.log; wc -l $R/ncu.csv
cd $OUT && tar czf r.tgz r && rm -rf r
