# Call 16 (packed at 694b5d2 with stamps): the latent attention's new default tail (W_UV in the
# merge, four outputs a warp, clusters at one row) against the first forms, and, on an H200,
# issue 18's 8B table first (batch 64 at prompt 8192 needs ~87 GB: asked with needs_h200).
# Then: GPU = CPU greedy and lossless on the sparse fixtures by default; V2-Lite by default
# against the first forms twice, interleaved; Moonlight both ways; stamps of the default.
#
#   run: timeout 560 bash results/h200/step-2026-12-06/call16/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=500
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
# The three first forms of the latent attention's tail (a subshell's exports).
old() { (export SPECULA_MLA_UV=apart SPECULA_MLA_DOTS=1 SPECULA_MLA_MERGE=last; "$@"); }
if grep -q H200 "$R/card.txt"; then
  L8="--config bench/configs/llama-3.1-8b.json --repeats 1"
  bench l8-two 260 $L8 --batch-sizes 1,8,16,32,64 --prompt-lens 128,8192 --max-new-tokens 32
  grep -E "skipped|sizing|rror" $R/l8-two.log | cut -c1-240
  bench l8-32768 60 $L8 --batch-sizes 1 --prompt-lens 32768 --max-new-tokens 16
  bench l8-big 50 $L8 --batch-sizes 128,256 --max-new-tokens 16
  for f in $R/scaling_l8*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,9,10,11,15,16,20 $f; done
fi
agree tiny-deepseek-v3 tiny-deepseek-v3
agree tiny-deepseek-v2 tiny-deepseek-v2
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  bench v2-default-$rep 35 $V2
  old bench v2-old-$rep 35 $V2
done
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32"
bench moon-default 35 $MOON
old bench moon-old 35 $MOON
SPECULA_STAMPS=1 bench v2-stamps 35 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
for f in $R/scaling_v2*.csv $R/scaling_moon*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,15,16,20 | tr '\n' ' ')"; done
