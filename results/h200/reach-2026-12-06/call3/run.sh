# Call 3: main at 24495de plus (devrun/bin) the launch ceiling (a chain of dependent launches
# with no work: `launch_link`, its order a kernel check) and the shared experts' weights asked
# of L2 during the latent attention (`prefetch_l2_weights` on the side stream;
# SPECULA_WARM_SHARED=0 leaves it out). Checks and lossless runs, then V2-Lite / Moonlight with
# and without the warm interleaved, V2-Lite under each PDL switch (each bench prints the launch
# ceiling of its own switch), the 8B table with o past 96 rows on wgmma, and prompt 8192 at batch
# 1-64 through the bench's sizing of a first build that does not fit.
set -u
CALL_BUDGET_S=500
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed|ceilings" $R/gpu_check.log | cut -c1-220 | head -4; grep -E " false |launch_link" $R/gpu_check.log | cut -c1-220; cp $R/check/*.csv $R/ 2>/dev/null; rm -rf $R/check
for shape in tiny-deepseek-v3 tiny-kimi-k25; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 60 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-$shape.log), false $(grep -c 'lossless false' $R/agree-$shape.log)"; grep -iE "f32 GPU baseline" $R/agree-$shape.log | head -1; rm -rf $R/agree
done
rm -rf $R/fx
for rep in 1 2; do
  SPECULA_WARM_SHARED=0 bench v2lite-cold-$rep 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  bench v2lite-warm-$rep 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  SPECULA_WARM_SHARED=0 bench moonlight-cold-$rep 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
  bench moonlight-warm-$rep 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
done
for pdl in 0 late; do
  SPECULA_PDL=$pdl bench v2lite-pdl-$pdl 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
  grep -h ceilings $R/v2lite-pdl-$pdl.log
done
grep -h ceilings $R/v2lite-warm-1.log
bench l8 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
bench l8-8192 150 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 16
grep -E "skipped|sizing" $R/l8-8192.log | cut -c1-240
call_done
