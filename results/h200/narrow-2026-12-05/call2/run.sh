# Call 2 (issue 16 item 5; binaries and cubin as call 1): DeepSeek-V2-Lite and Moonlight at
# batch 1, 8, 32 (the step against ../moe-route-2026-12-04 and ../ideal-2026-12-04), then one
# profiled V2-Lite batch-1 run whose spans are now GPU time (the profile holds the stream for
# longer than the host takes to enqueue a forward), then the served V3 shape at prompt 8192 with
# the latent attention in both forms if time is left.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
. scripts/gpu_env.sh
export SPECULA_KERNEL_CACHE=$PWD/devrun/kernels
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --max-new-tokens 64"
bench() { # name, timeout, args...
  local n=$1 t=$2; shift 2
  if [ $(el) -gt 480 ]; then echo "== $n skipped at $(el) s"; return; fi
  echo "== $n"
  timeout $t $B "$@" --out $R/$n > $R/$n.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|kernels a step|synthetic|warning|rror" $R/$n.log | cut -c1-200
  for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/$n/$f.csv ] && cp $R/$n/$f.csv $R/${f}_$n.csv; done
  rm -rf $R/$n
}
bench v2lite 120 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2
bench moonlight 100 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 2
SPECULA_GPU_PROFILE=1 bench v2lite-profile 100 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
sed -n '/per-forward breakdown/,/^batch/p' $R/v2lite-profile.log | head -60
for mla in fma mma; do
  SPECULA_MLA=$mla bench v3-8192-$mla 150 --config bench/configs/deepseek-v3-4-layers.json --draft-config bench/drafts/deepseek-v3-eagle3.json \
    --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
done
cd $OUT && tar czf r.tgz r && rm -rf r
