# Call 2 (packed at HEAD), asked for an H200 (needs_h200: the Kimi-K2 4-layer shape's random
# bf16 weights need ~105 GB): HEAD's defaults (the staged inputs, the argmax in chunks of 1024)
# on the H200, with the ten-copy inputs beside them at batch 1. V2-Lite batch 1/8/32 and
# Moonlight batch 1/8 (issue 16's goal, last measured on an H200 at 24a096e: 52%); the served
# MoE shapes with SpecForge draft shapes (DeepSeek-V3 and Kimi-K2, 4 layers, batch 1/8/64);
# the 8B at batch 1-64 (issue 18's table at prompt 128); GPU = CPU greedy and lossless on the
# sparse fixtures.
#
#   run: timeout 400 bash results/h200/inputs-2026-12-07/call2/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
bench v2 35 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
SPECULA_INPUTS=apart bench v2-apart 35 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
bench moon 35 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
bench l8 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
bench v3-4 60 --config bench/configs/deepseek-v3-4-layers.json --draft-config bench/drafts/deepseek-v3-eagle3.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
bench kimi-4 60 --config bench/configs/kimi-k2-4-layers.json --draft-config bench/drafts/kimi-k25-eagle3.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
agree tiny-deepseek-v3 tiny-deepseek-v3
agree tiny-deepseek-v2 tiny-deepseek-v2
