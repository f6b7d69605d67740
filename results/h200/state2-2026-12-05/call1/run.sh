# Where main stands after this session's kernels (5e205b6, devrun/new: the pipelined small-row
# linear to 32 rows, the q|k|v projection with RoPE as its epilogue to 16 rows) against the
# session's base (ea0ba6b, devrun/bin): checks, tiny-llama lossless, the 8B issue table at batch
# 1-64 interleaved old/new twice, the 8B at prompt 8192 (batch 1, 8) and DeepSeek-V2-Lite at
# batch 1, 8 with the new binary.
set -u
CALL_BUDGET_S=420
. scripts/gpu_call.sh
for b in specula specula-gpu-check; do gunzip -f devrun/new/$b.gz; chmod +x devrun/new/$b; done
cp devrun/bin/specula devrun/old-specula
use() { cp devrun/$1 devrun/bin/specula; }
timeout 200 devrun/new/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-200
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
use new/specula
timeout 90 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "tiny-llama agree rc $? true $(grep -c 'lossless true' $R/agree-llama.log) false $(grep -c 'lossless false' $R/agree-llama.log)"
grep -iE "f32 GPU baseline vs CPU|graphs vs eager, baseline" $R/agree-llama.log | head -2; rm -rf $R/agree
for v in old-specula new/specula old-specula new/specula; do
  use $v; bench l8-${v%%[-/]*}-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 64
done
use new/specula
bench l8-8192 120 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
bench v2lite 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 64
call_done
