# Call 3 (H200, main): where the 8B's batch-16-64 step goes on the H200 (eager profiles, an
# event between operations), and the engine's layout switches at batch 32 and 64 on this card
# (the defaults were last chosen on H100s), each against the default in the same call; the
# wgmma linear in every layout against the engine's other forms at 32 and 64 rows (cold weights).
set -u
CALL_BUDGET_S=200
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
SPECULA_GPU_PROFILE=1 bench l8-prof 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 16,32,64 --repeats 1 --max-new-tokens 16
L8="--config bench/configs/llama-3.1-8b.json --batch-sizes 32,64 --repeats 1 --max-new-tokens 32"
bench sw-default-1 40 $L8
SPECULA_LINEAR_WG=1 bench sw-wg-every 40 $L8
SPECULA_LINEAR_WG=0 bench sw-wg-off 40 $L8
SPECULA_TREE_STAGES=4 bench sw-tree4 40 $L8
SPECULA_TREE_STAGES=2 bench sw-tree2 40 $L8
SPECULA_MMA_EIGHT_TILES=all bench sw-eight-all 40 $L8
SPECULA_LINEAR_TILES=64 bench sw-tiles64 40 $L8
SPECULA_IN_ORDER=tree bench sw-inorder-tree 40 $L8
bench sw-default-2 40 $L8
timeout 90 devrun/bin/specula-gpu-check $R/wg --wgmma-timing --only=qkv:32,o:32,gate_up:32,down:32,qkv:64,o:64,gate_up:64,down:64 > $R/wgmma_timing.log 2>&1; echo "wgmma timing rc $? at $(el) s"
cp $R/wg/*.csv $R/ 2>/dev/null; rm -rf $R/wg
call_done
