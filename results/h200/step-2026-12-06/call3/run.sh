# Call 3: main at 9fa314c. The grouped experts with k split to fill more warp slots
# (SPECULA_MOE_WARPS: 1056 splits the routed down of V2-Lite / Moonlight in two, 1536 also the
# gate|up), against the default (768), interleaved twice: DeepSeek-V2-Lite batch 1 / 8 / 32,
# Moonlight batch 1. Then the kernel checks with 1536 (the grouped rows against the CPU, bits
# across row counts).
set -u
CALL_BUDGET_S=470
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
w() { if [ "$1" = def ]; then unset SPECULA_MOE_WARPS; else export SPECULA_MOE_WARPS=$1; fi; }
for rep in 1 2; do
  for v in def 1056 1536; do
    w $v; bench v2-$v-$rep 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
  done
done
for v in def 1536; do
  w $v; bench moon-$v 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
done
w 1536
[ "$(el)" -lt 430 ] && { timeout 150 devrun/bin/specula-gpu-check $R/check --checks-only > $R/check.log 2>&1; echo "check rc $? at $(el) s"; grep -iE "moe|passed|failed|checks" $R/check.log | tail -30; }
call_done
