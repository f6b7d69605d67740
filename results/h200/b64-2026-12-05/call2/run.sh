# Call 2 (binaries of this commit's working tree in devrun/new: SPECULA_MMA_TRIGGER added, when the
# pipelined small-row kernel lets the next kernel launch): call 1's profile (eager, an event
# between operations, so no programmatic overlap) has eight tiles faster for o (1082 -> 774 us a
# step) and down (2233 -> 2050) at batch 64, yet in the graph the step was 1.4 ms slower. Here
# the step in the graph, interleaved twice: pipelined to 32 rows / eight tiles (64), each with the
# next kernel launched as the linear starts (the default) or after its wait (wait8, wait), and
# with programmatic launch off (SPECULA_PDL=0).
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
for b in specula specula-gpu-check; do gunzip -f devrun/new/$b.gz; chmod +x devrun/new/$b; done
cp devrun/new/specula devrun/bin/specula
SPECULA_MMA_PIPELINED=64 SPECULA_MMA_TRIGGER=wait timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-wait.log 2>&1
echo "agree wait rc $? true $(grep -c 'lossless true' $R/agree-wait.log) false $(grep -c 'lossless false' $R/agree-wait.log)"; rm -rf $R/agree
for rep in 1 2; do
  SPECULA_MMA_PIPELINED=32 bench r32-start-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 8,16,64 --repeats 1 --max-new-tokens 32
  SPECULA_MMA_PIPELINED=64 bench r64-start-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 64 --repeats 1 --max-new-tokens 32
  SPECULA_MMA_PIPELINED=64 SPECULA_MMA_TRIGGER=wait8 bench r64-wait8-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 64 --repeats 1 --max-new-tokens 32
  SPECULA_MMA_PIPELINED=32 SPECULA_MMA_TRIGGER=wait bench r32-wait-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 8,16,64 --repeats 1 --max-new-tokens 32
  SPECULA_MMA_PIPELINED=32 SPECULA_PDL=0 bench r32-pdl0-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 64 --repeats 1 --max-new-tokens 32
  SPECULA_MMA_PIPELINED=64 SPECULA_PDL=0 bench r64-pdl0-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 64 --repeats 1 --max-new-tokens 32
done
call_done
