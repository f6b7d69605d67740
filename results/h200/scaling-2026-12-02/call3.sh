set -u
for f in devrun/bin/*.gz; do gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
unset SPECULA_ATTENTION SPECULA_LINEAR_TILES
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
echo "== gpu agree, defaults (flash prefill, split-K decode/verify, tiles > 64 rows, aux states on the device), batch 1,2,4,64"
timeout 200 devrun/bin/specula gpu agree --batch-sizes 1,2,4,64 --out $R/agree > $R/agree.log 2>&1; echo "rc $? at $(el) s"
grep -c "lossless true" $R/agree.log; grep -E "lossless false|identical" $R/agree.log | grep -v "lossless true" | head; tail -3 $R/agree.log
B="devrun/bin/specula gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 1"
left=$(( 430 - $(el) )); echo "== scaling, defaults: $left s"
[ $left -gt 40 ] && timeout $left $B --max-new-tokens 64 --batch-sizes 1,8,64 --prompt-lens 128,8192 --out $R/scale > $R/bench.log 2>&1
grep -E "baseline step|synthetic tau|skipped" $R/bench.log
left=$(( 460 - $(el) )); echo "== context tiers on the GPU (tiny-llama, to 32k): $left s"
[ $left -gt 20 ] && timeout $left devrun/bin/specula sweep bench/sweeps/context-tiers-gpu.toml --quiet --out $R/tiers > $R/tiers.log 2>&1; echo "rc $?"; tail -4 $R/tiers.log
left=$(( 510 - $(el) )); echo "== prompt 32768, batch 1: $left s"
[ $left -gt 30 ] && timeout $left $B --max-new-tokens 32 --batch-sizes 1 --prompt-lens 32768 --out $R/long > $R/bench_long.log 2>&1
grep -E "baseline step|synthetic tau|skipped" $R/bench_long.log; tail -2 $R/bench_long.log
left=$(( 540 - $(el) )); echo "== kernel checks: $left s"
[ $left -gt 20 ] && timeout $left devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; tail -2 $R/gpu_check.log
cd $OUT && tar czf r.tgz r && rm -rf r
