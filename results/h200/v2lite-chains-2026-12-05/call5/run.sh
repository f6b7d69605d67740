# Call 5: where the latent attention's and the routing's extra microsecond (call 3's profiles)
# comes from. Binaries: main at c140f80 (devrun/chains), main with the one-head blocks' merge
# as before (devrun/varB: mla_finish_split<0>, the early merge off, the query staging kept) and
# main without the slot table's first row (devrun/varC: c7055d5 reverted). Three profiled V2-Lite
# batch-1 forwards of each and two graph steps at batch 1, interleaved.
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
for d in chains varB varC; do [ -f devrun/$d/specula.gz ] && gunzip -f devrun/$d/specula.gz; chmod +x devrun/$d/specula; done
for rep in 1 2 3; do
  for d in chains varB varC; do
    cp devrun/$d/specula devrun/bin/specula
    SPECULA_GPU_PROFILE=1 bench v2lite-prof-$d-$rep 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 16
  done
done
for rep in 1 2; do
  for d in chains varB varC; do
    cp devrun/$d/specula devrun/bin/specula
    bench v2lite-b1-$d-$rep 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  done
done
call_done
