# Call 1 (packed at the commit PACKED.txt names): long decode and verification rows of the latent
# attention on tensor cores. The tensor-core kernel now walks a split's chunks with a running max
# (the FMA kernel's split rule: at most 32 splits a row; the splits merged in a launch of their
# own, a block a (row, head)), and a forward with tree rows takes it
# for its rows of at least SPECULA_MLA_LONG keys (default 1024; `off`: FMA as before), the other
# rows FMA, a row's form by its own key count. Kernel checks (mla_long_rows: mixed forms against
# each form's batch, bit for bit); `gpu agree` on a 16-head latent fixture (mla16.json: the
# tensor-core form fits) with the cut at 64 keys (rows cross it mid-generation), default and
# off, and the tiny V2; V2-Lite at 2048 / 8192 with the default against `off`, at 512 with
# the cut at 256 against `off`, and at prompt 128 (no row reaches 1024: unchanged).
#
#   run: timeout 330 bash results/h200/mla-long-2026-12-07/call1/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=250
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 100 "mla_long_rows|mla_absorbed|mla_batch_invariant"
M16=results/h200/mla-long-2026-12-07/mla16.json
SPECULA_MLA_LONG=64 agree $M16 mla16-from64
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32 --batch-sizes 1,8"
bench v2-long 100 $V2 --prompt-lens 2048,8192
SPECULA_MLA_LONG=off bench v2-long-off 130 $V2 --prompt-lens 2048,8192
SPECULA_MLA_LONG=256 bench v2-p512-256 40 $V2 --prompt-lens 512
SPECULA_MLA_LONG=off bench v2-p512-off 40 $V2 --prompt-lens 512
bench v2-p128 40 $V2
SPECULA_MLA_LONG=off agree $M16 mla16-off
agree tiny-deepseek-v2 tiny-deepseek-v2
for f in $R/scaling_*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,11,16,18,19,20 $f; done
