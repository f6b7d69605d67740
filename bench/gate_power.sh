#!/usr/bin/env bash
# Power of the paired timing gate (`specula ab`, docs/DESIGN.md 10.4) under
# background load: for each load of 0, 1 and 2 busy cores (a bounded load
# generator: busy shell loops killed at the end, and by `timeout` at the
# latest), TRIALS trials; one trial is one `specula ab` of
# bench/sweeps/gate-power.toml with all eight arms interleaved round by
# round: the control A, a second A (the A/A false-alarm arm), and planted
# slowdowns of 10% and 20% in the verify forward, the draft forward, and
# the whole target forward (the baseline's rows included), each real extra
# work (`--inject-*-work-pct`: that share of forwards run twice).
#
#   bash bench/gate_power.sh [TRIALS=20] [SPECULA=target/release/specula] [OUT=results/gate_power] [LOADS="0 1 2"] [MAX_ROUNDS=48]
#
# Writes OUT/power.csv (load, trial, arm, verdict, rounds, loadavg: the
# 1-minute load average when the trial began) and OUT/power.md (the tables
# of bench/gate_power_table.py: per arm and load, trials the gate called a
# regression, for A2 those are false alarms; each arm's estimates), and
# prints them; each trial's ab.json (every interval) is kept as
# OUT/runs/loadL-trialT.json. A round runs each undecided variant between two
# control processes (about 0.45 s each natively); a variant stops once
# decided (8 to MAX_ROUNDS rounds). Measured on the shared 2-core machine under
# other jobs (load average 3.5-6.5): about 4.5 minutes a trial, so the
# full table (20 trials x 3 loads) takes about 4.5 hours; less on a quiet
# machine if variants decide in fewer rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-20}
bin=${2:-target/release/specula}
out=${3:-results/gate_power}
loads=${4:-"0 1 2"}
max_rounds=${5:-48}
arms=(--arm A= --arm A2=
  --arm verify10="--inject-verify-work-pct 10" --arm verify20="--inject-verify-work-pct 20"
  --arm draft10="--inject-draft-work-pct 10" --arm draft20="--inject-draft-work-pct 20"
  --arm target10="--inject-target-work-pct 10" --arm target20="--inject-target-work-pct 20")
mkdir -p "$out/runs"
csv="$out/power.csv"
[ -f "$csv" ] || echo "load,trial,arm,verdict,rounds,loadavg" > "$csv"
pids=()
stop_load() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; pids=(); }
trap stop_load EXIT
for load in $loads; do
  for _ in $(seq 1 "$load"); do
    timeout 7200 sh -c 'while :; do :; done' &
    pids+=($!)
  done
  for t in $(seq 1 "$trials"); do
    dir="$out/runs/load$load-trial$t"
    la=$(cut -d' ' -f1 /proc/loadavg)
    rm -rf "$dir"
    "$bin" ab bench/sweeps/gate-power.toml --out "$dir" --max-rounds "$max_rounds" "${arms[@]}" > "$dir.txt" 2>/dev/null || true
    # "ARM: VERDICT after N rounds (...)"
    awk -v l="$load" -v t="$t" -v la="$la" -F'[: ]+' '/ after [0-9]+ rounds/ {print l "," t "," $1 "," $2 "," $4 "," la}' "$dir.txt" >> "$csv"
    cp "$dir/ab.json" "$dir.json" 2>/dev/null || true
    rm -rf "$dir"
    echo "load $load trial $t (load average $la): $(awk -F'[: ]+' '/ after / {printf "%s=%s ", $1, $2}' "$dir.txt")"
  done
  stop_load
done
python3 bench/gate_power_table.py "$out" | tee "$out/power.md"
