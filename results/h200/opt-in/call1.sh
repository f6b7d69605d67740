set -u
for f in devrun/bin/*.gz; do gunzip -f "$f"; done; chmod +x devrun/bin/*
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$(date +%s)
bash scripts/gpu_check_opt_in.sh $R/opt-in devrun/bin 2>&1 | tee $R/opt_in.log
echo "opt-in checks: $(( $(date +%s) - T0 )) s"
export SPECULA_ATTENTION=flash SPECULA_LINEAR_TILES=1
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
left=$(( 560 - ($(date +%s) - T0) ))
echo "== scaling subset (flash + tiles), $left s left"
[ $left -gt 60 ] && timeout $left devrun/bin/specula gpu bench --config bench/configs/llama-3.1-8b.json --random-weights --quiet \
  --batch-sizes 1,8,64 --prompt-lens 128,8192 --max-new-tokens 64 --steps 5 --topk 1 --synthetic 0.8 --repeats 1 \
  --out $R/scale-flash 2>&1 | tail -40
cd $OUT && tar czf r.tgz r && rm -rf r
