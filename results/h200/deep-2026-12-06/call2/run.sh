# Call 2: the producer warpgroup (37cbaec, devrun/bin: linear_wg_producer.cu, SPECULA_WG_PRODUCER=1)
# against main's kernels (devrun/base: d09db12, whose engine layouts are main's machine code).
# Bits of every layout (checks), lossless on tiny-llama with every linear past 8 rows on the
# producer layouts, cold timings of every layout, then the 8B decode step at batch 32, 64 and 128,
# base / new / new with the producer, interleaved twice.
set -u
CALL_BUDGET_S=520
. scripts/gpu_call.sh
for d in base bin; do cat devrun/$d/PACKED.txt; done
gunzip -f devrun/base/*.gz; chmod +x devrun/base/*
cp devrun/bin/specula devrun/new-specula
timeout 130 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-220; rm -rf $R/check
SPECULA_LINEAR_WG=1 SPECULA_WG_PRODUCER=1 timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama-producer.log 2>&1
echo "agree tiny-llama (every wgmma, producer) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-producer.log) false $(grep -c 'lossless false' $R/agree-llama-producer.log)"; rm -rf $R/agree
timeout 120 devrun/bin/specula-gpu-check $R/w --wgmma-timing --only=qkv:64,o:64,down:64,gate_up:64,qkv:96,down:128 > $R/wgmma_timing.txt 2>&1; echo "wgmma timing rc $? at $(el) s"
grep -E "rows|bits" $R/wgmma_timing.txt | cut -c1-230; cp $R/w/wgmma_timing.csv $R/wgmma_timing.csv 2>/dev/null; rm -rf $R/w
for rep in 1 2; do
  cp devrun/base/specula devrun/bin/specula
  bench l8-base-$rep 45 --config bench/configs/llama-3.1-8b.json --batch-sizes 32,64,128 --repeats 1 --max-new-tokens 32
  cp devrun/new-specula devrun/bin/specula
  bench l8-new-$rep 45 --config bench/configs/llama-3.1-8b.json --batch-sizes 32,64,128 --repeats 1 --max-new-tokens 32
  SPECULA_WG_PRODUCER=1 bench l8-prod-$rep 45 --config bench/configs/llama-3.1-8b.json --batch-sizes 32,64,128 --repeats 1 --max-new-tokens 32
done
call_done
