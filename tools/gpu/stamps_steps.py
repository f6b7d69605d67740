"""Each kernel's share of a replayed step, from `specula gpu bench` wait-return stamps.

With SPECULA_STAMPS=1 every kernel's first thread stamps the device's global
timer as its wait on the kernel before returns, and the bench writes the
stamps of each case's first baseline run (prefill and decode steps) as
stamps_b{batch}_p{prompt}.csv (ns, blocks, threads; in time order). In one
stream a kernel's wait returns as the kernel before completes, so the gap
from one stamp to the next is that kernel's share of the step as it ran,
with the programmatic overlap (its weights streamed before its wait)
included. Work on the side stream (the shared experts) interleaves: its
gaps are then shares of the wall time, not of one kernel. A kernel whose
first block works before its wait (the grouped gate|up's shared slices)
stamps after that work: the gap before it is then the later of the kernel
before's end and that block's own work.

The decode steps are found as the longest run of repeats of one sequence of
`--kernels` launch shapes (the bench prints "N kernels a step"); the first
repeat is skipped (warm-up). With `--begins BLOCKSxTHREADS` (the decode
graph's first launch: `scatter_words`, 10x128, since the staged inputs; a
shape one launch of the step has) the steps start at that launch and the last launch's row, "+ the wait for the
next step", holds the time between steps, as the bench's kernel shares do;
without it the steps start wherever the repeats found do. Names come from the CSV's `kernels` column (the
kernels the bench launched with each shape), or from an Nsight Compute raw
CSV of the same bench (`ncu --metrics gpu__time_duration.sum,launch__grid_size,
launch__block_size --csv --page raw`, see results/h200/step-2026-12-06/call2)
by launch shape (blocks, threads a block) where the shape is in ncu's list,
else the shape stands for the name.

    python3 tools/gpu/stamps_steps.py stamps_b1_p128.csv --kernels 249 [--begins 10x128] [--ncu v2.csv] [--list 40]
"""
import argparse
import csv
import gzip
import io
import statistics
from collections import OrderedDict


def read_stamps(path):
    """The stamps (ns, blocks, threads) and, where the CSV names them, each
    shape's kernels. A device call keeps them gzipped (`*.csv.gz`)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = list(csv.DictReader(f))
    named = {(int(r["blocks"]), int(r["threads"])): r["kernels"] for r in rows if r.get("kernels")}
    return [(int(r["ns"]), int(r["blocks"]), int(r["threads"])) for r in rows], named


def read_ncu(path):
    """(name, blocks, threads) of each launch an ncu raw CSV lists."""
    with open(path) as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))[1:]
    num = lambda v: int(v.replace(",", ""))
    return [(r["Kernel Name"], num(r["launch__grid_size"]), num(r["launch__block_size"])) for r in rows]


def find_steps(stamps, per):
    """Start of the longest run of equal shape sequences of length `per`, and its repeats."""
    shapes = [(b, t) for _, b, t in stamps]
    best = (0, 0)
    for off in range(min(per, len(shapes))):
        i, run, first = off, 0, off
        while i + 2 * per <= len(shapes):
            if shapes[i : i + per] == shapes[i + per : i + 2 * per]:
                if run == 0:
                    first = i
                run += 1
                if run + 1 > best[1]:
                    best = (first, run + 1)
            else:
                run = 0
            i += per
    return best


def names_for(ncu, shapes):
    """Each position's name: the names ncu gives its shape in the ncu window
    of `per` launches sharing the most shapes with the step ('/'-joined where
    one shape is several kernels; side-stream launches may come in another
    order, and a longer context can change an attention's blocks); None
    where the shape is not in the window."""
    per = len(shapes)
    want = set(shapes)
    best, hits = None, 0
    for i in range(len(ncu) - per + 1):
        n = sum((b, t) in want for _, b, t in ncu[i : i + per])
        if n > hits:
            best, hits = i, n
    if best is None:
        return None
    by_shape = {}
    for name, b, t in ncu[best : best + per]:
        by_shape.setdefault((b, t), set()).add(name)
    return ["/".join(sorted(by_shape[sh])) if sh in by_shape else None for sh in shapes]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stamps")
    ap.add_argument("--kernels", type=int, required=True,
                    help="launches a decode step (the bench's 'N kernels a step', less any cuBLAS launches: those do not stamp)")
    ap.add_argument("--ncu", help="an Nsight Compute raw CSV of the same bench, for the kernels' names")
    ap.add_argument("--list", type=int, default=0, help="also list the step's first N launches in order")
    ap.add_argument("--begins", help="the launch shape BLOCKSxTHREADS a step begins with (the graph's first kernel)")
    a = ap.parse_args()
    stamps, named = read_stamps(a.stamps)
    per = a.kernels
    first, reps = find_steps(stamps, per)
    if reps < 3:
        raise SystemExit(f"{a.stamps}: no three repeats of a {per}-launch sequence in {len(stamps)} stamps")
    aligned = False
    if a.begins:
        want = tuple(int(v) for v in a.begins.split("x"))
        at = [k for k in range(per) if stamps[first + k][1:] == want]
        offset = at[0] if len(at) == 1 else None
        if offset is None:
            print(f"{len(at)} {a.begins} launches in a step, not one: the steps start where the repeats found do")
        else:
            first, aligned = first + offset, True
    steps = [stamps[first + i * per : first + (i + 1) * per + 1] for i in range(1, reps - 1)]
    shapes = [(b, t) for _, b, t in steps[0][:per]]
    if a.ncu:
        names = names_for(read_ncu(a.ncu), shapes)
    else:
        names = [named.get(sh) for sh in shapes] if named else None
    label = [(names[k] if names else None) or f"{shapes[k][0]}x{shapes[k][1]}" for k in range(per)]
    if aligned:
        label[-1] += " + the wait for the next step"
    gaps = [statistics.median((s[k + 1][0] - s[k][0]) / 1e3 for s in steps) for k in range(per)]
    period = statistics.median((s[per][0] - s[0][0]) / 1e3 for s in steps)
    print(f"{a.stamps}: {len(steps)} steps of {per} launches from stamp {first}; "
          f"step (first stamp to the next step's) median {period:.1f} us"
          + ("" if names else "; no kernel names: shapes stand for them"))
    agg = OrderedDict()
    for k in range(per):
        key = (label[k], shapes[k])
        n, t = agg.get(key, (0, 0.0))
        agg[key] = (n + 1, t + gaps[k])
    total = sum(t for _, t in agg.values())
    print(f"{'kernel':36s} {'shape':>12s} {'n':>4s} {'us a step':>10s} {'us each':>8s} {'share':>6s}")
    for (name, (b, t)), (n, s) in sorted(agg.items(), key=lambda x: -x[1][1]):
        print(f"{name[:36]:36s} {f'{b}x{t}':>12s} {n:4d} {s:10.1f} {s / n:8.2f} {100 * s / total:5.1f}%")
    print(f"{'all':36s} {'':12s} {per:4d} {total:10.1f}")
    for k in range(min(a.list, per)):
        print(f"  {k:4d} {label[k][:36]:36s} {shapes[k][0]:>6d}x{shapes[k][1]:<4d} {gaps[k]:8.2f}")


if __name__ == "__main__":
    main()
