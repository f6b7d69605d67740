# Call 5: the revised rule (WgLaunch::for_shape after call 4's steps: wide weights at 9-16 and
# past 48 rows, narrow ones over long slices past 48, early-transpose and three-stage layouts)
# against none (SPECULA_LINEAR_WG=0), same run: the 8B step at batch 1-64, prompt 128 and 8192;
# then DeepSeek-V3 and Kimi-K2 (4 layers) with SpecForge draft shapes at batch 1, 8, 64.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
. scripts/gpu_env.sh
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8"
bench() { # name, wg setting, timeout, args...
  local n=$1 v=$2 t=$3; shift 3
  if [ $(el) -gt 330 ]; then echo "== $n skipped at $(el) s"; return; fi
  echo "== $n, SPECULA_LINEAR_WG=$v"
  if [ $v = 0 ]; then export SPECULA_LINEAR_WG=0; else unset SPECULA_LINEAR_WG; fi
  timeout $t $B "$@" --out $R/$n-$v > $R/$n-$v.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|synthetic|warning|rror" $R/$n-$v.log | cut -c1-170
  for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/$n-$v/$f.csv ] && cp $R/$n-$v/$f.csv $R/${f}_$n-$v.csv; done
  rm -rf $R/$n-$v
}
for v in 0 by-shape; do bench l8 $v 100 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 2 --max-new-tokens 64; done
for v in 0 by-shape; do bench l8-8192 $v 100 --config bench/configs/llama-3.1-8b.json --prompt-lens 8192 --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 64; done
bench v3 by-shape 60 --config bench/configs/deepseek-v3-4-layers.json --draft-config bench/drafts/deepseek-v3-eagle3.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
bench kimi by-shape 60 --config bench/configs/kimi-k2-4-layers.json --draft-config bench/drafts/kimi-k25-eagle3.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
cd $OUT && tar czf r.tgz r && rm -rf r
