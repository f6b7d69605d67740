# Call 6: main with call 5's check fixed (the routing-norm check sliced its rows) and the norm in
# the routing in the routing's own 256-thread blocks (summing as the norm's 512 threads do, the
# same bits), no longer a 512-thread launch of its own. Call 5 found the
# shared experts stacked with the routed ones slower than beside (V2-Lite batch 1 2700 against
# 2650-2673 us, batch 32 67% of copy against 72.5%) and the norm in the routing slower still
# (2762-2784 us; the fused routing 12.8 us a layer in its stamps against 3.6 + 2.9 apart). Here:
# the whole kernel check run (call 5's stopped at the bad check), the kernels' registers and
# spills (cuobjdump), stamps of beside, stacked alone and stacked + norm at batch 1 (where the
# combine and the down go), beside against stacked + norm at batch 1 / 8 / 32 interleaved.
# On an H200, issue 18's 8B table after. (Not run in the session that wrote it: eight starts
# failed; the next session's first call, with this budget.)
set -u
CALL_BUDGET_S=420
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 200 devrun/bin/specula-gpu-check $R/check --checks-only > $R/check.log 2>&1
echo "check rc $? at $(el) s"
tail -5 $R/check.log
cp $R/check/kernel_checks.csv $R/kernel_checks.csv 2>/dev/null; rm -rf $R/check
grep -E "moe_route_normed|moe_combine_norm_attn|shared" $R/kernel_checks.csv | head -30
awk -F, 'NR>1 {n++} END {print n " check rows"}' $R/kernel_checks.csv
/usr/local/cuda/bin/cuobjdump --dump-resource-usage devrun/kernels/kernels-sm_90a-*.cubin 2>/dev/null \
  | grep -A1 -E "moe_route|moe_combine_norm_bf16|rms_norm_residual_bf16" | grep -E "Function|REG" | head -20
V2="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32"
V2B="--config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32"
SPECULA_SHARED=beside bench v2-beside-1 40 $V2B
SPECULA_SHARED=stacked SPECULA_ROUTE_NORM=fused bench v2-fused-1 40 $V2B
SPECULA_STAMPS=1 SPECULA_SHARED=stacked SPECULA_ROUTE_NORM=fused bench v2-stamps-fused 40 $V2
SPECULA_STAMPS=1 SPECULA_SHARED=stacked bench v2-stamps-stacked 40 $V2
SPECULA_SHARED=beside bench v2-beside-2 40 $V2B
SPECULA_SHARED=stacked SPECULA_ROUTE_NORM=fused bench v2-fused-2 40 $V2B
SPECULA_STAMPS=1 SPECULA_SHARED=beside bench v2-stamps-beside 40 $V2
if grep -q H200 "$R/card.txt"; then
  bench l8-1 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
  bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 16
  bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
  bench l8-8192 200 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
  grep -E "skipped|sizing" $R/l8-8192.log | cut -c1-240
fi
for f in $R/*_kernel_shares_b1_p128.csv; do echo "== $(basename $f)"; head -12 $f | cut -d, -f1-6; done
for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,17 | tr '\n' ' ')"; done
call_done
