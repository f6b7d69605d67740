# Call 2 (packed at the commit PACKED.txt names; repack at HEAD first): where a speculative step
# waits for the host, the split top-k log-probabilities and the padded draft extend.
# Call 1's stamps of a synthetic run (V2-Lite and the 8B, batch 1) put ~80 us after each draft
# forward's last kernel and 106-896 us from each verify's last kernel to the next extend (the
# most where the extend's row count was new: a graph per count); the host marks (each span's
# begin and end, each step's finish) now place the host in that timeline. The draft's top-k
# log-probabilities split over chunks (SPECULA_TOPK=split, the default) against one block a
# row; the padded extend (SPECULA_DRAFT_PAD, on by default) against off, interleaved; the
# warm-up now as long as the measured runs. Checks: the kernel checks (the new top_k_logprobs
# rows); the trained tiny DeepSeek-V3 pair on the GPU with the padded extend on and off (the
# same tau: a padded extend proposes what the plain one does); gpu agree on the tiny V2.
#
#   run: timeout 590 bash results/h200/state-2026-12-07/call2/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
L8="--config bench/configs/llama-3.1-8b.json --repeats 1 --max-new-tokens 32"
for pad in on off; do
    SPECULA_DRAFT_PAD=$pad timeout 60 devrun/bin/specula gpu agree --target models/tiny-deepseek-v3 \
        --draft models/tiny-deepseek-v3/eagle3-embed --out "$R/trained-pad-$pad" > "$R/trained-pad-$pad.log" 2>&1
    echo "trained pair, pad $pad: rc $? at $(el) s"; grep -E "tau" "$R/trained-pad-$pad.log" | head -12 | cut -c1-160
done
SPECULA_STAMPS=1 bench v2-stamps 60 $V2 --batch-sizes 1
SPECULA_STAMPS=1 bench l8-stamps 60 $L8 --batch-sizes 1
SPECULA_STAMPS=1 bench v2-stamps-128 90 --config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 128 --batch-sizes 1,8
for f in $R/*stamps_spec*.csv.gz; do echo "== $f"; python3 tools/gpu/stamps_host.py $f 2>&1 | head -40; done
kernel_checks 110 "top_k"
for round in 1 2; do
    for form in "split on" "block on" "split off"; do
        set -- $form
        SPECULA_TOPK=$1 SPECULA_DRAFT_PAD=$2 bench v2-$1-$2-$round 60 $V2 --batch-sizes 1,8
        SPECULA_TOPK=$1 SPECULA_DRAFT_PAD=$2 bench l8-$1-$2-$round 45 $L8 --batch-sizes 1
    done
done
for f in $R/scaling_*-[12].csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,4,15,17,18,19 | tr '\n' ' ')"; done
agree tiny-deepseek-v2 tiny-deepseek-v2
