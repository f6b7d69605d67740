"""Per-kernel durations of one decode forward from an Nsight Compute CSV.

The CSV is what `ncu --graph-profiling node --metrics
gpu__time_duration.sum,launch__grid_size,launch__block_size --csv` writes
over `specula gpu bench` (results/h200/moe-launches-2026-12-04/callN/run.sh).
Forwards are cut at each `embedding_gather` launch; the chosen forward is
the Nth (default 3rd) whose launches include a grid matching --grid (a
batch-1 decode of DeepSeek-V2-Lite has the routed gate|up at (176, 6, 1)).
Each kernel is profiled alone (no overlap with its neighbours), so the sum
is an upper bound of the forward's time inside a CUDA graph.

    python3 tools/gpu/ncu_forward_table.py ncu.csv [--grid "(176, 6, 1)"] [--nth 3]
"""
import argparse
import collections
import csv


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--grid", default="(176, 6, 1)")
    ap.add_argument("--nth", type=int, default=3)
    a = ap.parse_args()
    with open(a.csv) as f:
        rows = list(csv.reader(line for line in f if line.startswith('"')))
    col = {h: i for i, h in enumerate(rows[0])}
    launches = collections.OrderedDict()
    for r in rows[1:]:
        d = launches.setdefault(int(r[col["ID"]]), {
            "name": r[col["Kernel Name"]], "grid": r[col["Grid Size"]], "block": r[col["Block Size"]]})
        d[r[col["Metric Name"]]] = r[col["Metric Value"]]
    ks = list(launches.values())
    for k in ks:
        k["us"] = float(k["gpu__time_duration.sum"].replace(",", "")) / 1000
    starts = [i for i, k in enumerate(ks) if k["name"].startswith("embedding_gather")]
    fwd = [(s, e) for s, e in zip(starts, starts[1:]) if any(k["grid"] == a.grid for k in ks[s:e])]
    if len(fwd) < a.nth:
        raise SystemExit(f"{a.csv}: {len(fwd)} forwards with a launch of grid {a.grid}, asked for number {a.nth}")
    s, e = fwd[a.nth - 1]
    seg = ks[s:e]
    total = collections.OrderedDict()
    for k in seg:
        t = total.setdefault((k["name"], k["grid"], k["block"]), [0, 0.0])
        t[0] += 1
        t[1] += k["us"]
    print(f"one forward: {len(seg)} launches, {sum(k['us'] for k in seg):.1f} us summed")
    print(f"{'total us':>9} {'count':>5} {'each us':>8}  kernel, grid, block")
    for (name, grid, block), (n, t) in sorted(total.items(), key=lambda z: -z[1][1]):
        print(f"{t:9.1f} {n:5d} {t / n:8.2f}  {name} {grid} {block}")


if __name__ == "__main__":
    main()
