# Two forms from branch wip (f8b3a37, packed as devrun/wgr): the resident-token
# warpgroup-mma linear (SPECULA_LINEAR_WGR=1 at 33-64 rows) and the q|k|v projection with RoPE and
# the KV append as its epilogue (default; SPECULA_QKV_ROPE=0 the two launches). Checks (every wgr
# layout and window against rows alone and batches of 1-511; the fused epilogue bit for bit
# against the two launches), each 8B projection at 48 and 64 rows alone, tiny-llama lossless by
# default and with SPECULA_LINEAR_WGR=1, then the 8B step interleaved: RoPE epilogue off/on at
# batch 1, 8, 16, 32; the wgr linear off/on at batch 8 (verify of 48 rows) and 64.
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
for b in specula specula-gpu-check; do gunzip -f devrun/wgr/$b.gz; chmod +x devrun/wgr/$b; done
cp devrun/wgr/specula devrun/bin/specula
T=devrun/wgr/specula-gpu-check
timeout 200 $T $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed" $R/gpu_check.log | cut -c1-200 | head -4; grep -E "linear_wgr|qkv_rope|false" $R/gpu_check.log | cut -c1-200
cp $R/check/kernel_checks.csv $R/ 2>/dev/null; rm -rf $R/check
timeout 150 $T $R --wgmma-timing --only=qkv:48,o:48,down:48,gate_up:48,qkv:64,o:64,down:64,gate_up:64 > $R/wgmma_timing.log 2>&1; echo "timing rc $? at $(el) s"
grep -E "^(qkv|o |down|gate)" $R/wgmma_timing.log
for r in 48 64; do grep -E "^[a-z_]+,[0-9]+,[0-9]+,$r,(engine|wgr)" $R/wgmma_timing.csv | sort -t, -k7 -n | head -40; done
for v in 0 1; do
  SPECULA_LINEAR_WGR=$v timeout 90 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,64 --out $R/agree > $R/agree-wgr$v.log 2>&1
  echo "agree wgr=$v rc $? true $(grep -c 'lossless true' $R/agree-wgr$v.log) false $(grep -c 'lossless false' $R/agree-wgr$v.log)"
  grep -iE "f32 GPU baseline vs CPU|graphs vs eager, baseline" $R/agree-wgr$v.log | head -2; rm -rf $R/agree
done
for rep in 1 2; do
  for v in 0 1; do
    SPECULA_QKV_ROPE=$v bench l8-rope$v-$rep 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32 --repeats 1 --max-new-tokens 64
  done
done
for rep in 1 2; do
  for v in 0 1; do
    SPECULA_LINEAR_WGR=$v bench l8-wgr$v-$rep 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 8,64 --repeats 1 --max-new-tokens 64
  done
done
call_done
