# Where a replayed decode step's time goes between the host and the graph, and whether the
# page-locked batch staging (branch pinned-batch) takes the host's share back: the throwaway
# ../split.patch applied to main (devrun/split/specula) and to pinned-batch
# (devrun/pinned/specula), both with main's kernels and cubin; the patch records CUDA events
# before the batch's copies, before the graph launch, after it and after the outputs' download
# (SPECULA_REPLAY_SPLIT=1) and prints the means per forward size every 16 replays. Then the two
# binaries without the events, interleaved, at batch 1, 8, 64.
set -u
CALL_BUDGET_S=400
. scripts/gpu_call.sh
for d in split pinned; do gunzip -f devrun/$d/specula.gz; chmod +x devrun/$d/specula; done
use() { cp devrun/$1/specula devrun/bin/specula; }
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
