# Call 4: main at the stamps commit. Each kernel's share of the replayed decode step, programmatic
# overlap included (SPECULA_STAMPS=1: every kernel stamps the global timer as its wait on the
# kernel before returns): DeepSeek-V2-Lite batch 1 / 8, Llama-3.1-8B batch 1 / 64, each beside
# the same bench without stamps (what the stamps cost).
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
for rep in 1 2; do
  unset SPECULA_STAMPS
  bench v2-plain-$rep 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
  export SPECULA_STAMPS=1
  bench v2-stamps-$rep 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
done
unset SPECULA_STAMPS
bench l8-plain 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,64 --repeats 1 --max-new-tokens 32
export SPECULA_STAMPS=1
bench l8-stamps 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,64 --repeats 1 --max-new-tokens 32
grep -h "stamps" $R/*.log | cut -c1-200
ls -la $R | head -40
call_done
