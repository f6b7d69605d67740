# Call 9: the 8B at batch 16 / 32 with the default forms against SPECULA_LINEAR_TILES=64 (the
# wide weights, gate|up and the LM head, on the small-row kernel's pipelined tiles up to 64 rows
# instead of the tiled kernel past 16: 2.8-3.7% faster at batch 32 on an H100 before the compact
# tiled end, results/h200/tables-2026-12-06 call 3). Call 8's binary, its default forms (main's).
set -u
CALL_BUDGET_S=150
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
for rep in 1 2 3; do
  bench l8-default-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 16,32 --repeats 1 --max-new-tokens 32
  SPECULA_LINEAR_TILES=64 bench l8-tiles64-$rep 40 --config bench/configs/llama-3.1-8b.json --batch-sizes 16,32 --repeats 1 --max-new-tokens 32
done
call_done
