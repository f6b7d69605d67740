# Call 2 (packed at the commit PACKED.txt names): where a speculative step waits for the host,
# and the split top-k log-probabilities.
# Call 1's stamps of a synthetic run (V2-Lite and the 8B, batch 1) put ~80 us after each draft
# forward's last kernel and 130-340 us after each verify's before the GPU worked again; the
# host marks (each span's begin and end, each step's finish) now place the host in that
# timeline. The draft's top-k log-probabilities split over chunks (SPECULA_TOPK=split, the
# default) against one block a row (block), interleaved. A 128-token run's stamps (batch 1 and
# 8): call 1's 32-token runs met each new draft-extend row count (an eager run, then a capture)
# inside the measured steps. Kernel checks (the new
# top_k_logprobs rows, split), gpu agree on the tiny V2.
#
#   run: timeout 400 bash results/h200/state-2026-12-07/call2/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=360
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32"
L8="--config bench/configs/llama-3.1-8b.json --repeats 1 --max-new-tokens 32"
SPECULA_STAMPS=1 bench v2-stamps 40 $V2 --batch-sizes 1
SPECULA_STAMPS=1 SPECULA_TOPK=block bench v2-stamps-block 40 $V2 --batch-sizes 1
SPECULA_STAMPS=1 bench l8-stamps 40 $L8 --batch-sizes 1
SPECULA_STAMPS=1 bench v2-stamps-128 60 --config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 128 --batch-sizes 1,8
for f in $R/*stamps_spec*.csv.gz; do echo "== $f"; python3 tools/gpu/stamps_host.py $f 2>&1 | head -40; done
kernel_checks 110 "top_k"
for round in 1 2; do
    for form in split block; do
        SPECULA_TOPK=$form bench v2-$form-$round 40 $V2 --batch-sizes 1,8
        SPECULA_TOPK=$form bench l8-$form-$round 30 $L8 --batch-sizes 1
    done
done
for f in $R/scaling_*-[12].csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,4,15,17,18,19 | tr '\n' ' ')"; done
agree tiny-deepseek-v2 tiny-deepseek-v2
