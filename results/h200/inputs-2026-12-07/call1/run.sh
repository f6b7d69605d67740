# Call 1 (packed at HEAD with stamps): a forward's inputs staged as one word array (one
# host-to-device transfer, then scatter_words inside the graph; SPECULA_INPUTS=staged, the
# default) against a copy per input (apart: ten driver calls the GPU waits on between steps).
# Beside it, the split argmax's chunk: 1024 logits a block (the default now) or 4096 (as before:
# 25 blocks for V2-Lite's 102400, 8 us of a batch-1 step in the stamps).
# V2-Lite batch 1/8/32 three times each, interleaved (staged, apart, staged with chunks of 4096); Moonlight batch 1/8 and the 8B at batch
# 1/8/64 once each; stamps of V2-Lite batch 1 both ways; GPU = CPU greedy and lossless on the
# tiny DeepSeek-V3, V2 and Llama-3 fixtures (staged); the kernel checks (row scatter_words).
#
#   run: timeout 420 bash results/h200/inputs-2026-12-07/call1/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2 3; do
  SPECULA_INPUTS=staged bench v2-staged-$rep 35 $V2
  SPECULA_INPUTS=apart bench v2-apart-$rep 35 $V2
  SPECULA_ARGMAX_CHUNK=4096 bench v2-chunk4096-$rep 35 $V2
done
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32"
SPECULA_INPUTS=staged bench moon-staged 35 $MOON
SPECULA_INPUTS=apart bench moon-apart 35 $MOON
V2B1="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32"
SPECULA_STAMPS=1 SPECULA_INPUTS=staged bench v2-stamps-staged 35 $V2B1
SPECULA_STAMPS=1 SPECULA_INPUTS=apart bench v2-stamps-apart 35 $V2B1
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
for f in $R/*kernel_shares*.csv; do echo "== $(basename $f)"; head -12 $f | cut -d, -f1,2,4,6; done
agree tiny-deepseek-v3 tiny-deepseek-v3
agree tiny-deepseek-v2 tiny-deepseek-v2
agree tiny-llama3 tiny-llama3
kernel_checks 80 "scatter_words"
L8="--config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32"
SPECULA_INPUTS=staged bench l8-staged 60 $L8
SPECULA_INPUTS=apart bench l8-apart 60 $L8
for f in $R/decode_bandwidth_l8*.csv $R/synthetic_speedup_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
