#!/usr/bin/env bash
# Real-size checkpoints straight to the GPU (issue 23), in one go on a
# machine with an NVIDIA GPU and no Rust: writes a Llama-3.1-8B-shaped
# checkpoint (random bf16, 4 shards) with an EAGLE-3 draft in the SGLang
# layout and a Qwen2.5-32B-shaped one (14 shards, in /dev/shm: 65.5 GB),
# reads each with dd (the page-cache read speed), then runs `gpu agree`
# (the direct loader against the CPU engine), `gpu bench` on both under
# /usr/bin/time -v, and a two-entry sweep over the 8B target (one load).
#
#   cargo build --release -p specula --features cuda
#   bash scripts/gpu_load_run.sh OUT_DIR BIN_DIR [CKPT_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/h200/load}
BIN=${2:-devrun/bin}
CK=${3:-/tmp/specula-ckpt}
mkdir -p "$OUT" "$CK"
. scripts/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
df -h "$CK" /dev/shm | tee "$OUT/disks.txt"
free -g | tee -a "$OUT/disks.txt"
# /usr/bin/time -v when present, else the same two figures from Python.
timed() {
    local log=$1; shift
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -v "$@" 2> >(tee "$log" >&2)
    else
        python3 - "$log" "$@" <<'PY'
import resource, subprocess, sys, time
t0 = time.time(); p = subprocess.run(sys.argv[2:], stderr=subprocess.PIPE, text=True)
sys.stderr.write(p.stderr)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write(p.stderr)
    f.write(f"\tElapsed (wall clock) time (seconds): {time.time() - t0:.2f}\n")
    f.write(f"\tMaximum resident set size (kbytes): {r.ru_maxrss}\n")
sys.exit(p.returncode)
PY
    fi
}
# dd of every shard of a checkpoint, one after the other: GB/s.
read_speed() {
    local dir=$1 t0 t1 bytes
    bytes=$(cat "$dir"/*.safetensors | wc -c)
    t0=$(date +%s.%N)
    for f in "$dir"/*.safetensors; do dd if="$f" of=/dev/null bs=16M status=none; done
    t1=$(date +%s.%N)
    python3 -c "print(f'dd sequential: {$bytes/1e9:.2f} GB in {$t1-$t0:.2f} s = {$bytes/1e9/($t1-$t0):.2f} GB/s')"
    t0=$(date +%s.%N)
    for f in "$dir"/*.safetensors; do dd if="$f" of=/dev/null bs=16M status=none & done; wait
    t1=$(date +%s.%N)
    python3 -c "print(f'dd all shards in parallel: {$bytes/1e9/($t1-$t0):.2f} GB/s')"
}

echo "== 1. gpu agree on tiny-llama: the direct loader against the CPU engine"
"$BIN/specula" gpu agree --out "$OUT/agree" 2>&1 | tail -25 | tee "$OUT/agree.log"

echo "== 2. Llama-3.1-8B-shaped checkpoint, random bf16, 4 shards + EAGLE-3 draft (SGLang layout)"
python3 tools/gpu/write_random_checkpoint.py tools/gpu/llama-3.1-8b.json "$CK/llama8b" --shards 4 \
    --draft "$CK/llama8b/eagle3" --draft-vocab 32000 --tokenizer-from models/tiny-llama 2>&1 | tee "$OUT/write_8b.log"
ls -la "$CK/llama8b" "$CK/llama8b/eagle3" >> "$OUT/write_8b.log"
read_speed "$CK/llama8b" 2>&1 | tee "$OUT/dd_8b.log"

echo "== 3. gpu bench on the 8B pair (from the page cache), under /usr/bin/time -v"
timed "$OUT/time_bench_8b.log" "$BIN/specula" gpu bench --target "$CK/llama8b" --draft "$CK/llama8b/eagle3" \
    --batch-sizes 1,8 --synthetic 0.8 --repeats 1 --max-new-tokens 64 --out "$OUT/bench_8b"
grep -E "Elapsed|Maximum resident" "$OUT/time_bench_8b.log"

echo "== 4. a sweep over the 8B target: two model entries, one load"
cat > "$CK/sweep_8b.toml" <<TOML
name = "load-8b"
device = "cuda"
max_new_tokens = 32
batch_sizes = [1, 4]
temperatures = 0
warmup = 1
ignore_eos = true

[[models]]
name = "8b-a"
target = "$CK/llama8b"
draft = "$CK/llama8b/eagle3"
chat_template = "none"

[[models]]
name = "8b-b"
target = "$CK/llama8b"
draft = "$CK/llama8b/eagle3"
chat_template = "none"

[[drafts]]
steps = 3

[[prompt_sets]]
sample = 4
seed = 1
TOML
timed "$OUT/time_sweep_8b.log" "$BIN/specula" sweep "$CK/sweep_8b.toml" --out "$OUT/sweep_8b"
grep -E "Elapsed|Maximum resident" "$OUT/time_sweep_8b.log"
rm -rf "$CK/llama8b"

echo "== 5. Qwen2.5-32B-shaped checkpoint, random bf16, 14 shards in /dev/shm"
python3 tools/gpu/write_random_checkpoint.py tools/gpu/qwen2.5-32b.json /dev/shm/qwen32b --shards 14 \
    --tokenizer-from models/tiny-llama 2>&1 | tee "$OUT/write_32b.log"
read_speed /dev/shm/qwen32b 2>&1 | tee "$OUT/dd_32b.log"
timed "$OUT/time_bench_32b.log" "$BIN/specula" gpu bench --target /dev/shm/qwen32b \
    --batch-sizes 1 --repeats 1 --max-new-tokens 32 --out "$OUT/bench_32b"
grep -E "Elapsed|Maximum resident" "$OUT/time_bench_32b.log"
rm -rf /dev/shm/qwen32b
