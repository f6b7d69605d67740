# Call 6: the compact tiled-linear end (80ea7ad, devrun/bin) against 683ed09 (devrun/mid: qkv at
# 193-384 rows on 2x32 with a producer) and ff0440a (devrun/base: without that rule); the three
# share their layouts otherwise, and base and mid their kernels. Checks and lossless runs of the
# new end, cold timings (new and mid), the 8B step at batch 16-128 interleaved twice, 256 once.
set -u
CALL_BUDGET_S=420
. scripts/gpu_call.sh
for d in base mid bin; do cat devrun/$d/PACKED.txt; done
gunzip -f devrun/base/*.gz devrun/mid/*.gz; chmod +x devrun/base/* devrun/mid/*
cp devrun/bin/specula devrun/new-specula
timeout 130 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
for sw in default wg1 tiles1; do
  case $sw in default) E="";; wg1) E="SPECULA_LINEAR_WG=1";; tiles1) E="SPECULA_LINEAR_WG=0 SPECULA_LINEAR_TILES=1";; esac
  env $E timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,16,64 --out $R/agree > $R/agree-llama-$sw.log 2>&1
  echo "agree tiny-llama ($sw) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-$sw.log) false $(grep -c 'lossless false' $R/agree-llama-$sw.log)"; grep -iE "f32 GPU baseline vs CPU" $R/agree-llama-$sw.log | head -1; rm -rf $R/agree
done
for shape in tiny-deepseek-v3 tiny-qwen3-moe; do
  devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 60 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree > $R/agree-$shape.log 2>&1
  echo "agree $shape rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-$shape.log), false $(grep -c 'lossless false' $R/agree-$shape.log)"; rm -rf $R/agree
done
rm -rf $R/fx
for d in mid bin; do
  timeout 100 devrun/$d/specula-gpu-check $R/w --wgmma-timing --only=qkv:64,gate_up:64,down:96,gate_up:128,qkv:384 > $R/wgmma_timing-$d.txt 2>&1; echo "wgmma timing ($d) rc $? at $(el) s"
  grep -E "rows|bits" $R/wgmma_timing-$d.txt | cut -c1-240; cp $R/w/wgmma_timing.csv $R/wgmma_timing-$d.csv 2>/dev/null; rm -rf $R/w
done
L8="--config bench/configs/llama-3.1-8b.json --batch-sizes 16,32,64,128 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  for d in base mid new; do
    if [ $d = new ]; then cp devrun/new-specula devrun/bin/specula; else cp devrun/$d/specula devrun/bin/specula; fi
    bench l8-$d-$rep 50 $L8
  done
done
for d in base new; do
  if [ $d = new ]; then cp devrun/new-specula devrun/bin/specula; else cp devrun/$d/specula devrun/bin/specula; fi
  bench l8-256-$d 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 256 --repeats 1 --max-new-tokens 8
done
cp devrun/new-specula devrun/bin/specula
call_done
