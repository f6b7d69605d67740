# Call 10 (replaces call 9, which never ran): HEAD's defaults with no switch set (the shared
# experts stacked), and two new forms of the latent attention's per-head products, each the same
# bits as the default: W_UV in the one-head attention's merging blocks (SPECULA_MLA_UV=merge: one
# launch fewer a layer) and four outputs a warp in the W_UK / W_UV products
# (SPECULA_MLA_DOTS=4: mla_prep_uk's product in one wave of blocks at batch 1 instead of two).
# The kernel checks (among them mla_uv_in_merge, the merged W_UV against its own launch, and
# mla_prep_uk with four outputs a warp against the two launches, both bit for bit), GPU greedy =
# CPU greedy and lossless on the two random sparse fixtures by default and with both new forms,
# then V2-Lite batch 1 / 8 / 32 by default, with W_UV in the merge, with both new forms, and
# with SPECULA_SHARED=beside, interleaved (beside once); once with the tensor-core latent
# attention in decode too (SPECULA_MLA=mma: decode rows take the FMA form by default); stamps
# of both new forms at batch 1 (pack with STAMPS=1); Moonlight batch 1 / 8 by default and with
# both; if time is left, the default against beside at batch 64 and at prompts of 2048 and 8192.
# On an H200, the 8B's decode table (issue 18).
#
#   rm -rf devrun && NVRTC=/tmp/nvrtc/w/nvidia/cu13/lib STAMPS=1 bash scripts/devrun_pack.sh bin devrun
#   run: timeout 590 bash results/h200/step-2026-12-06/call10/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=430
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/check.log 2>&1
echo "check rc $? at $(el) s"
tail -3 $R/check.log
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
grep -v ",true," $R/kernel_checks.csv | head
grep -E "mla_uv_in_merge|mla_prep_uk" $R/kernel_checks.csv | cut -c1-200
for shape in tiny-deepseek-v3 tiny-deepseek-v2; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  for form in default new; do
    uv=apart dots=1; [ $form = new ] && uv=merge dots=4
    SPECULA_MLA_UV=$uv SPECULA_MLA_DOTS=$dots timeout 60 devrun/bin/specula gpu agree --target $R/fx/$shape/target \
      --draft $R/fx/$shape/draft --out $R/agree-$shape-$form > $R/agree-$shape-$form.log 2>&1
    echo "agree $shape $form rc $? at $(el) s"; tail -4 $R/agree-$shape-$form.log | cut -c1-200
    cp $R/agree-$shape-$form/agreement.csv $R/agreement_$shape-$form.csv 2>/dev/null; rm -rf $R/agree-$shape-$form
  done
done
rm -rf $R/fx
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  bench v2-default-$rep 40 $V2
  SPECULA_MLA_UV=merge bench v2-uvmerge-$rep 40 $V2
  SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 bench v2-both-$rep 40 $V2
  [ $rep = 1 ] && SPECULA_SHARED=beside bench v2-beside-$rep 40 $V2
done
SPECULA_MLA=mma bench v2-mla-mma 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
SPECULA_STAMPS=1 SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 bench v2-stamps-both 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32"
bench moon-default 40 $MOON
SPECULA_MLA_UV=merge SPECULA_MLA_DOTS=4 bench moon-both 40 $MOON
# If time is left: the stacked default against beside past the batch-1 case (batch 64, prompts of
# 2048 and 8192 at batch 1 / 8): stacked became the default on batch 1-32 at prompt 128 only.
CALL_BUDGET_S=470
LONG="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 16"
bench v2-long-default 60 $LONG --batch-sizes 1,8 --prompt-lens 2048,8192
SPECULA_SHARED=beside bench v2-long-beside 60 $LONG --batch-sizes 1,8 --prompt-lens 2048,8192
bench v2-b64-default 40 $LONG --batch-sizes 64
SPECULA_SHARED=beside bench v2-b64-beside 40 $LONG --batch-sizes 64
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
for f in $R/*_kernel_shares_b1_p128.csv; do echo "== $(basename $f)"; head -12 $f | cut -d, -f1-6; done
if grep -q H200 "$R/card.txt"; then
  CALL_BUDGET_S=520
  bench l8-1 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
fi
call_done
