# Call 3 (packed at the commit PACKED.txt names): the default split rule of tree forwards now
# 128x2 (at most 128 splits of at least two 32-key chunks; prefill keeps 32x1), the scratch
# sized for either form. Kernel checks; the latent attention alone with the cache read from
# memory (--mla-timing); gpu agree (tiny V2, f32 and bf16; the 16-head fixture with decode rows on
# tensor cores); V2-Lite batch 1/8 at prompts 512/2048/8192 and batch 32 at 2048, the default
# against SPECULA_MLA_SPLITS=32 (the rule before); Moonlight batch 1 at 8192, both.
#
#   run: timeout 500 bash results/h200/mla-splits-2026-12-07/call3/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=430
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
kernel_checks 100 "mla_split_rule|mla_long_rows|mla_absorbed.*tensor"
timeout 120 devrun/bin/specula-gpu-check "$R/mt" --mla-timing > "$R/mla_timing.log" 2>&1
echo "mla timing rc $? at $(el) s"
cp "$R/mt/mla_times.csv" "$R/" 2>/dev/null; rm -rf "$R/mt"
cut -c1-100 "$R/mla_timing.log"
agree tiny-deepseek-v2 tiny-deepseek-v2
SPECULA_MLA_LONG=64 agree results/h200/mla-long-2026-12-07/mla16.json mla16-from64
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
bench v2 110 $V2 --batch-sizes 1,8 --prompt-lens 512,2048,8192
SPECULA_MLA_SPLITS=32 bench v2-32 110 $V2 --batch-sizes 1,8 --prompt-lens 512,2048,8192
for f in $R/scaling_v2*.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,11,15,16,20 $f; done
bench v2-b32 50 $V2 --batch-sizes 32 --prompt-lens 2048
SPECULA_MLA_SPLITS=32 bench v2-b32-32 50 $V2 --batch-sizes 32 --prompt-lens 2048
MOON="--config bench/configs/moonlight-16b-a3b.json --repeats 1 --max-new-tokens 32 --batch-sizes 1 --prompt-lens 8192"
bench moon 40 $MOON
SPECULA_MLA_SPLITS=32 bench moon-32 40 $MOON
for f in $R/scaling_v2-b32*.csv $R/scaling_moon*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,2,4,7,11,15,16,20 | tr '\n' ' ')"; done
