"""Where a kernel's warps stall, by SASS instruction and by phase, from Nsight Compute.

The input is what `ncu -k regex:NAME --launch-count N --section WarpStateStats
--section SourceCounters --page source --print-source sass --csv` prints over
a run (one table per profiled launch; other lines are skipped). One launch of
a short kernel holds few stall samples (12 for a 17 us launch in
results/h200/moe-route-2026-12-04/call4 at the default interval), so sample
densely (`--warp-sampling-interval 0` in current Nsight Compute, `--sampling-interval` in older ones: every 32 cycles) and profile many launches:
their tables are summed instruction by instruction (the same kernel's SASS, in the
same order). Prints the launches and samples summed, the instructions with
the most samples (index, share, SASS), and the phases between barriers,
fences, atomics and exits with their share of the samples.

    python3 tools/gpu/ncu_sass_stalls.py ncu_sass.csv [--top 20]
"""
import argparse
import csv
import re

STALLS = "Warp Stall Sampling (All Samples)"
# Instructions that end a phase: block barriers, fences, atomics, exits.
BOUNDARY = re.compile(r"\b(BAR\.SYNC|MEMBAR|ATOMG|RED\.|EXIT|ACQBULK)")


def tables(path):
    """Each launch's table: a list of (SASS, samples)."""
    out, cur, col = [], None, None
    with open(path) as f:
        for r in csv.reader(line for line in f if line.startswith('"')):
            if r and r[0] == "Kernel Name":
                cur = None
            elif r and r[0] == "Address":
                col = r.index(STALLS)
                cur = []
                out.append(cur)
            elif cur is not None and len(r) > col:
                cur.append((r[1].strip(), int(r[col] or 0)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=20)
    a = ap.parse_args()
    ts = tables(a.csv)
    if not ts:
        raise SystemExit(f"{a.csv}: no SASS table (was it made with --page source --print-source sass --csv?)")
    n = min(len(t) for t in ts)
    if any(len(t) != n for t in ts):
        print(f"note: the launches' tables differ in length; summing their first {n} instructions")
    sass = [ts[0][i][0] for i in range(n)]
    samples = [sum(t[i][1] for t in ts) for i in range(n)]
    total = sum(samples) or 1
    print(f"{len(ts)} launch(es), {n} instructions, {sum(samples)} stall samples")
    print(f"\ntop {a.top} instructions:")
    for i in sorted(range(n), key=lambda i: -samples[i])[: a.top]:
        if samples[i]:
            print(f"  {i:6d} {samples[i]:6d} {100 * samples[i] / total:5.1f}%  {sass[i]}")
    print("\nphases (instructions up to and including a barrier, fence, atomic or exit):")
    start, acc = 0, 0
    for i in range(n):
        acc += samples[i]
        if BOUNDARY.search(sass[i]) or i == n - 1:
            if acc:
                print(f"  {start:6d}-{i:<6d} {acc:6d} {100 * acc / total:5.1f}%  ends at {sass[i]}")
            start, acc = i + 1, 0


if __name__ == "__main__":
    main()
