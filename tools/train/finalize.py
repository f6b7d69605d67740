"""Fold the simulation results (simulation*.json beside each draft) into the
draft's training_report.json / training_report.md."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from train_eagle3 import write_md  # noqa: E402


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--note", default=None, help="free-text note added to the draft reports")
    ap.add_argument("--drafts", default="eagle3,eagle3-embed", help="which drafts (comma-separated)")
    args = ap.parse_args()
    for name in args.drafts.split(","):
        d = os.path.join(common.MODEL_DIR, name)
        rpath = os.path.join(d, "training_report.json")
        if not os.path.exists(rpath):
            continue
        with open(rpath) as f:
            rep = json.load(f)
        if args.note:
            rep["note"] = args.note
        rows, raw = [], {}
        for fn in sorted(os.listdir(d)):
            if not (fn.startswith("simulation") and fn.endswith(".json")):
                continue
            with open(os.path.join(d, fn)) as f:
                sim = json.load(f)
            raw[fn] = sim
            for set_name, v in sim["sets"].items():
                rows.append(f"served with ids {sim['served_ids']} (trained {sim['trained_ids']}), {set_name}: "
                            f"tau {v['tau']:.2f} over {v['prompts']} prompts "
                            f"(steps {sim['steps']}, topk 1, max_new {sim['max_new_tokens']}), "
                            f"per-position acceptance {v['per_position_acceptance']}, "
                            + (f"lossless {v['lossless_prompts']}/{v['prompts']}" if "lossless_prompts" in v
                               else "lossless not checked"))
        if rows:
            rep["simulation"] = rows
            rep["simulation_detail"] = raw
        if rows or args.note:
            with open(rpath, "w") as f:
                json.dump(rep, f, indent=2)
                f.write("\n")
            write_md(rep, os.path.join(d, "training_report.md"))
            print(f"{name}: {len(rows)} simulation rows folded in")


if __name__ == "__main__":
    main()
