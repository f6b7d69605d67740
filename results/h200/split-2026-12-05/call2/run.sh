# call1/run.sh never started (the device refused twice); this call runs it after the two-tile
# pipelined linear of branch wip (d2a509d, devrun/tile2: linear_mma_tile2 for 9-16 rows behind
# SPECULA_MMA_TILE2=1): its kernel checks, its timing alone against the engine's form at 12 and
# 16 rows (qkv, o, down: the narrow projections the small-row kernel runs), and the 8B step at
# batch 2 (verify of 12 rows) and 16 (decode of 16) with it off and on, interleaved. Then
# call1's split of a replayed step (main vs pinned-batch, with events, then without,
# interleaved) and pinned-batch's lossless run.
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
for d in split pinned; do gunzip -f devrun/$d/specula.gz; chmod +x devrun/$d/specula; done
for b in specula specula-gpu-check; do gunzip -f devrun/tile2/$b.gz; chmod +x devrun/tile2/$b; done
use() { cp devrun/$1/specula devrun/bin/specula; }
T=devrun/tile2/specula-gpu-check
timeout 150 $T $R/check --checks-only > $R/gpu_check.log 2>&1; echo "tile2 checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E "linear_mma" $R/gpu_check.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
timeout 80 $T $R --wgmma-timing --only=qkv:12,o:12,down:12,qkv:16,o:16,down:16 > $R/wgmma_timing.log 2>&1; echo "timing rc $? at $(el) s"
grep -E "^(qkv|o |down)" $R/wgmma_timing.log; grep -E "tile2|engine" $R/wgmma_timing.csv
use tile2
for v in 0 1 0 1; do
  SPECULA_MMA_TILE2=$v bench l8-tile2-$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 2,16 --repeats 1 --max-new-tokens 64
done
for v in split pinned; do
  use $v
  SPECULA_REPLAY_SPLIT=1 bench l8-events-$v 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 64
  grep "replay split" $R/l8-events-$v.log | tail -6
done
for v in split pinned split pinned; do
  use $v; bench l8-$v-$(el) 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 64
done
use pinned
timeout 90 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-pinned.log 2>&1
echo "pinned agree rc $? true $(grep -c 'lossless true' $R/agree-pinned.log) false $(grep -c 'lossless false' $R/agree-pinned.log)"; rm -rf $R/agree
call_done
