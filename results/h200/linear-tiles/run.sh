#!/usr/bin/env bash
# issue 18 items 3-4: one device call. $1 = what to run (comma list).
set -o pipefail
B=/tmp/b; mkdir -p $B
for f in specula specula-gpu-check; do gunzip -c devrun/k18/$f.gz > $B/$f; chmod +x $B/$f; done
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
W=/tmp/w; mkdir -p $W
T0=$(date +%s)
stamp() { echo "== $1 at $(( $(date +%s) - T0 )) s"; }
BENCH="$B/specula gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --steps 5 --topk 1 --synthetic 0.8 --quiet"
for what in ${1//,/ }; do
  case $what in
    check)
      stamp check
      timeout 300 $B/specula-gpu-check $W/check > $W/gpu_check.log 2>&1; echo "gpu-check rc $?"
      grep -E "linear|FAIL|false|passed|ceilings|error" $W/gpu_check.log | grep -v "^ *mma/" | head -80
      cp $W/gpu_check.log $OUT/ ; cp $W/check/linear_split.csv $W/check/kernel_checks.csv $OUT/ 2>/dev/null ;;
    checksonly)
      stamp checksonly
      timeout 300 $B/specula-gpu-check $W/check --checks-only > $W/gpu_check.log 2>&1; echo "gpu-check rc $?"
      grep -E "linear|FAIL|false |passed|ceilings|error" $W/gpu_check.log | head -60
      cp $W/check/kernel_checks.csv $OUT/ 2>/dev/null ;;
    agree)
      stamp agree
      timeout 300 $B/specula gpu agree --out $W/agree > $W/agree.log 2>&1; echo "agree rc $?"
      grep -E "lossless false|FAIL|identical|error" $W/agree.log | grep -v "lossless true" | head -30
      cp $W/agree/agreement.csv $OUT/ 2>/dev/null ;;
    bench)
      stamp bench
      timeout 400 $BENCH --batch-sizes ${BATCHES:-1,8,16,32,64,128,256} --repeats ${REPEATS:-1} --max-new-tokens ${NEW:-64} --out $W/bench 2>&1 | grep -v "^load" | tee $W/bench.log | grep -E "batch|error"
      cp $W/bench/decode_bandwidth.csv $W/bench/synthetic_speedup.csv $OUT/ 2>/dev/null ;;
    benchgraph)
      stamp benchgraph
      SPECULA_GRAPH_MAX_ROWS=2048 timeout 400 $BENCH --batch-sizes ${GBATCHES:-16,64,256} --repeats 1 --max-new-tokens ${NEW:-64} --out $W/benchg 2>&1 | tee $W/benchg.log | grep -E "batch|error|warning"
      cp $W/benchg/synthetic_speedup.csv $OUT/synthetic_speedup_graph.csv 2>/dev/null; cp $W/benchg/decode_bandwidth.csv $OUT/decode_bandwidth_graph.csv 2>/dev/null ;;
  esac
done
stamp done
