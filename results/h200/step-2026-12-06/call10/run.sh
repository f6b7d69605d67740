# Call 10 (replaces call 9, which never ran): HEAD's defaults with no switch set (the shared
# experts stacked), and W_UV in the latent attention's merging blocks (SPECULA_MLA_UV=merge, new:
# one launch fewer a layer, the same bits). The kernel checks (among them mla_uv_in_merge: the
# merged W_UV against its own launch bit for bit, 7 rows over up to 1100 keys, bf16 and f32), GPU
# greedy = CPU greedy and lossless on the two random sparse fixtures by default and with W_UV in
# the merge, then V2-Lite batch 1 / 8 / 32 by default, with SPECULA_MLA_UV=merge and with
# SPECULA_SHARED=beside, interleaved twice (and once with the tensor-core latent attention in
# decode too, SPECULA_MLA=mma: decode rows take the FMA form by default); Moonlight batch 1 / 8
# by default and merged; stamps of
# the merged form at batch 1 (pack with STAMPS=1). On an H200, the 8B's decode table (issue 18).
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
grep "mla_uv_in_merge" $R/kernel_checks.csv | cut -c1-200
for shape in tiny-deepseek-v3 tiny-deepseek-v2; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  for uv in apart merge; do
    SPECULA_MLA_UV=$uv timeout 60 devrun/bin/specula gpu agree --target $R/fx/$shape/target \
      --draft $R/fx/$shape/draft --out $R/agree-$shape-$uv > $R/agree-$shape-$uv.log 2>&1
    echo "agree $shape $uv rc $? at $(el) s"; tail -4 $R/agree-$shape-$uv.log | cut -c1-200
    cp $R/agree-$shape-$uv/agreement.csv $R/agreement_$shape-$uv.csv 2>/dev/null; rm -rf $R/agree-$shape-$uv
  done
done
rm -rf $R/fx
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  bench v2-default-$rep 40 $V2
  SPECULA_MLA_UV=merge bench v2-uvmerge-$rep 40 $V2
  SPECULA_SHARED=beside bench v2-beside-$rep 40 $V2
done
SPECULA_MLA=mma bench v2-mla-mma 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
SPECULA_STAMPS=1 SPECULA_MLA_UV=merge bench v2-stamps-uvmerge 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
MOON="--config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32"
bench moon-default 40 $MOON
SPECULA_MLA_UV=merge bench moon-uvmerge 40 $MOON
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
for f in $R/*_kernel_shares_b1_p128.csv; do echo "== $(basename $f)"; head -12 $f | cut -d, -f1-6; done
if grep -q H200 "$R/card.txt"; then
  CALL_BUDGET_S=520
  bench l8-1 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
fi
call_done
