# Call 2 (packed at the commit PACKED.txt names: the catch-up in the prefill; the pinned output
# copies behind SPECULA_DRAFT_PINNED, off by default, now waited for). Call 1's binary read the
# pinned copies without waiting (the context tracks no events, so their events were never
# recorded): the trained pair's tau fell from 3.4 to 1.06 and its draft timings were the
# race's. Here: the trained pair by default (pageable copies) with the padded extend on and
# off, and with SPECULA_DRAFT_PINNED=on; then pinned on against off interleaved; then the 8B
# at prompt 8192. The session had ~290 s of device time left: a short call.
#
#   run: timeout 200 bash results/h200/draft-prefill-2026-12-07/call2/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=120
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
trained() {
    env "$@" timeout 40 devrun/bin/specula gpu agree --target models/tiny-deepseek-v3 \
        --draft models/tiny-deepseek-v3/eagle3-embed --out "$R/trained-$1" > "$R/trained-$1.log" 2>&1
    echo "trained pair, $*: rc $? at $(el) s"
    cut -d, -f1-10 "$R/trained-$1/agreement.csv" | sed -n '2,3p;5,9p'
}
trained SPECULA_DRAFT_PAD=on
trained SPECULA_DRAFT_PINNED=on
trained SPECULA_DRAFT_PAD=off
diff <(cut -d, -f1-12 "$R/trained-SPECULA_DRAFT_PAD=on/agreement.csv") <(cut -d, -f1-12 "$R/trained-SPECULA_DRAFT_PAD=off/agreement.csv") > /dev/null \
    && echo "trained pair: pad on and off agree in every column" || echo "trained pair: pad on and off differ"
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
L8="--config bench/configs/llama-3.1-8b.json --repeats 1 --max-new-tokens 32"
for round in 1 2; do
    for p in off on; do
        SPECULA_DRAFT_PINNED=$p bench v2-pinned-$p-$round 30 $V2 --batch-sizes 1,8
    done
done
for f in $R/scaling_*-[12].csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,4,15,17,18,19,20 | tr '\n' ' ')"; done
bench l8-8192 70 $L8 --batch-sizes 1,8 --prompt-lens 8192
for f in $R/scaling_*8192.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,11,15,16,17,18,19,20,21 $f; done
