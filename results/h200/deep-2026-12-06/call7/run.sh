# Call 7: main as it stands (9d63b6c: the producer form, the 65-96-row rule, the compact tiled end):
# lossless run, cold timings of every form where the compact end may have moved the rule (33-96
# rows), then issue 18's table and issue 16's rows.
set -u
CALL_BUDGET_S=330
. scripts/gpu_call.sh
cat devrun/bin/PACKED.txt
timeout 60 devrun/bin/specula gpu agree --target models/tiny-llama --draft models/tiny-llama/eagle3 --batch-sizes 1,16,64 --out $R/agree > $R/agree-llama.log 2>&1
echo "agree tiny-llama rc $? at $(el) s, true $(grep -c 'lossless true' $R/agree-llama.log) false $(grep -c 'lossless false' $R/agree-llama.log)"; rm -rf $R/agree
timeout 120 devrun/bin/specula-gpu-check $R/w --wgmma-timing --only=qkv:48,gate_up:48,down:48,o:64,down:64,qkv:96,gate_up:96,o:96,lm_head:64 > $R/wgmma_timing.txt 2>&1; echo "wgmma timing rc $? at $(el) s"
grep -E "rows|bits" $R/wgmma_timing.txt | cut -c1-240; cp $R/w/wgmma_timing.csv $R/wgmma_timing.csv 2>/dev/null; rm -rf $R/w
bench l8 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8,16,32,64 --repeats 1 --max-new-tokens 32
bench l8-big 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 128,256 --repeats 1 --max-new-tokens 8
bench l8-8192 50 --config bench/configs/llama-3.1-8b.json --batch-sizes 1,8 --prompt-lens 8192 --repeats 1 --max-new-tokens 16
bench l8-32768 60 --config bench/configs/llama-3.1-8b.json --batch-sizes 1 --prompt-lens 32768 --repeats 1 --max-new-tokens 16
bench v2lite 40 --config bench/configs/deepseek-v2-lite.json --batch-sizes 1,8,32 --repeats 1 --max-new-tokens 32
bench moonlight 40 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32
call_done
