set -u
for f in devrun/bin/*.gz; do gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
unset SPECULA_ATTENTION SPECULA_LINEAR_TILES
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== kernel checks + attention timings (defaults)"
timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only --attention-timing > $R/gpu_check.log 2>&1; echo "rc $? at $(el) s"
grep -E "attention_tree|decode_vs|passed|FAIL| false" $R/gpu_check.log | head -20
grep -E "^tree/4|^split" $R/check/attention_times.csv
echo "== gpu agree, defaults, batch 1,2,4,64"
timeout 150 devrun/bin/specula gpu agree --batch-sizes 1,2,4,64 --out $R/agree > $R/agree.log 2>&1; echo "rc $? at $(el) s"
echo "lossless true: $(grep -c 'lossless true' $R/agree.log)"; grep -E "lossless false|FAIL|error" $R/agree.log | head; tail -2 $R/agree.log
B="devrun/bin/specula gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 1"
echo "== scaling, defaults"
timeout 200 $B --max-new-tokens 64 --batch-sizes 1,8,64 --prompt-lens 128,8192 --out $R/scale > $R/bench.log 2>&1; echo "rc $? at $(el) s"
grep -E "baseline step|synthetic tau|skipped" $R/bench.log | head -30
left=$(( 470 - $(el) )); echo "== prompt 32768 batch 1: $left s"
[ $left -gt 30 ] && timeout $left $B --max-new-tokens 32 --batch-sizes 1 --prompt-lens 32768 --out $R/long > $R/bench_long.log 2>&1
grep -E "baseline step|synthetic tau" $R/bench_long.log
left=$(( 540 - $(el) )); echo "== batch 128, 256 at prompt 128: $left s"
[ $left -gt 30 ] && timeout $left $B --max-new-tokens 32 --batch-sizes 128,256 --prompt-lens 128 --out $R/wide > $R/bench_wide.log 2>&1
grep -E "baseline step|synthetic tau" $R/bench_wide.log; cat $R/wide/scaling.csv 2>/dev/null
cd $OUT && tar czf r.tgz r && rm -rf r
