# Call 1 (packed at the commit PACKED.txt names): how many splits a long row of the tensor-core
# latent attention should have. The kernel now takes its split rule as arguments
# (SPECULA_MLA_SPLITS: at most N splits, of at least M chunks with NxM; default 32, the FMA
# rule). V2-Lite batch 1 at prompt 8192 under each rule, with stamps (per-kernel time) for the
# default and 128x2; batch 8 at 8192 and batch 1/8 at 2048 for the default against 128x2 and 64x2;
# the kernel checks (mla_split_rule: 128 one-chunk splits and 8 splits of five chunks against the
# CPU, each row alone against the batch); gpu agree on the 16-head fixture with every decode row on
# tensor cores under 128 splits.
#
#   run: timeout 470 bash results/h200/mla-splits-2026-12-07/call1/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=420
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
SPECULA_STAMPS=1 bench s32-stamps 45 $V2 --batch-sizes 1 --prompt-lens 8192
SPECULA_MLA_SPLITS=128x2 SPECULA_STAMPS=1 bench s128x2-stamps 45 $V2 --batch-sizes 1 --prompt-lens 8192
for f in $R/*_kernel_shares_*.csv; do echo "== $(basename $f)"; head -8 $f | cut -d, -f1,2,4,5,6; done
for rule in 128 64x2 128x4 64; do
    SPECULA_MLA_SPLITS=$rule bench s$rule 35 $V2 --batch-sizes 1 --prompt-lens 8192
done
bench s32 35 $V2 --batch-sizes 1 --prompt-lens 8192
for f in $R/scaling_s*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,2,4,7,15,16 | tr '\n' ' ')"; done
kernel_checks 100 "mla_split_rule|mla_long_rows"
M16=results/h200/mla-long-2026-12-07/mla16.json
SPECULA_MLA_LONG=64 SPECULA_MLA_SPLITS=128 agree $M16 mla16-128
for rule in 32 128x2 64x2; do
    SPECULA_MLA_SPLITS=$rule bench b8-$rule 60 $V2 --batch-sizes 8 --prompt-lens 8192
done
for rule in 32 128x2; do
    SPECULA_MLA_SPLITS=$rule bench p2048-$rule 45 $V2 --batch-sizes 1,8 --prompt-lens 2048
done
for f in $R/scaling_b8*.csv $R/scaling_p2048*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,2,4,7,15,16 | tr '\n' ' ')"; done
