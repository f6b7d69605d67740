# Call 4 (issue 16, "reach"): the binaries of call 3 (9d92bb0) on the shapes users serve:
# DeepSeek-V3 (bench/configs/deepseek-v3-4-layers.json: V3's config with 4 layers, one dense
# then three of 256 experts, top 8 of 8 groups keeping 4, q_lora 1536, 128 heads) and the
# Kimi-K2/K2.5 language model (kimi-k2-3-layers.json: 384 experts, 64 heads, one dense layer then
# two MoE), random bf16 weights (the served checkpoints are fp8: bytes here are twice theirs),
# batch 1-64 at prompt 128 and 8192. Each step is skipped once the call has run 400 s.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
B="devrun/bin/specula gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 --repeats 1 --max-new-tokens 32"
run() { # name, timeout, args...
  local n=$1 t=$2; shift 2
  if [ $(el) -gt 400 ]; then echo "== $n: skipped at $(el) s"; return; fi
  echo "== $n"
  timeout $t $B "$@" --out $R/$n > $R/$n.log 2>&1; echo "rc $? at $(el) s"
  grep -E "random bf16|baseline step|synthetic|warning|rror|skipped|memory" $R/$n.log | cut -c1-220
  for f in decode_bandwidth synthetic_speedup scaling; do [ -f $R/$n/$f.csv ] && cp $R/$n/$f.csv $R/${f}_$n.csv; done
  [ -f $R/$n/meta.json ] && cp $R/$n/meta.json $R/meta_$n.json
}
run v3-128 170 --config bench/configs/deepseek-v3-4-layers.json --batch-sizes 1,8,64
run kimi-128 110 --config bench/configs/kimi-k2-3-layers.json --batch-sizes 1,64
run v3-8192 170 --config bench/configs/deepseek-v3-4-layers.json --batch-sizes 1,64 --prompt-lens 8192
nvidia-smi --query-gpu=memory.used,memory.total --format=csv > $R/smi.txt 2>&1
rm -rf $R/v3-128/ $R/kimi-128/ $R/v3-8192/
cd $OUT && tar czf r.tgz r && rm -rf r
