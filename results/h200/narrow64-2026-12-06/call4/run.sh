# Call 4: what the wgmma linear's token transpose costs. devrun/bin = main (3031b8d); devrun/xp =
# branch wg-notranspose (the same kernels but the wgmma linear skips its per-stage token
# transpose and the barrier after it: wrong bits, the time of a loop whose tokens would arrive in
# the wgmma layout). Cold timings of the 64-row linears that run on wgmma, then the 8B batch-64
# decode step (the only decode step with wgmma linears), interleaved twice. Then devrun/sl =
# branch stage-loads (3c57561: main with the two kernels' cp.async side as one struct, the same
# loads in the same order but other machine code): its checks, tiny-llama lossless, and its
# batch-32/64 steps against main's.
set -u
CALL_BUDGET_S=240
. scripts/gpu_call.sh
for d in bin xp sl; do cat devrun/$d/PACKED.txt; done
gunzip -f devrun/xp/*.gz devrun/sl/*.gz; chmod +x devrun/xp/* devrun/sl/*
cp devrun/bin/specula devrun/main-specula
for d in bin xp; do
  timeout 60 devrun/$d/specula-gpu-check $R/w --wgmma-timing --only=qkv:64,gate_up:64,down:64,qkv:96 > $R/wgmma_timing-$d.txt 2>&1; echo "wgmma timing ($d) rc $? at $(el) s"
  grep -E "rows|bits" $R/wgmma_timing-$d.txt | cut -c1-230; cp $R/w/wgmma_timing.csv $R/wgmma_timing-$d.csv 2>/dev/null; rm -rf $R/w
done
for rep in 1 2; do
  for d in main xp; do
    if [ $d = main ]; then cp devrun/main-specula devrun/bin/specula; else cp devrun/xp/specula devrun/bin/specula; fi
    bench l8-$d-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 64 --repeats 1 --max-new-tokens 32
  done
done
timeout 100 devrun/sl/specula-gpu-check $R/check --checks-only > $R/gpu_check-sl.log 2>&1; echo "checks (sl) rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check-sl.log | cut -c1-200 | head -4; grep -E " false " $R/gpu_check-sl.log | cut -c1-220; rm -rf $R/check
timeout 60 devrun/sl/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama-sl.log 2>&1
echo "agree tiny-llama (sl) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-sl.log) false $(grep -c 'lossless false' $R/agree-llama-sl.log)"; rm -rf $R/agree
SPECULA_LINEAR_WG=1 timeout 60 devrun/sl/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-llama-sl-wg.log 2>&1
echo "agree tiny-llama (sl, every wgmma) rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama-sl-wg.log) false $(grep -c 'lossless false' $R/agree-llama-sl-wg.log)"; rm -rf $R/agree
for d in main sl; do
  if [ $d = main ]; then cp devrun/main-specula devrun/bin/specula; else cp devrun/sl/specula devrun/bin/specula; fi
  bench l8-$d-b32 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 32,64 --repeats 1 --max-new-tokens 32
done
cp devrun/main-specula devrun/bin/specula
call_done
