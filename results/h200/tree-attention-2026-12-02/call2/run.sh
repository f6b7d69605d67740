set -u
for f in devrun/bin/*.gz; do gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
unset SPECULA_ATTENTION SPECULA_LINEAR_TILES
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks (tree kernel, merge in rounds) + attention timings"
timeout 170 devrun/bin/specula-gpu-check $R/check --checks-only --attention-timing > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "attention_tree|passed|FAIL| false" $R/gpu_check.log | head -20
cat $R/check/attention_times.csv
B="devrun/bin/specula gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 1"
echo "== scaling, flash"
SPECULA_ATTENTION=flash timeout 300 $B --max-new-tokens 64 --batch-sizes 1,8,64 --prompt-lens 128,8192 --out $R/scale > $R/bench.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic tau|skipped" $R/bench.log | head -30
left=$(( 500 - $(el) )); echo "== split-K (default) at batch 1, 8, prompt 128, same run: $left s"
[ $left -gt 30 ] && timeout $left $B --max-new-tokens 64 --batch-sizes 1,8 --prompt-lens 128 --out $R/scale-split > $R/bench_split.log 2>&1
grep -E "baseline step|synthetic tau" $R/bench_split.log
left=$(( 560 - $(el) )); echo "== prompt 32768 batch 1, flash: $left s"
[ $left -gt 30 ] && SPECULA_ATTENTION=flash timeout $left $B --max-new-tokens 32 --batch-sizes 1 --prompt-lens 32768 --out $R/long > $R/bench_long.log 2>&1
grep -E "baseline step|synthetic tau" $R/bench_long.log
cd $OUT && tar czf r.tgz r && rm -rf r
