# Call 11: main at 14e9589 (the bench's sizing and the launch-chain check refactored, same
# behaviour): kernel checks, and one bench over prompt 128 and 8192 at batch 1-64 whose first
# build does not fit an 80 GB card.
set -u
CALL_BUDGET_S=150
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 60 devrun/bin/specula-gpu-check $R/check --checks-only > $R/gpu_check.log 2>&1; echo "checks rc $? at $(el) s"
grep -E "FAIL|passed|ceilings|^launch_link" $R/gpu_check.log | cut -c1-200; grep -E " false " $R/gpu_check.log | cut -c1-200; rm -rf $R/check
bench l8-8192 120 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,64 --prompt-lens 8192 --repeats 1 --max-new-tokens 16
grep -E "skipped|sizing|rror" $R/l8-8192.log | cut -c1-240
call_done
