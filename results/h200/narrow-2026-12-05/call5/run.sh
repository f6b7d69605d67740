# Call 5 (NOT RUN: the session's device time ran out before a machine could be started; the
# rule was reverted until it is measured in the step: re-apply commit 2e4c1d5's change to
# kernels/src/wg_layout.rs, build, keep the binary before it in devrun/prev). The qkv projection at 49-64 rows in four stages with
# the early transpose (WgLaunch::for_shape) in the 8B decode step at batch 64, against the
# binary before the change (devrun/prev: 17a51e2's, the same cubin: the change is host-side),
# interleaved prev, new, prev, new. Every wgmma layout gives the engine's bits (calls 1, 3), so
# the rule changes no output.
set -u
CALL_BUDGET_S=200
. scripts/gpu_call.sh
gunzip -f devrun/prev/specula.gz; chmod +x devrun/prev/specula
NEW=devrun/bin/specula
for v in prev new prev new; do
  if [ $v = prev ]; then cp devrun/prev/specula devrun/bin/specula.run; else cp $NEW devrun/bin/specula.run; fi
  echo "== $v"
  timeout 60 devrun/bin/specula.run gpu bench --random-weights --quiet --steps 5 --topk 1 --synthetic 0.8 \
    --config bench/configs/llama-3.1-8b.json --batch-sizes 64 --repeats 2 --max-new-tokens 64 --out $R/$v-$(el) > $R/l8-64-$v-$(el).log 2>&1
  echo "rc $? at $(el) s"; grep -h "baseline step\|synthetic tau" $R/l8-64-$v-*.log | tail -4 | cut -c1-200
done
for d in $R/prev-* $R/new-*; do cp $d/scaling.csv $R/scaling_$(basename $d).csv 2>/dev/null; rm -rf $d; done
call_done
