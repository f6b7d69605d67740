# Call 2 (devrun/bin: 5a22c21, the pinned copies waited for; devrun/old: c59c4f2, the catch-up
# in the prefill with three pageable copies). Call 1's bin (3a63122) read the pinned copies
# without waiting (the context tracks no events, so their events were never recorded): the
# trained pair's tau fell from 3.4 to 1.06 and its draft timings were the race's. Here: the
# trained pair with the fix (pad on and off) and with old (the catch-up alone), then bin
# against old interleaved, then the 8B and V2-Lite at prompt 8192 with the fix.
#
#   run: timeout 300 bash results/h200/draft-prefill-2026-12-07/call2/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=230
. scripts/gpu_call.sh
chmod +x devrun/old/*
cat devrun/bin/PACKED.txt devrun/old/PACKED.txt
trained() {
    SPECULA_DRAFT_PAD=$2 timeout 60 devrun/$1/specula gpu agree --target models/tiny-deepseek-v3 \
        --draft models/tiny-deepseek-v3/eagle3-embed --out "$R/trained-$1-$2" > "$R/trained-$1-$2.log" 2>&1
    echo "trained pair, $1, pad $2: rc $? at $(el) s"
    cut -d, -f1-10 "$R/trained-$1-$2/agreement.csv" | sed -n '2,3p;5,9p'
}
trained bin on
trained old on
trained bin off
diff <(cut -d, -f1-12 "$R/trained-bin-on/agreement.csv") <(cut -d, -f1-12 "$R/trained-bin-off/agreement.csv") > /dev/null \
    && echo "trained pair: pad on and off agree in every column" || echo "trained pair: pad on and off differ"
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
L8="--config bench/configs/llama-3.1-8b.json --repeats 1 --max-new-tokens 32"
for round in 1 2; do
    for arm in bin old; do
        SPECULA_BIN=devrun/$arm/specula bench v2-$arm-$round 50 $V2 --batch-sizes 1,8
        SPECULA_BIN=devrun/$arm/specula bench l8-$arm-$round 40 $L8 --batch-sizes 1
    done
done
for f in $R/scaling_*-[12].csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,4,15,17,18,19,20 | tr '\n' ' ')"; done
bench l8-8192 120 $L8 --batch-sizes 1,8,16,32 --prompt-lens 8192
bench v2-8192 60 $V2 --batch-sizes 1,8 --prompt-lens 8192
for f in $R/scaling_*8192.csv; do echo "== $(basename $f)"; cut -d, -f1,2,4,7,11,15,16,17,18,19,20,21 $f; done
