# Call 2 (packed at the commit PACKED.txt names; call 1's code, a shorter call for the device time
# left): the kernel checks (mla_long_rows, and the tensor-core form against the CPU reference),
# `gpu agree` on the 16-head latent fixture with the cut at 64 keys, then V2-Lite batch 1 at
# prompt 8192 with the default (rows of at least 1024 keys on tensor cores) against `off`.
#
#   run: timeout 230 bash results/h200/mla-long-2026-12-07/call2/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=170
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 100 "mla_long_rows|mla_absorbed|mla_batch_invariant"
M16=results/h200/mla-long-2026-12-07/mla16.json
SPECULA_MLA_LONG=64 agree $M16 mla16-from64
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32 --batch-sizes 1 --prompt-lens 8192"
bench v2-8192 50 $V2
SPECULA_MLA_LONG=off bench v2-8192-off 60 $V2
for f in $R/scaling_*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,11,16,18,19,20 $f; done
