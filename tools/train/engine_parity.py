"""Greedy parity of the Rust engine with transformers on a trained target (CPU, float32).

For the first --n prompts of GSM8K test ("Question: ...\\nAnswer:") and HumanEval (as is):
transformers' greedy continuation (float32 weights upcast from the checkpoint, eager
attention, CPU), once per experts implementation given (--experts: transformers'
per-expert `eager` loop, and `grouped_mm`, its default), against `specula generate --json`
token ids, plain greedy and, with --draft, speculative (steps 5, chain), which must equal
plain greedy (lossless). Token ids come from the same tokenizer.json (BOS prepended).

    python3 tools/train/engine_parity.py --target models/tiny-deepseek-v3 \\
        --draft models/tiny-deepseek-v3/eagle3-embed --n 4 --max-new 64 --out parity.json

Reports, per prompt and comparison, whether the tokens are equal and the first position
where they differ (with transformers' top-2 logit gap there: a near-tie is float noise).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def prompts(n: int) -> list[tuple[str, str]]:
    d = common.data_dir()
    gsm = common.read_jsonl(os.path.join(d, "gsm8k_test.jsonl"))[:n]
    he = common.read_jsonl(os.path.join(d, "humaneval.jsonl"))[:n]
    return ([(f"gsm8k[{i}]", common.gsm8k_prompt(r["question"])) for i, r in enumerate(gsm)]
            + [(f"humaneval[{i}]", r["prompt"]) for i, r in enumerate(he)])


def engine(binary, target, draft, prompt, max_new):
    cmd = [binary, "generate", "--cpu-threads", "1", "--target", target, "--prompt", prompt,
           "--max-new-tokens", str(max_new), "--ignore-eos", "--json"]
    if draft:
        cmd += ["--draft", draft, "--steps", "5"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


@torch.no_grad()
def hf_greedy(model, ids, max_new):
    x = torch.tensor([ids])
    out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=False,
                         max_new_tokens=max_new, min_new_tokens=max_new, eos_token_id=None,
                         pad_token_id=0, output_logits=True, return_dict_in_generate=True,
                         repetition_penalty=None, top_k=None, top_p=None, temperature=None)
    toks = out.sequences[0, len(ids):].tolist()
    gaps = []
    for lg in out.logits:
        t2 = torch.topk(lg[0].float(), 2).values
        gaps.append(float(t2[0] - t2[1]))
    return toks, gaps


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", default=None)
    ap.add_argument("--binary", default=os.path.join(common.REPO, "target", "release", "specula"))
    ap.add_argument("--n", type=int, default=4, help="prompts per set")
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--experts", default="eager,grouped_mm")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.manual_seed(0)
    import transformers
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(args.target, "tokenizer.json"))
    models = {}
    for impl in args.experts.split(","):
        os.environ["SPECULA_EXPERTS_IMPL"] = impl
        models[impl] = common.load_target(args.target, "cpu", torch.float32, attn="eager")
    rows = []
    for name, text in prompts(args.n):
        ids = tok.encode(text, add_special_tokens=True).ids
        row = {"prompt": name, "prompt_tokens": len(ids)}
        plain = engine(args.binary, args.target, None, text, args.max_new)
        row["engine_greedy"] = plain["token_ids"]
        for impl, m in models.items():
            toks, gaps = hf_greedy(m, ids, args.max_new)
            d = first_diff(toks, plain["token_ids"])
            row[f"hf_{impl}_equal"] = d is None
            if d is not None:
                row[f"hf_{impl}_first_diff"] = d
                row[f"hf_{impl}_top2_gap_there"] = round(gaps[d], 5)
            row[f"hf_{impl}_min_top2_gap"] = round(min(gaps), 5)
        if args.draft:
            spec = engine(args.binary, args.target, args.draft, text, args.max_new)
            row["speculative_equals_greedy"] = spec["token_ids"] == plain["token_ids"]
            row["speculative_tau"] = spec["tau"]
        del row["engine_greedy"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {"transformers": transformers.__version__, "torch": torch.__version__,
               "target": args.target, "draft": args.draft, "max_new_tokens": args.max_new,
               "prompts": len(rows)}
    for impl in models:
        summary[f"hf_{impl}_equal"] = sum(r[f"hf_{impl}_equal"] for r in rows)
    if args.draft:
        summary["speculative_equals_greedy"] = sum(r["speculative_equals_greedy"] for r in rows)
    print(json.dumps(summary), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"summary": summary, "rows": rows}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
