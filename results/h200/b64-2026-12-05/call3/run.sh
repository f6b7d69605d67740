# Call 3 (binaries of this commit's working tree in devrun/new: SPECULA_MMA_IN_ORDER, pipelined
# launches of at least N token tiles start in stream order, not as programmatic dependents).
# Call 2: eight tiles make the batch-64 graph step 15% slower with programmatic launch and 5%
# faster without it (SPECULA_PDL=0 everywhere), and moving the linear's trigger did nothing. Here,
# interleaved twice, batch 1-64: pipelined to 32 rows (default), eight tiles launched in order
# (64 / 8), the two- and four-tile launches in order too (32 / 2), and eight tiles with every
# pipelined launch in order (64 / 1).
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
for b in specula specula-gpu-check; do gunzip -f devrun/new/$b.gz; chmod +x devrun/new/$b; done
cp devrun/new/specula devrun/bin/specula
SPECULA_MMA_PIPELINED=64 SPECULA_MMA_IN_ORDER=1 timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-in-order.log 2>&1
echo "agree in order rc $? true $(grep -c 'lossless true' $R/agree-in-order.log) false $(grep -c 'lossless false' $R/agree-in-order.log)"; rm -rf $R/agree
for rep in 1 2; do
  for c in 32/off 64/8 32/2 64/1; do
    SPECULA_MMA_PIPELINED=${c%/*} SPECULA_MMA_IN_ORDER=${c#*/} bench r${c%/*}-order${c#*/}-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  done
done
call_done
