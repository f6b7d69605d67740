# Call 4 (the pack of call 2, 21c2bd6; on call 3's machine, still warm): V2-Lite batch 1/8 at
# HEAD three times with the ten-copy inputs at batch 1 between, interleaved; Moonlight batch 1/8.
# Run as one command line (below), not from this file.
#
#   . scripts/gpu_call.sh >/dev/null; for i in 1 2 3; do bench v2-r$i 30 --config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32 --batch-sizes 1,8 >/dev/null; SPECULA_INPUTS=apart bench v2-apart-r$i 30 --config bench/configs/deepseek-v2-lite.json --repeats 1 --max-new-tokens 32 --batch-sizes 1 > /dev/null; done; bench moon 30 --config bench/configs/moonlight-16b-a3b.json --batch-sizes 1,8 --repeats 1 --max-new-tokens 32 >/dev/null; grep -h ceilings $R/v2-r1.log; for f in $R/decode_bandwidth_*.csv; do echo "$(basename $f) $(tail -n +2 $f | cut -d, -f1,7,9,17 | tr '\n' ' ')"; done; cd $OUT && tar czf r.tgz r && rm -rf r
