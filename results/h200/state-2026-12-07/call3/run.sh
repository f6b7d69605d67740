# Call 3 (packed at the commit PACKED.txt names), asked for an H200 (needs_h200: the 8B at batch 64
# and prompt 8192 needs ~87 GB, the Kimi-K2 4-layer shape's random bf16 weights ~105 GB): main's
# issue tables on the card, the first H200 since tables-2026-12-06 (24a096e). Issue 16:
# V2-Lite batch 1/8/32 (the ten-copy inputs beside it at batch 1, its stamps at batch 1) and
# Moonlight batch 1/8. Issue 18's 8B table (batch 1-64 at prompts 128 and 8192 in one bench,
# prompt 32768 at batch 1, batch 128 / 256). Then the served MoE shapes with SpecForge draft
# shapes (DeepSeek-V3 and Kimi-K2, 4 layers, batch 1/8/64), the kernel checks and GPU = CPU
# greedy and lossless on the sparse fixtures, as the call's time allows.
#
#   run: timeout 590 bash results/h200/state-2026-12-07/call3/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
bench v2 35 $V2 --batch-sizes 1,8,32
SPECULA_INPUTS=apart bench v2-apart 25 $V2 --batch-sizes 1
SPECULA_STAMPS=1 bench v2-stamps 25 $V2 --batch-sizes 1
bench moon 35 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
head -14 $R/v2-stamps_kernel_shares_b1_p128.csv | cut -d, -f1,2,4,6
L8="--config bench/configs/llama-3.1-8b.json --repeats 1"
bench l8-two 300 $L8 --batch-sizes 1,8,16,32,64 --prompt-lens 128,8192 --max-new-tokens 32
grep -E "skipped|sizing|rror" $R/l8-two.log | cut -c1-240
bench l8-32768 80 $L8 --batch-sizes 1 --prompt-lens 32768 --max-new-tokens 16
bench l8-big 60 $L8 --batch-sizes 128,256 --max-new-tokens 16
for f in $R/scaling_l8*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,9,10,11,15,16,20 $f; done
bench v3-4 60 --config bench/configs/deepseek-v3-4-layers.json --draft-config bench/drafts/deepseek-v3-eagle3.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
bench kimi-4 60 --config bench/configs/kimi-k2-4-layers.json --draft-config bench/drafts/kimi-k25-eagle3.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 32
for f in $R/decode_bandwidth_v3*.csv $R/decode_bandwidth_kimi*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
kernel_checks 60 "^top_k"
agree tiny-deepseek-v3 tiny-deepseek-v3
agree tiny-deepseek-v2 tiny-deepseek-v2
