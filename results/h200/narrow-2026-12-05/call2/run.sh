# Call 2 (issue 16 item 5; binaries and cubin as call 1): DeepSeek-V2-Lite and Moonlight at
# batch 1, 8, 32 (the step against ../moe-route-2026-12-04 and ../ideal-2026-12-04), then one
# profiled V2-Lite batch-1 run whose spans are now GPU time (the profile holds the stream for
# longer than the host takes to enqueue a forward), then the served V3 shape at prompt 8192 with
# the latent attention in both forms if time is left. First: the latent attention's preparation
# and W_UK in one launch (SPECULA_MLA_PREP=one, new, its check row mla_prep_uk is in call 1's
# --checks-only) lossless on the random MLA fixtures, and V2-Lite / Moonlight with it against the
# default (two launches, forked), interleaved.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
. scripts/gpu_env.sh
export SPECULA_KERNEL_CACHE=$PWD/devrun/kernels
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --max-new-tokens 64"
bench() { # name, timeout, args...
  local n=$1 t=$2; shift 2
  if [ $(el) -gt 500 ]; then echo "== $n skipped at $(el) s"; return; fi
  echo "== $n"
  timeout $t $B "$@" --out $R/$n > $R/$n.log 2>&1; echo "rc $? at $(el) s"
  grep -E "baseline step|kernels a step|synthetic|warning|rror" $R/$n.log | cut -c1-200
  for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/$n/$f.csv ] && cp $R/$n/$f.csv $R/${f}_$n.csv; done
  rm -rf $R/$n
}
for shape in tiny-deepseek-v3 tiny-deepseek-v2 bench/fixtures/mla16.json; do
  name=$(basename "$shape" .json)
  devrun/bin/specula fixtures random --shape "$shape" --seed 7 --out $R/fx/$name > /dev/null
  SPECULA_MLA_PREP=one timeout 60 devrun/bin/specula gpu agree --target $R/fx/$name/target --draft $R/fx/$name/draft --out $R/agree-$name > $R/agree-one-$name.log 2>&1
  echo "$name MLA_PREP=one rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-one-$name.log), false $(grep -c 'lossless false' $R/agree-one-$name.log)"
  grep -iE "f32 GPU baseline vs CPU|rror" $R/agree-one-$name.log | head -2
  rm -rf $R/agree-$name
done
rm -rf $R/fx
for v in two one; do
  SPECULA_MLA_PREP=$v bench v2lite-$v 100 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2
done
SPECULA_GPU_PROFILE=1 bench v2lite-profile 100 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
sed -n '/per-forward breakdown/,/^batch/p' $R/v2lite-profile.log | head -60
for v in two one; do
  SPECULA_MLA_PREP=$v bench v2lite-$v-b 100 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 2
done
SPECULA_MLA_PREP=one bench moonlight-one 80 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 2
bench l8-big 120 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1
for mla in fma mma; do
  SPECULA_MLA=$mla bench v3-8192-$mla 150 --config bench/configs/deepseek-v3-4-layers.json --draft-config bench/drafts/deepseek-v3-eagle3.json \
    --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
done
cd $OUT && tar czf r.tgz r && rm -rf r
