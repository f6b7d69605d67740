# Call 14 (packed at 2a46ec6 with stamps): call 13 plus the third new form of the latent
# attention's tail, SPECULA_MLA_MERGE=cluster (a (row, head)'s splits one thread-block cluster,
# merged through distributed shared memory), within ~450 s of device time. On an H200: issue
# 18's 8B table first, then what the time leaves of the rest. Then: the kernel checks (among
# them mla_uv_in_merge, mla_prep_uk at four outputs a warp, mla_cluster_merge, all bit for bit),
# GPU = CPU greedy and lossless on the sparse fixtures with all three new forms, V2-Lite by
# default against all three twice, interleaved, then W_UV in the merge + four a warp, and the
# cluster merge alone, once each; stamps of all three; Moonlight by default and with all three.
#
#   run: timeout 450 bash results/h200/step-2026-12-06/call14/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=400
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
# The three new forms together (a subshell's exports: `bench` is a function of this shell).
new() { (export SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 SPECULA_MLA_MERGE=cluster; "$@"); }
if grep -q H200 "$R/card.txt"; then
  L8="--config bench/configs/llama-3.1-8b.json --repeats 1"
  bench l8-two 260 $L8 --batch-sizes 1,8,16,32,64 --prompt-lens 128,8192 --max-new-tokens 32
  grep -E "skipped|sizing|rror" $R/l8-two.log | cut -c1-240
  bench l8-32768 60 $L8 --batch-sizes 1 --prompt-lens 32768 --max-new-tokens 16
  bench l8-big 50 $L8 --batch-sizes 128,256 --max-new-tokens 16
  for f in $R/scaling_*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,9,10,11,15,16 $f; done
fi
if [ "$(el)" -lt 300 ]; then
  kernel_checks 120 "mla_uv_in_merge|mla_prep_uk|mla_cluster_merge"
fi
if [ "$(el)" -lt 330 ]; then
  new agree tiny-deepseek-v3 tiny-deepseek-v3-new
  new agree tiny-deepseek-v2 tiny-deepseek-v2-new
fi
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  bench v2-default-$rep 35 $V2
  new bench v2-all-$rep 35 $V2
done
SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 bench v2-uvdots 35 $V2
SPECULA_MLA_MERGE=cluster bench v2-cluster 35 $V2
SPECULA_STAMPS=1 new bench v2-stamps-all 35 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32"
bench moon-default 35 $MOON
new bench moon-all 35 $MOON
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
call_done
