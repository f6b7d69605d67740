# Call 5 (binaries and cubin of the commit it runs from, devrun/bin: the shared tree attention
# and four stages while a launch has no more blocks than SMs, the L2 prefetch dropped; and
# devrun/old: main's, 5eb4b83's kernels): kernel checks, lossless on tiny-llama, then the issue
# tables old/new interleaved: the 8B at batch 1-64 (prompt 128), at prompt 8192 (batch 1, 8),
# the qkv rule of 2e4c1d5 (devrun/qkv: this commit's specula with that commit's
# kernels/src/wg_layout.rs applied, host-side only, the same cubin) against this commit's at
# batch 64; DeepSeek-V2-Lite at batch 1, 8, 32; the 8B at batch 128 and 256 with this commit's;
# V2-Lite's batch-1 step per operation (SPECULA_GPU_PROFILE=1).
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
for f in devrun/old/*.gz devrun/qkv/*.gz devrun/kernels/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done
chmod +x devrun/old/* devrun/qkv/*
timeout 90 devrun/bin/specula-gpu-check $R/check --checks-only --attention-timing > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-160 | head -4
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; cp $R/check/attention_times.csv $R/ 2>/dev/null; rm -rf $R/check
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "tiny-llama agree rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log), false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "f32 GPU baseline vs CPU" $R/agree-llama.log | head -2; rm -rf $R/agree
cp devrun/bin/specula devrun/bin/specula.new
use() { cp devrun/$(case "$1" in old) echo old/specula;; qkv) echo qkv/specula;; *) echo bin/specula.new;; esac) devrun/bin/specula; }
for v in old new old new; do
  use $v; bench l8-$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 64
done
for v in old new old new; do
  use $v; bench l8-8192-$v-$(el) 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
done
for v in new qkv new qkv; do
  use $v; bench l8-64-$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 64 --repeats 1 --max-new-tokens 64
done
for v in old new; do
  use $v; bench v2lite-$v-$(el) 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 64
done
use new
bench l8-big 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 32
# Where V2-Lite's batch-1 step goes now (eager, CUDA events per operation: longer than the graph).
SPECULA_GPU_PROFILE=1 bench v2lite-prof 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
call_done
