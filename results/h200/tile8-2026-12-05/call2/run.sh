# Ready for the next session (not run: this session's device time ran out). Binaries of eea8c3f
# in devrun/t8 (main's behaviour since: the pipelined small-row linear to 32 rows, the RoPE
# epilogue to 16; SPECULA_MMA_PIPELINED=64 = eight tiles for narrow weights at 33-64 rows, which
# call 1 timed alone but never in the step with this rule) and the previous session's head
# ea0ba6b in devrun/bin, both with their cubins in devrun/kernels. Checks (call 1's panicked in
# the check's own CPU reference, fixed), tiny-llama lossless with the eight tiles, the 8B step
# with SPECULA_MMA_PIPELINED=32 (default) / 64 interleaved twice at batch 8 (verify of 48 rows)
# and 64, then the issue tables with eea8c3f against ea0ba6b interleaved (meant for an H200:
# every call of 2026-12-05 afternoon got an H100), the 8B at prompt 8192 and 32768, batch 128
# and 256, DeepSeek-V2-Lite and Moonlight.
set -u
CALL_BUDGET_S=500
. scripts/gpu_call.sh
for b in specula specula-gpu-check; do gunzip -f devrun/t8/$b.gz; chmod +x devrun/t8/$b; done
cp devrun/bin/specula devrun/old-specula
use() { cp devrun/$1 devrun/bin/specula; }
timeout 90 devrun/t8/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E "linear_mma| false " $R/gpu_check.log | cut -c1-200
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
use t8/specula
SPECULA_MMA_PIPELINED=64 timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-t8.log 2>&1
echo "agree t8 rc $? true $(grep -c 'lossless true' $R/agree-t8.log) false $(grep -c 'lossless false' $R/agree-t8.log)"; rm -rf $R/agree
for rep in 1 2; do
  for v in 32 64; do
    SPECULA_MMA_PIPELINED=$v bench l8-rows$v-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 8,64 --repeats 1 --max-new-tokens 64
  done
done
for v in old-specula t8/specula old-specula t8/specula; do
  use $v; bench l8-${v%%[-/]*}-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 64
done
use t8/specula
bench l8-long 150 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 8192,32768 --repeats 1 --max-new-tokens 32
bench l8-8192-b8 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
bench l8-big 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 32
bench v2lite 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 64
bench moonlight 60 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 64
call_done
