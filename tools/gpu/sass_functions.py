"""Kernels' machine code from `nvdisasm -c` listings: sizes, and whether two builds differ.

A cubin written by `tools/gpu/nvrtc_check.py --cubin FILE` is listed with
`nvdisasm -c FILE > FILE.sass` (nvdisasm from PyPI's nvidia-cuda-nvdisasm
wheel). Then

    python3 tools/gpu/sass_functions.py sizes FILE.sass [--prefix linear_] [--top 40]

prints each kernel's instruction count, largest first: a kernel whose code is
large and run once per block, cold, pays instruction fetch
(results/h200/deep-2026-12-06: an unrolled end was a fifth of a 64-row
linear's stall samples); and

    python3 tools/gpu/sass_functions.py compare OLD.sass NEW.sass [--prefix linear_]

says, kernel by kernel, whether the instructions are the same: labels
(`.L_x_N`) and the compiler's internal function numbers are ignored, since
adding an unrelated kernel renumbers them. It backs claims such as "a
refactor leaves the engine's kernels' machine code unchanged".
"""
import argparse
import re
import sys

FUNCTION = re.compile(r"\s*\.text\.(\S+):")
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;")


def functions(path):
    """{kernel: [instruction text]} of an `nvdisasm -c` listing, renumbering ignored."""
    out, cur = {}, None
    with open(path) as f:
        for line in f:
            m = FUNCTION.match(line)
            if m:
                cur = out.setdefault(m.group(1), [])
                continue
            m = INSTRUCTION.search(line)
            if cur is not None and m:
                text = re.sub(r"__internal_\d+_", "__internal_", m.group(2))
                cur.append(re.sub(r"\.L_x_\d+", "L", text))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sizes", help="instructions per kernel, largest first")
    s.add_argument("listing")
    s.add_argument("--prefix", default="", help="only kernels whose name starts with this")
    s.add_argument("--top", type=int, default=0, help="only the largest N (all by default)")
    c = sub.add_parser("compare", help="which kernels' instructions differ between two listings")
    c.add_argument("old")
    c.add_argument("new")
    c.add_argument("--prefix", default="", help="only kernels whose name starts with this")
    a = ap.parse_args()
    if a.cmd == "sizes":
        fs = {k: v for k, v in functions(a.listing).items() if k.startswith(a.prefix)}
        rows = sorted(fs.items(), key=lambda kv: -len(kv[1]))
        for name, ins in rows[: a.top or None]:
            print(f"{len(ins):8d}  {name}")
        return 0
    old, new = functions(a.old), functions(a.new)
    differ = 0
    for name in sorted(set(old) | set(new)):
        if not name.startswith(a.prefix):
            continue
        o, n = old.get(name), new.get(name)
        if o is None or n is None:
            print(f"{'only in ' + ('new' if o is None else 'old'):12s}  {name}")
            differ += 1
        elif o != n:
            print(f"{'different':12s}  {name}  ({len(o)} -> {len(n)} instructions)")
            differ += 1
        else:
            print(f"{'same':12s}  {name}")
    print(f"{differ} kernel(s) differ", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
