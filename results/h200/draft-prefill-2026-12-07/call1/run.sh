# Call 1 (devrun/bin: 3a63122; devrun/old: c59c4f2, the same without the pinned copies): the
# draft's catch-up over the prompts moved
# into the prefill (Drafter::prefill, `draft_prefill` spans), and the padded draft extend
# measured against the plain one now that SPECULA_DRAFT_PAD=off is read (state-2026-12-07
# call 2 ran padded throughout: the switch took only 0/1).
# Checks: the trained tiny DeepSeek-V3 pair with the padded extend on and off (the same tau
# expected), the kernel checks, gpu agree on the tiny V2. Figures: the 8B and V2-Lite at
# prompt 8192 (where the catch-up was most of draft_us_per_step), with V2-Lite's stamps there;
# pad on / off interleaved at prompt 128; the draft forward's outputs in page-locked copies
# waited for once (bin) against three pageable copies (old), interleaved; the 8B at prompt 128,
# batch 1-64.
#
#   run: timeout 470 bash results/h200/draft-prefill-2026-12-07/call1/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=380
. scripts/gpu_call.sh
chmod +x devrun/old/*
cat devrun/bin/PACKED.txt devrun/old/PACKED.txt
for pad in on off; do
    SPECULA_DRAFT_PAD=$pad timeout 60 devrun/bin/specula gpu agree --target models/tiny-deepseek-v3 \
        --draft models/tiny-deepseek-v3/eagle3-embed --out "$R/trained-pad-$pad" > "$R/trained-pad-$pad.log" 2>&1
    echo "trained pair, pad $pad: rc $? at $(el) s"; grep -E "warning|rror" "$R/trained-pad-$pad.log" | head -3
done
diff <(cut -d, -f1-12 "$R/trained-pad-on/agreement.csv") <(cut -d, -f1-12 "$R/trained-pad-off/agreement.csv") > /dev/null \
    && echo "trained pair: pad on and off agree in every column" || paste -d'\n' "$R/trained-pad-on/agreement.csv" "$R/trained-pad-off/agreement.csv" | head -12 | cut -c1-200
kernel_checks 60 "^top_k"
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
L8="--config bench/configs/llama-3.1-8b.json --repeats 1 --max-new-tokens 32"
SPECULA_STAMPS=1 bench v2-8192 90 $V2 --batch-sizes 1,8 --prompt-lens 8192
bench l8-8192 200 $L8 --batch-sizes 1,8,16,32 --prompt-lens 8192
for f in $R/scaling_*8192.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,11,15,16,17,18,19,20,21 $f; done
for round in 1 2; do
    for arm in bin old; do
        SPECULA_BIN=devrun/$arm/specula bench v2-$arm-$round 50 $V2 --batch-sizes 1,8
        SPECULA_BIN=devrun/$arm/specula bench l8-$arm-$round 40 $L8 --batch-sizes 1
    done
    SPECULA_DRAFT_PAD=off bench v2-padoff-$round 50 $V2 --batch-sizes 1,8
    SPECULA_DRAFT_PAD=off bench l8-padoff-$round 40 $L8 --batch-sizes 1
done
for f in $R/scaling_*-[12].csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,4,15,17,18,19,20 | tr '\n' ' ')"; done
bench l8-128 90 $L8 --batch-sizes 1,8,16,32,64
cut -d, -f1,2,4,7,15,16,17,18,19,20,21 $R/scaling_l8-128.csv
for f in $R/v2-8192_stamps_spec*.csv.gz; do echo "== $f"; python3 tools/gpu/stamps_host.py $f 2>&1 | tail -25; done
agree tiny-deepseek-v2 tiny-deepseek-v2
