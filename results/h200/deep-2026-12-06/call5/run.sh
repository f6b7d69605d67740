# Call 5: EMPTY right after the consumers' fragment reads (ed1395a, devrun/bin) against EMPTY after
# their steps (ff0440a, devrun/base; the same layouts and rule otherwise). Checks, lossless, cold
# timings of the producer layouts, the 8B step at batch 16 / 64 / 128 interleaved twice, and the
# stall samples of the producer qkv linear at 64 rows.
set -u
CALL_BUDGET_S=400
. scripts/gpu_call.sh
for d in base bin; do cat devrun/$d/PACKED.txt; done
gunzip -f devrun/base/*.gz; chmod +x devrun/base/*
cp devrun/bin/specula devrun/new-specula
timeout 130 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check.log | cut -c1-220; rm -rf $R/check
for sw in default wg1; do
  case $sw in default) E="";; wg1) E="SPECULA_LINEAR_WG=1";; esac
  env $E timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,16,64 --out $R/agree > $R/agree-llama-$sw.log 2>&1
  echo "agree tiny-llama ($sw) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-$sw.log) false $(grep -c 'lossless false' $R/agree-llama-$sw.log)"; rm -rf $R/agree
done
for d in base bin; do
  timeout 100 devrun/$d/specula-gpu-check $R/w --wgmma-timing --only=qkv:64,gate_up:64,down:96,down:128,qkv:384 > $R/wgmma_timing-$d.txt 2>&1; echo "wgmma timing ($d) rc $? at $(el) s"
  grep -E "rows|bits" $R/wgmma_timing-$d.txt | cut -c1-240; cp $R/w/wgmma_timing.csv $R/wgmma_timing-$d.csv 2>/dev/null; rm -rf $R/w
done
for rep in 1 2; do
  cp devrun/base/specula devrun/bin/specula; bench l8-base-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 16,64,128 --repeats 1 --max-new-tokens 32
  cp devrun/new-specula devrun/bin/specula; bench l8-new-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 16,64,128 --repeats 1 --max-new-tokens 32
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
k=linear_wg_1_32_2_4p_bf16
timeout 90 $NCU --cache-control all --clock-control none -k regex:"$k" --launch-count 10 --warp-sampling-interval 0 \
  --section WarpStateStats --section SourceCounters --page source --print-source sass --csv \
  devrun/bin/specula-gpu-check $R/w --wgmma-timing --only=qkv:64 > $R/sass_$k.csv 2>&1; echo "ncu rc $? at $(el) s"
python3 tools/gpu/ncu_sass_stalls.py $R/sass_$k.csv --top 20 > $R/stalls_$k.txt 2>&1; head -30 $R/stalls_$k.txt
gzip $R/sass_$k.csv; rm -rf $R/w
cp devrun/new-specula devrun/bin/specula
call_done
