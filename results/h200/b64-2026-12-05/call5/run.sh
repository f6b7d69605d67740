# Call 5: call 4's default (one column tile a block) ran batch 16-64 2-4% slower than call 3's
# binary did on another machine; here the two binaries in one call, interleaved twice: 6ae60a1
# (devrun/base: eight tiles in order, one column tile a block, the kernel before the groups
# change) against this tree (devrun/new) with SPECULA_MMA_GROUPS=1 and 2.
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
for d in base new; do for b in specula specula-gpu-check; do gunzip -f devrun/$d/$b.gz; chmod +x devrun/$d/$b; done; done
for rep in 1 2; do
  for c in base/1 new/1 new/2; do
    cp devrun/${c%/*}/specula devrun/bin/specula
    SPECULA_MMA_GROUPS=${c#*/} bench ${c%/*}-g${c#*/}-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  done
done
call_done
