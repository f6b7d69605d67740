"""Where a speculative step waits for the host, from `specula gpu bench` stamps with host marks.

With SPECULA_STAMPS=1 the bench writes the first synthetic run's stamps as
stamps_spec_b{batch}_p{prompt}.csv, and the GPU recorder leaves a host mark
(a one-thread launch of `host_mark`, named `mark:<span>:begin|end` or
`mark:finish_step`) at each span's begin and end and each step's finish.
Where the GPU is idle a mark's stamp is a launch's latency after the host
got there; otherwise it is when the work queued before it finished. Each
gap between consecutive stamps is charged to the interval it lies in:
between which two marks, and whether a kernel of the engine ran in it (GPU
work) or only marks (the GPU idle, waiting for the host).

Prints, per decode step (from one `mark:finish_step` to the next, the
first steps skipped as warm-up), the median time of each named interval
(`after mark A` up to the next mark), split into kernel time and host
time (gaps that end at a mark or begin at one with no kernel between).

    python3 tools/gpu/stamps_host.py stamps_spec_b1_p128.csv[.gz] [--skip 2]
"""
import argparse
import csv
import gzip
import statistics
from collections import defaultdict


def read(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return [(int(r["ns"]), r["kernels"]) for r in csv.DictReader(f)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stamps")
    ap.add_argument("--skip", type=int, default=2, help="steps skipped at the start (warm-up)")
    a = ap.parse_args()
    rows = read(a.stamps)
    ends = [i for i, (_, k) in enumerate(rows) if k == "mark:finish_step"]
    steps = list(zip(ends, ends[1:]))[a.skip:]
    if not steps:
        raise SystemExit(f"{a.stamps}: fewer than {a.skip + 2} step finishes (no host marks?)")
    per = defaultdict(list)  # (interval, kind) -> us per step
    totals = []
    for lo, hi in steps:
        acc = defaultdict(float)
        label = "mark:finish_step"
        occurrence = defaultdict(int)
        key = label
        for i in range(lo, hi):
            ns, k = rows[i]
            if k.startswith("mark:"):
                occurrence[k] += 1
                key = f"{k}#{occurrence[k]}" if occurrence[k] > 1 else k
            gap = (rows[i + 1][0] - ns) / 1e3
            # A mark's own gap: from the host's arrival to whatever the GPU did
            # next; a kernel's gap: that kernel's share (or its end and the
            # host's arrival at the next mark, when the GPU then idles).
            nxt = rows[i + 1][1]
            kind = "host" if (k.startswith("mark:") or nxt.startswith("mark:")) else "gpu"
            acc[(key, kind)] += gap
        for kk, v in acc.items():
            per[kk].append(v)
        totals.append((rows[hi][0] - rows[lo][0]) / 1e3)
    print(f"{len(steps)} steps, median {statistics.median(totals):.1f} us a step (finish to finish)")
    print(f"{'after':40} {'gpu us':>9} {'host us':>9}")
    order = []
    for (key, kind) in per:
        if key not in order:
            order.append(key)
    gpu_sum = host_sum = 0.0
    for key in order:
        g = statistics.median(per.get((key, "gpu"), [0.0]))
        h = statistics.median(per.get((key, "host"), [0.0]))
        gpu_sum += g
        host_sum += h
        print(f"{key:40} {g:9.1f} {h:9.1f}")
    print(f"{'sum of medians':40} {gpu_sum:9.1f} {host_sum:9.1f}")


if __name__ == "__main__":
    main()
