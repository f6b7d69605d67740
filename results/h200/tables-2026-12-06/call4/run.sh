# Call 4 (main): call 3's one lead on the card the goals are set on: SPECULA_LINEAR_TILES=64 (at
# a decode step of 17-32 rows this puts the wide weights, gate|up and the LM head, on the
# pipelined small-row kernel instead of the tiled one; every other linear of such a step keeps
# its form) against the default, the 8B at batch 16 and 32, interleaved three times.
set -u
CALL_BUDGET_S=100
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
L8="--config bench/configs/llama-3.1-8b.json --batch-sizes 16,32 --repeats 1 --max-new-tokens 32"
for rep in 1 2 3; do
  bench t-default-$rep 30 $L8
  SPECULA_LINEAR_TILES=64 bench t-tiles64-$rep 30 $L8
done
call_done
