# Call 2 (packed at the commit PACKED.txt names): where a speculative step waits for the host.
# Call 1's stamps of a synthetic run (V2-Lite and the 8B, batch 1) put ~80 us after each draft
# forward's last kernel and 130-340 us after each verify's before the GPU worked again; the
# host marks (each span's begin and end, each step's finish) now place the host in that
# timeline. gpu agree on the tiny V2 (the recorder's marks are off there; a new kernel in the
# cubin).
#
#   run: timeout 200 bash results/h200/state-2026-12-07/call2/run.sh; cd $OUT && [ -d r ] && tar czf r.tgz r && rm -rf r
set -u
CALL_BUDGET_S=170
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
V2="--config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32 --batch-sizes 1"
SPECULA_STAMPS=1 bench v2-stamps 40 $V2
SPECULA_STAMPS=1 bench l8-stamps 40 --config bench/configs/llama-3.1-8b.json --repeats 1 --max-new-tokens 32 --batch-sizes 1
SPECULA_STAMPS=1 bench v2-stamps-b8 40 --config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32 --batch-sizes 8
agree tiny-deepseek-v2 tiny-deepseek-v2
