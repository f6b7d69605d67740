#!/usr/bin/env bash
# Issue 24's must-shows, as run on 2026-12-03 (release build of 6e9b4e1 as SPECULA; work
# folder /tmp/ms): the instruction counts of two A runs of one build; a B run with 20% planted
# verify work through `specula gate` (its counts); the issue's B run (a 20% verify busy-wait)
# through `specula gate` under CI's policy (timing not judged: passes) and through `specula ab`
# (paired timing: regression, exit 1).
#   SPECULA=target/release/specula bash results/gate_power/quiet-20261203/must-show/run.sh
set -u
cd "$(dirname "$0")/../../../.."
S=${SPECULA:-target/release/specula}
W=/tmp/ms; rm -rf $W; mkdir -p $W
$S sweep bench/sweeps/gate.toml --quiet --out $W/A1 > $W/A1.log 2>&1; echo "A1 sweep rc $?"
$S cost bench/sweeps/gate-cost.toml --out $W/A1 >> $W/A1.log 2>&1; echo "A1 cost rc $?"
$S cost bench/sweeps/gate-cost.toml --out $W/A2 > $W/A2.log 2>&1; echo "A2 cost rc $?"
if diff <(cut -d, -f1-4 $W/A1/costs.csv) <(cut -d, -f1-4 $W/A2/costs.csv) > $W/A_diff.txt; then echo "A1 vs A2 instruction counts: IDENTICAL"; else echo "A1 vs A2 differ:"; cat $W/A_diff.txt; fi
$S sweep bench/sweeps/gate.toml --quiet --out $W/Bwork --inject-verify-work-pct 20 > $W/Bwork.log 2>&1; echo "Bwork sweep rc $?"
$S cost bench/sweeps/gate-cost.toml --out $W/Bwork --inject-verify-work-pct 20 >> $W/Bwork.log 2>&1; echo "Bwork cost rc $?"
paste -d, $W/A1/costs.csv $W/Bwork/costs.csv | awk -F, 'NR>1 {printf "%-40s %-8s A %14s B %14s %+6.2f%%\n", $1, $2, $5, $10, 100*($10/$5-1)}'
$S gate --baseline $W/A1 --current $W/Bwork --policy bench/gate-ci-policy.toml --markdown $W/gate_Bwork.md > $W/gate_Bwork.out 2>&1; echo "gate A1 -> Bwork (planted verify work 20%): exit $?"
$S sweep bench/sweeps/gate.toml --quiet --out $W/Bdelay --inject-verify-delay-pct 20 > $W/Bdelay.log 2>&1; echo "Bdelay sweep rc $?"
$S cost bench/sweeps/gate-cost.toml --out $W/Bdelay >> $W/Bdelay.log 2>&1; echo "Bdelay cost rc $? (the delay busy-waits: no instructions planted in the probe)"
$S gate --baseline $W/A1 --current $W/Bdelay --policy bench/gate-ci-policy.toml --markdown $W/gate_Bdelay.md > $W/gate_Bdelay.out 2>&1; echo "gate A1 -> Bdelay (planted verify delay 20%), CI policy: exit $?"
grep -iE "verdict|INCONCLUSIVE|REGRESS|not judged|not comparable" $W/gate_Bdelay.md | head -5
W=/tmp/ms

$S ab bench/sweeps/gate-power.toml --out $W/ab_delay --arm A= --arm B="--inject-verify-delay-pct 20" > $W/ab_delay.out 2>&1; echo "ab A vs B (verify delay 20%): exit $?"
