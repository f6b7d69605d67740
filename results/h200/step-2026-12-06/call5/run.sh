# Call 5: main at the SPECULA_SHARED commit. Call 4's stamps put V2-Lite's batch-1 experts region
# (norm to combine) at ~62 us a layer against ~46 at copy, the routing waiting on the side
# stream's shared experts for SM slots. The shared experts in the main stream (before / between /
# after the routing and routed experts) against the side stream,  interleaved twice: V2-Lite batch 1 / 8 / 32; stamps
# of the best orders; Moonlight batch 1; the 8B's tree attention in splits of 1 / 2 tiles
# (SPECULA_TREE_SPLIT_TILES). On an H200, issue 18's tables first.
# Pack with STAMPS=1 (scripts/devrun_pack.sh) for the stamped run.
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
if grep -q H200 "$R/card.txt"; then
  # Issue 18's card: its tables first (reach-2026-12-06/call6's command set).
  bench l8-1 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
  bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
  bench l8-8192 200 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
  grep -E "skipped|sizing" $R/l8-8192.log | cut -c1-240
fi
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  for o in beside before between after; do
    SPECULA_SHARED=$o bench v2-$o-$rep 40 $V2
  done
done
for o in between; do
  SPECULA_STAMPS=1 SPECULA_SHARED=$o bench v2-stamps-$o 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
done
for o in beside between; do
  SPECULA_SHARED=$o bench moon-$o 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
done
# The 8B's batch-1 tree attention (11.4 us a layer in call 4's stamps over ~160 keys: one split
# of three 64-key tiles a kv head, 8 blocks): splits of one or two tiles.
for t in def 1 2; do
  if [ $t = def ]; then unset SPECULA_TREE_SPLIT_TILES; else export SPECULA_TREE_SPLIT_TILES=$t; fi
  bench l8-split$t 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
done
unset SPECULA_TREE_SPLIT_TILES
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,4 | tr '\n' ' ')"; done
call_done
