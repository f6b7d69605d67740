# Call 8: the wgmma rule read off call 7 (bin: past 32 rows long and wide weights on 2x64 with a
# producer, 2x32 at 65-96, qkv 1x32 at 49-64, o 2x32 at 65-96; before the eight tiles) against
# 9d63b6c (base: the rule before, same kernels). Lossless runs, then the 8B step at batch 8 / 16
# (verify of 48 / 96 rows) / 32 / 64 interleaved twice.
set -u
CALL_BUDGET_S=300
. scripts/gpu_call.sh
for d in base bin; do cat devrun/$d/PACKED.txt; done
gunzip -f devrun/base/*.gz; chmod +x devrun/base/*
cp devrun/bin/specula devrun/new-specula
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,8,16,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "agree tiny-llama rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log) false $(grep -c 'lossless false' $R/agree-llama.log)"; grep -iE "f32 GPU baseline vs CPU" $R/agree-llama.log | head -1; rm -rf $R/agree
L8="--config bench/configs/llama-3.1-8b.json --batch-sizes 8,16,32,64 --repeats 1 --max-new-tokens 32"
for rep in 1 2; do
  cp devrun/base/specula devrun/bin/specula; bench l8-base-$rep 50 $L8
  cp devrun/new-specula devrun/bin/specula; bench l8-new-$rep 50 $L8
done
cp devrun/new-specula devrun/bin/specula
call_done
