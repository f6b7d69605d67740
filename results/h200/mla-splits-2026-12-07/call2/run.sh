# Call 2 (packed at the commit PACKED.txt names): the tensor-core form's merge in blocks of
# (row, head, 64 columns) (call 1: a block a (row, head) took 14 us a layer at 32 splits and 51 at
# 128, eating what more splits saved). Kernel checks (the merge's bits: mla_absorbed on tensor
# cores, mla_long_rows, mla_split_rule); the latent attention alone (specula-gpu-check
# --mla-timing: FMA and tensor cores under 32x1 / 64x2 / 128x1 / 128x2 / 128x4, 1 and 8 sequences,
# 512-32k keys); then V2-Lite at 8192 batch 1 under the rules, batch 8 under three, and gpu agree
# on the 16-head fixture with decode rows on tensor cores under 128 splits.
#
#   run: timeout 470 bash results/h200/mla-splits-2026-12-07/call2/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=400
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 100 "mla_split_rule|mla_long_rows|mla_absorbed.*tensor"
timeout 90 devrun/bin/specula-gpu-check "$R/mt" --mla-timing > "$R/mla_timing.log" 2>&1
echo "mla timing rc $? at $(el) s"
cp "$R/mt/mla_times.csv" "$R/" 2>/dev/null; rm -rf "$R/mt"
cat "$R/mla_timing.log" | cut -c1-100
M16=results/h200/mla-long-2026-12-07/mla16.json
SPECULA_MLA_LONG=64 SPECULA_MLA_SPLITS=128 agree $M16 mla16-128
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
for rule in 32 128x2 128x4 64x2; do
    SPECULA_MLA_SPLITS=$rule bench s$rule 35 $V2 --batch-sizes 1 --prompt-lens 8192
done
for f in $R/scaling_s*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,2,4,7,15,16 | tr '\n' ' ')"; done
for rule in 32 128x4 64x2; do
    SPECULA_MLA_SPLITS=$rule bench b8-$rule 60 $V2 --batch-sizes 8 --prompt-lens 8192
done
for f in $R/scaling_b8*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,2,4,7,15,16 | tr '\n' ' ')"; done
