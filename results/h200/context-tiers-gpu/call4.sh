set -u
gunzip -f devrun/bin/specula.gz; chmod +x devrun/bin/specula
R=$OUT/r; mkdir -p $R
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__file__) + "/cu13/lib")' 2>/dev/null || true); do [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
/usr/bin/time -f "%e s, %M KB max resident" timeout 150 devrun/bin/specula sweep bench/sweeps/context-tiers-gpu.toml --out $R/tiers 2>&1 | tail -25 | tee $R/tiers.log
cd $OUT && tar czf r.tgz r && rm -rf r
