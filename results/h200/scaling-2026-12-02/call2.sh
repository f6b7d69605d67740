set -u
for f in devrun/bin/*.gz; do gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s)
echo "== kernel checks, flash + tiles"
SPECULA_ATTENTION=flash SPECULA_LINEAR_TILES=1 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "rc $?"
grep -E "attention_tree|passed|FAIL|false" $R/gpu_check.log | head -30
echo "checks: $(( $(date +%s) - T0 )) s"
B="devrun/bin/specula gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet --max-new-tokens 64 --steps 5 --topk 1 --synthetic 0.8 --repeats 1"
for mode in flash split; do
  if [ $mode = flash ]; then export SPECULA_ATTENTION=flash SPECULA_LINEAR_TILES=1; else unset SPECULA_LINEAR_TILES; export SPECULA_ATTENTION=split; fi
  left=$(( 540 - ($(date +%s) - T0) )); echo "== $mode: $left s left"
  [ $left -gt 40 ] && timeout $left $B --batch-sizes 1,8,64 --prompt-lens 128,8192 --out $R/scale-$mode > $R/bench_$mode.log 2>&1
  grep -E "baseline step|synthetic tau|skipped" $R/bench_$mode.log
done
export SPECULA_ATTENTION=flash SPECULA_LINEAR_TILES=1
left=$(( 570 - ($(date +%s) - T0) )); echo "== long, flash: $left s left"
[ $left -gt 30 ] && timeout $left $B --batch-sizes 1 --prompt-lens 32768 --max-new-tokens 32 --out $R/long-flash > $R/bench_long.log 2>&1
grep -E "baseline step|synthetic tau|skipped|device_used" $R/bench_long.log; cat $R/long-flash/scaling.csv 2>/dev/null
cd $OUT && tar czf r.tgz r && rm -rf r
