# Call 4: what the wgmma linear's token transpose costs. devrun/bin = main (3031b8d); devrun/xp =
# branch wg-notranspose (the same kernels but the wgmma linear skips its per-stage token
# transpose and the barrier after it: wrong bits, the time of a loop whose tokens would arrive in
# the wgmma layout). Cold timings of the 64-row linears that run on wgmma, then the 8B batch-64
# decode step (the only decode step with wgmma linears), interleaved twice.
set -u
CALL_BUDGET_S=200
. scripts/gpu_call.sh
for d in bin xp; do cat devrun/$d/PACKED.txt; done
gunzip -f devrun/xp/*.gz; chmod +x devrun/xp/*
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
cp devrun/main-specula devrun/bin/specula
call_done
