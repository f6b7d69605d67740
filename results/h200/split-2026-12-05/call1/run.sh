# Where a replayed decode step's time goes between the host and the graph: the throwaway
# ../split.patch on main 919e696 (devrun/split/specula; main's kernels) records CUDA events
# before the batch's copies, before the graph launch, after it and after the outputs' download
# (SPECULA_REPLAY_SPLIT=1), and prints the means per forward size every 16 replays.
set -u
CALL_BUDGET_S=200
. scripts/gpu_call.sh
gunzip -f devrun/split/specula.gz; chmod +x devrun/split/specula; cp devrun/split/specula devrun/bin/specula
SPECULA_REPLAY_SPLIT=1 bench l8 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 64
grep "replay split" $R/l8.log | tail -12
bench l8-plain 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,64 --repeats 1 --max-new-tokens 64
SPECULA_REPLAY_SPLIT=1 bench v2 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 64
grep "replay split" $R/v2.log | tail -4
call_done
