#!/usr/bin/env python3
"""The power tables of `bench/gate_power.sh` runs, as Markdown.

    python3 bench/gate_power_table.py FOLDER [FOLDER ...]

Each FOLDER is a gate_power.sh output (power.csv and runs/loadL-trialT.json).
Rows of several folders for the same load are pooled (e.g. a load whose
trials ran in two sittings). Prints two tables: per arm and load, the trials
the gate called a regression (for A2, the A/A arm, those are false alarms),
with the inconclusive and passed ones and the median rounds; then the median
(and range) of each arm's estimate on the measure its plant targets.
"""
import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ARMS = {
    "A2": "nothing (A/A: a regression is a false alarm)",
    "verify10": "10% more verify work",
    "verify20": "20% more verify work",
    "draft10": "draft forwards repeated for 10% of their time",
    "draft20": "draft forwards repeated for 20% of their time",
    "target10": "10% more target-forward work (baseline too)",
    "target20": "20% more target-forward work (baseline too)",
}
# The measure each plant targets (the speculative row's span, or the baseline's).
TARGET = {
    "verify": "s3k2n5.b1.builtin.t0/verify_us",
    "draft": "s3k2n5.b1.builtin.t0/draft_us",
    "target": "base.b1.builtin.t0/verify_us",
}


def main(folders):
    verdicts = defaultdict(list)  # (load, arm) -> [(verdict, rounds)]
    estimates = defaultdict(list)  # (load, arm) -> [estimate]
    loadavg = defaultdict(list)  # load -> [1-minute load average at a trial's start]
    for folder in map(Path, folders):
        trials = {}  # (load, trial) -> load average
        with open(folder / "power.csv", newline="") as f:
            for row in csv.DictReader(f):
                verdicts[row["load"], row["arm"]].append((row["verdict"], int(row["rounds"])))
                trials[row["load"], row["trial"]] = float(row["loadavg"])
        for (load, trial), average in trials.items():
            loadavg[load].append(average)
            path = folder / "runs" / f"load{load}-trial{trial}.json"
            if not path.exists():
                continue
            for outcome in json.loads(path.read_text()):
                arm, checks = outcome["arm"], outcome["checks"]
                if arm == "A2":
                    v = max((c["estimate"] for c in checks.values()), key=abs)
                else:
                    suffix = TARGET[arm.rstrip("0123456789")]
                    v = next(c["estimate"] for k, c in checks.items() if k.endswith(suffix))
                estimates[load, arm].append(v)
    loads = sorted({load for load, _ in verdicts}, key=int)
    head = " | ".join(
        f"load {l}: regression / trials (inconclusive, pass), median rounds" for l in loads
    )
    print(f"| arm | planted | {head} |")
    print("| --- | --- |" + " --- |" * len(loads))
    for arm, what in ARMS.items():
        cells = []
        for l in loads:
            v = verdicts.get((l, arm), [])
            count = lambda name: sum(1 for x, _ in v if x == name)
            rounds = statistics.median(r for _, r in v) if v else 0
            cells.append(
                f"{count('regression')} / {len(v)} ({count('inconclusive')}, {count('pass')}), {rounds:g}"
            )
        print(f"| {arm} | {what} | " + " | ".join(cells) + " |")
    print()
    print(
        "1-minute load average at each trial's start: "
        + "; ".join(f"load {l}: {min(loadavg[l]):.2f}-{max(loadavg[l]):.2f}" for l in loads)
    )
    print()
    head = " | ".join(f"load {l}: median estimate (range)" for l in loads)
    print(f"| arm | measure | {head} |")
    print("| --- | --- |" + " --- |" * len(loads))
    for arm in ARMS:
        measure = (
            "largest absolute change of any measure"
            if arm == "A2"
            else TARGET[arm.rstrip("0123456789")]
        )
        cells = []
        for l in loads:
            e = estimates.get((l, arm), [])
            if arm == "A2":
                e = [abs(x) for x in e]
            cells.append(
                f"{100 * statistics.median(e):+.1f}% ({100 * min(e):+.1f} to {100 * max(e):+.1f})"
                if e
                else "-"
            )
        print(f"| {arm} | {measure} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
