#!/usr/bin/env python3
"""Context-length tiers from real long text (issue 17, item 4).

Writes datasets/context_tiers/context_tiers.jsonl: prompts of about 256, 512,
1k, 1.9k, 4k, 16k and 32k input tokens (category ctx256 ... ctx32k; ctx1900
is the longest that fits a 2048-position model such as models/tiny-llama
with room to generate), each made of Spec-Bench's
summarization (CNN/Daily Mail) and RAG (Natural Questions) documents from
datasets/public/spec_bench.jsonl (Apache-2.0; see datasets/README.md),
concatenated in file order from a different starting record per prompt, cut
at a character budget, followed by one instruction. Token counts are the
tokenizer's business: the budget is --chars-per-token characters per token
(3.1 measured on tiny-llama's tokenizer over these documents); requests.csv
records each prompt's real `prompt_tokens`.

    python3 tools/datasets/context_tiers.py [--per-tier N] [--chars-per-token 3.1]
"""
import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# (category, tokens, prompts): the short tiers are cheap, so they get more prompts.
TIERS = [
    ("ctx256", 256, 4),
    ("ctx512", 512, 4),
    ("ctx1k", 1024, 4),
    ("ctx1900", 1900, 4),
    ("ctx4k", 4096, 2),
    ("ctx16k", 16384, 2),
    ("ctx32k", 32768, 2),
]
ASK = "\n\nSummarize the text above in three sentences."


def documents():
    for line in open(ROOT / "datasets/public/spec_bench.jsonl", encoding="utf-8"):
        r = json.loads(line)
        if r.get("category") in ("summarization", "rag"):
            yield r["turns"][0]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-tier", type=int, default=None, help="prompts per tier (default: the table's)")
    p.add_argument("--chars-per-token", type=float, default=3.1)
    p.add_argument("--out", default=str(ROOT / "datasets/context_tiers/context_tiers.jsonl"))
    a = p.parse_args()
    docs = list(documents())
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        for name, tokens, count in TIERS:
            budget = int(tokens * a.chars_per_token) - len(ASK)
            for i in range(a.per_tier or count):
                text, k = "", (i * 37) % len(docs)
                while len(text) < budget:
                    text += docs[k % len(docs)].strip() + "\n\n"
                    k += 1
                text = text[:budget].rsplit(" ", 1)[0] + ASK
                rec = {"question_id": f"{name}-{i}", "category": name, "turns": [text]}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
