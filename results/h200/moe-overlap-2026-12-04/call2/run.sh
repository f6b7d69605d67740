# Call 2 (issue 16 item 5): call 1's binaries (build 7f3e2d6). Each kernel of one DeepSeek-V2-Lite
# decode forward timed alone by Nsight Compute (the new latent attention against call 5 of
# moe-launches); Moonlight without the fork (call 1 ran it with); DeepSeek-V2-Lite at prompt 8192,
# batch 1 and 8 (the latent attention's 1 GiB scratch bound, 5af3bb9, on a device for the first time).
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
echo "== Moonlight batch 1, 8, SPECULA_FORK=0"
SPECULA_FORK=0 timeout 100 $B --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 3 --max-new-tokens 64 --out $R/moon-fork0 > $R/moon-fork0.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|warning" $R/moon-fork0.log
echo "== V2-Lite batch 1,8 prompt 8192"
timeout 240 $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32 --out $R/v2long > $R/v2long.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic|skipped|warning|rror" $R/v2long.log
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "== ncu durations"
timeout 200 $NCU --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
  --launch-count 4000 --csv --log-file $R/ncu.csv $B --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 6 --out $R/ncu > $R/ncu.log 2>&1; echo "rc $? at $(el) s"
python3 tools/gpu/ncu_forward_table.py $R/ncu.csv > $R/kernel_times.txt 2>&1; head -40 $R/kernel_times.txt
for d in moon-fork0 v2long; do for f in decode_bandwidth synthetic_speedup spans scaling; do [ -f $R/$d/$f.csv ] && cp $R/$d/$f.csv $R/${f}_$d.csv; done; done
rm -rf $R/ncu $R/v2long/ $R/moon-fork0/
cd $OUT && tar czf r.tgz r && rm -rf r
