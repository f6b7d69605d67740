# Call 3 (devrun/bin = 3031b8d: the lean stage loops as the wgmma and tiled linears, wide weights
# in the small-row kernel to 32 rows): checks and lossless runs of main as it now stands; the 8B
# decode step at batch 1-64 against the rule before (SPECULA_WIDE_RULE=old), interleaved twice;
# the rest of issue 18's table and issue 16's; Nsight Compute's stall samples of the qkv linear
# at 64 rows (wgmma, one warpgroup x 32 tokens, early transpose).
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "agree tiny-llama rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log) false $(grep -c 'lossless false' $R/agree-llama.log)"; rm -rf $R/agree
for shape in tiny-deepseek-v3 tiny-qwen3-moe; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 60 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-$shape.log), false $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "f32 GPU baseline vs CPU|rror" $R/agree-$shape.log | head -2; rm -rf $R/agree
done
rm -rf $R/fx
L8="--config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  bench l8-new-$rep 45 $L8
  SPECULA_WIDE_RULE=old bench l8-old-$rep 45 $L8
done
bench l8-8192 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
bench l8-8192-b8 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 8 --prompt-lens 8192 --repeats 1 --max-new-tokens 16
bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 8
bench v2lite 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
SI=--sampling-interval; $NCU --help 2>/dev/null | grep -q -- --warp-sampling-interval && SI=--warp-sampling-interval
echo "== ncu stall samples ($SI) at $(el) s"
k=linear_wg_1_32_2_4e_bf16
timeout 90 $NCU --cache-control all --clock-control none -k regex:"$k" --launch-count 10 $SI 0 \
  --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
  devrun/bin/specula-gpu-check $R/w --wgmma-timing --only=qkv:64 > $R/sass_$k.csv 2>&1; echo "ncu rc $? at $(el) s"
python3 tools/gpu/ncu_sass_stalls.py $R/sass_$k.csv --top 30 > $R/stalls_$k.txt 2>&1; head -50 $R/stalls_$k.txt
grep -m3 -i "error\|unrecognized" $R/sass_$k.csv
gzip $R/sass_$k.csv; rm -rf $R/w
call_done
