# Call 3: main with the producer form picked (6f0dde1, devrun/bin) against the kernels before it
# (devrun/base: d09db12, main's engine layouts' machine code): checks, lossless runs (default, every
# linear past 8 rows on wgmma with and without the producer), cold timings of the new producer
# layouts, then issue 18's table interleaved base / new, and issue 16's rows.
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
for d in base bin; do cat devrun/$d/PACKED.txt; done
gunzip -f devrun/base/*.gz; chmod +x devrun/base/*
cp devrun/bin/specula devrun/new-specula
timeout 130 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-220
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
for sw in default wg1 wg1-p0; do
  case $sw in default) E="";; wg1) E="SPECULA_LINEAR_WG=1";; wg1-p0) E="SPECULA_LINEAR_WG=1 SPECULA_WG_PRODUCER=0";; esac
  env $E timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama-$sw.log 2>&1
  echo "agree tiny-llama ($sw) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-$sw.log) false $(grep -c 'lossless false' $R/agree-llama-$sw.log)"; rm -rf $R/agree
done
timeout 120 devrun/bin/specula-gpu-check $R/w --wgmma-timing --only=qkv:64,qkv:96,down:96,gate_up:96,down:128,gate_up:128,qkv:384,gate_up:384 > $R/wgmma_timing.txt 2>&1; echo "wgmma timing rc $? at $(el) s"
grep -E "rows|bits" $R/wgmma_timing.txt | cut -c1-230; cp $R/w/wgmma_timing.csv $R/wgmma_timing.csv 2>/dev/null; rm -rf $R/w
L8="--config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  cp devrun/base/specula devrun/bin/specula; bench l8-base-$rep 45 $L8
  cp devrun/new-specula devrun/bin/specula; bench l8-new-$rep 45 $L8
done
for d in base new; do
  if [ $d = base ]; then cp devrun/base/specula devrun/bin/specula; else cp devrun/new-specula devrun/bin/specula; fi
  bench l8-big-$d 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 8
  bench l8-8192-$d 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 16
done
bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
bench v2lite 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
cp devrun/new-specula devrun/bin/specula
call_done
