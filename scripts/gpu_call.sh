# Sourced by a device call's run.sh (results/h200/<study>/callN/run.sh, from the
# repository root): unpacks the carried binaries (devrun/bin/*.gz) and cubin
# (devrun/kernels/*.gz), points the kernel cache at the cubin (devrun/kernels),
# prints the card (and keeps it in $R/card.txt: a call may get an H100 where an
# H200 was asked for), and defines
#   R        the folder under $OUT the call writes (packed into $OUT/r.tgz by call_done)
#   el       seconds since the call started
#   bench NAME TIMEOUT ARGS...   one `specula gpu bench` (SPECULA_BIN, else devrun/bin/specula;
#            random weights, steps 5,
#            topk 1, synthetic 0.8, plus ARGS) into $R/NAME.log and its CSVs as
#            $R/<csv>_NAME.csv (decode_bandwidth, synthetic_speedup, scaling, spans; and its meta.json, with the SPECULA_* switches it ran with,
#            as $R/meta_NAME.json; with SPECULA_STAMPS=1 its stamps as
#            $R/NAME_stamps_b*_p*.csv.gz and its kernel shares as $R/NAME_kernel_shares_b*_p*.csv); skipped once the call has run CALL_BUDGET_S seconds
#   kernel_checks TIMEOUT PATTERN   `specula-gpu-check --checks-only` into $R/check.log and
#            $R/kernel_checks.csv; prints the rows that fail and those matching PATTERN
#   agree SHAPE NAME   `specula gpu agree` on a random SHAPE fixture (seed 7) into
#            $R/agree-NAME.log and $R/agreement_NAME.csv (the caller's environment, its switches)
#   call_done   packs $R into $OUT/r.tgz (one file comes back, whatever the count)
# The binaries and the cubin (gzipped by scripts/devrun_pack.sh: a cubin left gzipped is not
# found, and the first binary to start compiles the kernels on the device, ~90 s).
for f in devrun/*/*.gz; do [ -f "$f" ] && gunzip -f "$f"; done
chmod +x devrun/bin*/*
R=$OUT/r
mkdir -p "$R"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader | tee "$R/card.txt"
. scripts/gpu_env.sh
export SPECULA_KERNEL_CACHE=$PWD/devrun/kernels
CALL_T0=$(date +%s)
CALL_BUDGET_S=${CALL_BUDGET_S:-520}
el() { echo $(($(date +%s) - CALL_T0)); }
bench() {
    local n=$1 t=$2
    shift 2
    if [ "$(el)" -gt "$CALL_BUDGET_S" ]; then
        echo "== $n skipped at $(el) s"
        return
    fi
    echo "== $n"
    timeout "$t" "${SPECULA_BIN:-devrun/bin/specula}" gpu bench --random-weights --quiet --steps 5 --topk 1 \
        --synthetic 0.8 "$@" --out "$R/$n" >"$R/$n.log" 2>&1
    echo "rc $? at $(el) s"
    grep -E "baseline step|kernels a step|synthetic|warning|rror" "$R/$n.log" | cut -c1-220
    for f in decode_bandwidth synthetic_speedup scaling spans; do
        [ -f "$R/$n/$f.csv" ] && cp "$R/$n/$f.csv" "$R/${f}_$n.csv"
    done
    [ -f "$R/$n/meta.json" ] && cp "$R/$n/meta.json" "$R/meta_$n.json"
    for f in "$R/$n"/stamps_*.csv; do [ -f "$f" ] && gzip -c "$f" > "$R/${n}_$(basename "$f").gz"; done
    for f in "$R/$n"/kernel_shares_*.csv; do [ -f "$f" ] && cp "$f" "$R/${n}_$(basename "$f")"; done
    rm -rf "${R:?}/$n"
}
kernel_checks() {
    timeout "$1" devrun/bin/specula-gpu-check "$R/check" --checks-only >"$R/check.log" 2>&1
    echo "check rc $? at $(el) s"
    tail -3 "$R/check.log"
    cp "$R/check/kernel_checks.csv" "$R/kernel_checks.csv" 2>/dev/null
    rm -rf "$R/check"
    grep -v ",true," "$R/kernel_checks.csv" | head
    grep -E "$2" "$R/kernel_checks.csv" | cut -c1-220
}
agree() {
    "${SPECULA_BIN:-devrun/bin/specula}" fixtures random --shape "$1" --seed 7 --out "$R/fx-$2" >/dev/null
    timeout 60 "${SPECULA_BIN:-devrun/bin/specula}" gpu agree --target "$R/fx-$2/target" \
        --draft "$R/fx-$2/draft" --out "$R/agree-$2" >"$R/agree-$2.log" 2>&1
    echo "agree $2 rc $? at $(el) s"
    tail -4 "$R/agree-$2.log" | cut -c1-200
    cp "$R/agree-$2/agreement.csv" "$R/agreement_$2.csv" 2>/dev/null
    rm -rf "$R/agree-$2" "$R/fx-$2"
}
call_done() { (cd "$OUT" && tar czf r.tgz r && rm -rf r); }
