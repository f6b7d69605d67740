# Call 5 (issue 16 item 5): the binaries of call 4 (a153e86) with SPECULA_MOE_NORM_ROUTE=0, the
# configuration that becomes the default (the fused norm and routing measured slower in call 4 and
# is deleted): agreement on the tiny MLA/MoE shapes with every kernel launching the next early.
set -u
for f in devrun/bin/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export SPECULA_MOE_NORM_ROUTE=0
devrun/bin/specula fixtures random --shape results/h200/moe-overlap-2026-12-04/call3/mla16.json --seed 7 --out $R/fx/mla16 > /dev/null
echo "== agree, SPECULA_MOE_NORM_ROUTE=0"
for shape in tiny-deepseek-v3 tiny-kimi-k25 tiny-deepseek-v2 tiny-qwen3-moe mla16; do
  [ -d $R/fx/$shape ] || devrun/bin/specula fixtures random --shape $shape --seed 7 --out $R/fx/$shape > /dev/null
  timeout 60 devrun/bin/specula gpu agree --target $R/fx/$shape/target --draft $R/fx/$shape/draft --out $R/agree-$shape > $R/agree-$shape.log 2>&1; echo "$shape rc $? at $(el) s, lossless true: $(grep -c 'lossless true' $R/agree-$shape.log), false: $(grep -c 'lossless false' $R/agree-$shape.log)"
  grep -iE "f32 GPU baseline vs CPU|warning" $R/agree-$shape.log | head -2
  cp $R/agree-$shape/agreement.csv $R/agreement_$shape.csv
done
rm -rf $R/fx $R/agree-*/
cd $OUT && tar czf r.tgz r && rm -rf r
