# Call 3: the issue tables of main (call 1's benches) and, as call 2's one profiled forward each
# showed the latent attention and the routing slower with the branch (+23 and +28 us a step)
# where the graph was faster, three more profiled V2-Lite batch-1 forwards of each binary,
# interleaved, and the V2-Lite graph step at batch 1 twice more each.
set -u
CALL_BUDGET_S=480
. scripts/gpu_call.sh
for d in new chains; do [ -f devrun/$d/specula.gz ] && gunzip -f devrun/$d/specula.gz; chmod +x devrun/$d/specula; done
for rep in 1 2 3; do
  for d in new chains; do
    cp devrun/$d/specula devrun/bin/specula
    SPECULA_GPU_PROFILE=1 bench v2lite-prof-$d-$rep 60 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 16
  done
done
for rep in 1 2; do
  for d in new chains; do
    cp devrun/$d/specula devrun/bin/specula
    bench v2lite-b1-$d-$rep 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1 --repeats 1 --max-new-tokens 32
  done
done
cp devrun/new/specula devrun/bin/specula
for rep in 1 2; do
  bench l8-$rep 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
done
bench v2lite 50 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
bench l8-long 90 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 8192,32768 --repeats 1 --max-new-tokens 32
bench l8-8192-b8 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 8 --prompt-lens 8192 --repeats 1 --max-new-tokens 32
bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 32
call_done
