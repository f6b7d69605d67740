# The pipelined small-row linear past one token tile (branch wip b37a29b, devrun/pipe): its
# checks, each narrow 8B projection at 12-32 rows alone against the other small-row form, the
# 8B step with the kernel to 8 (the looped kernel past one tile: main's rule), 16 (the new
# default) and 32 rows (SPECULA_MMA_PIPELINED), interleaved, at batch 4 (verify of 24 rows),
# 16 and 32; tiny-llama lossless at batch 1 and 64 by default and with 32; then the issue table
# (batch 1-64) with the new binary and main's (ea0ba6b, devrun/bin), interleaved.
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
for b in specula specula-gpu-check; do gunzip -f devrun/pipe/$b.gz; chmod +x devrun/pipe/$b; done
cp devrun/bin/specula devrun/main-specula
use() { cp devrun/$1 devrun/bin/specula; }
T=devrun/pipe/specula-gpu-check
timeout 150 $T $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E "linear_mma" $R/gpu_check.log | cut -c1-240
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
timeout 120 $T $R --wgmma-timing --only=qkv:12,o:12,down:12,qkv:16,o:16,down:16,qkv:24,o:24,down:24,qkv:32,o:32,down:32 > $R/wgmma_timing.log 2>&1; echo "timing rc $? at $(el) s"
grep -E "^(qkv|o |down)" $R/wgmma_timing.log; grep -E "mma/|engine" $R/wgmma_timing.csv
use pipe/specula
for v in "" 32; do
  SPECULA_MMA_PIPELINED=$v timeout 90 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-pipe$v.log 2>&1
  echo "agree [$v] rc $? true $(grep -c 'lossless true' $R/agree-pipe$v.log) false $(grep -c 'lossless false' $R/agree-pipe$v.log)"
  grep -iE "f32 GPU baseline vs CPU|graphs vs eager, baseline" $R/agree-pipe$v.log | head -2; rm -rf $R/agree
done
for rep in 1 2; do
  for v in 8 16 32; do
    SPECULA_MMA_PIPELINED=$v bench l8-rows$v-$rep 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 4,16,32 --repeats 1 --max-new-tokens 64
  done
done
for v in main-specula pipe/specula main-specula pipe/specula; do
  use $v; bench l8-$(dirname $v | tr . m)-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 64
done
call_done
