"""Make the drafts' training data: the target's own greedy continuations.

Prompts: every GSM8K train question ("Question: ...\\nAnswer:") and code starts cut
from the stdlib sources (a file's first lines, or a def/class line with the lines
after it). The target (bf16, batched, left-padded) continues each greedily for up
to --max-new tokens, stopping at <|endoftext|>. Held-out questions/files (same
crc32 split as train_target.py) become the validation set. Also stores raw
training-text chunks (a share of the draft batches is plain teacher-forced text).

Writes one torch file (default devrun/draft_data.pt).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

DEF_RE = re.compile(r"^\s*(def|class|async def) ")
FUNC_RE = re.compile(r"^\s*(async def|def) ")
IMPORT_RE = re.compile(r"^(import |from \S+ import )")
DOC_OPEN_RE = re.compile(r'^\s*[rRbBuU]?("""|\'\'\')')


def code_prompts(files, rng: random.Random, per_file: int, max_lines: int = 12):
    out = []
    for _, src in files:
        lines = src.splitlines(keepends=True)
        starts = [i for i, l in enumerate(lines) if DEF_RE.match(l)]
        rng.shuffle(starts)
        picks = [0] + sorted(starts[:per_file - 1])
        for s in picks:
            n = rng.randint(3, max_lines)
            text = "".join(lines[s:s + n])
            if s > 0:
                # dedent methods so prompts look like top-level code starts
                ind = len(lines[s]) - len(lines[s].lstrip())
                text = "".join(l[ind:] if l[:ind].strip() == "" else l for l in lines[s:s + n])
            if len(text.strip()) > 20:
                out.append(text)
    return out


def docstring_prompts(files, rng: random.Random, per_file: int, max_chars: int = 1500):
    """Code starts that end right after a function's docstring: the (dedented) def line(s)
    and the whole docstring, sometimes preceded by a few of the file's import lines, so the
    target's continuation is the function body. Taken from the stdlib files only."""
    out = []
    for _, src in files:
        lines = src.splitlines(keepends=True)
        imports = [l for l in lines[:200] if IMPORT_RE.match(l)]
        cands = []
        for s, l in enumerate(lines):
            if not FUNC_RE.match(l):
                continue
            # signature: up to the first line ending with ':' (multi-line signatures)
            e = next((j for j in range(s, min(s + 8, len(lines))) if lines[j].rstrip().endswith(":")), None)
            if e is None or e + 1 >= len(lines):
                continue
            m = DOC_OPEN_RE.match(lines[e + 1])
            if not m:
                continue
            q = m.group(1)
            rest = lines[e + 1].split(q, 1)[1]
            if q in rest:
                end = e + 1  # one-line docstring
            else:
                end = next((j for j in range(e + 2, min(e + 60, len(lines))) if q in lines[j]), None)
                if end is None:
                    continue
            cands.append((s, end))
        rng.shuffle(cands)
        for s, end in cands[:per_file]:
            ind = len(lines[s]) - len(lines[s].lstrip())
            text = "".join(l[ind:] if l[:ind].strip() == "" else l for l in lines[s:end + 1])
            r = rng.random()
            if imports and r < 0.4:
                text = "".join(rng.sample(imports, min(len(imports), rng.randint(1, 3)))) + "\n\n" + text
            elif r < 0.7:
                text = "\n\n" + text
            if 40 < len(text) <= max_chars:
                out.append(text)
    return out


@torch.no_grad()
def generate(model, tok, prompts, max_new, batch, max_prompt, dev, eot):
    encs = [e.ids[:max_prompt] for e in tok.encode_batch(prompts, add_special_tokens=True)]
    order = sorted(range(len(encs)), key=lambda i: len(encs[i]))
    results = [None] * len(encs)
    t0 = time.time()
    for b0 in range(0, len(order), batch):
        idx = order[b0:b0 + batch]
        L = max(len(encs[i]) for i in idx)
        ids = torch.full((len(idx), L), eot, dtype=torch.long)
        mask = torch.zeros((len(idx), L), dtype=torch.long)
        for r, i in enumerate(idx):
            e = encs[i]
            ids[r, L - len(e):] = torch.tensor(e)
            mask[r, L - len(e):] = 1
        out = model.generate(input_ids=ids.to(dev), attention_mask=mask.to(dev), do_sample=False,
                             max_new_tokens=max_new, eos_token_id=eot, pad_token_id=eot,
                             repetition_penalty=None, top_k=None, top_p=None, temperature=None)
        gen = out[:, L:].cpu()
        for r, i in enumerate(idx):
            g = gen[r].tolist()
            if eot in g:
                g = g[:g.index(eot) + 1]
            results[i] = (len(encs[i]), np.asarray(encs[i] + g, dtype=np.int16))
        print(f"  generated {min(b0 + batch, len(order))}/{len(order)} ({time.time() - t0:.1f}s)", flush=True)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=common.MODEL_DIR)
    ap.add_argument("--out", default=os.path.join(common.REPO, "devrun", "draft_data.pt"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--max-new", type=int, default=256)
    ap.add_argument("--max-prompt", type=int, default=160)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--code-per-file", type=int, default=10)
    ap.add_argument("--doc-per-file", type=int, default=0,
                    help="def+docstring code starts per stdlib file (codedoc_train/codedoc_val); 0 = none")
    ap.add_argument("--raw-chunks", type=int, default=6000)
    ap.add_argument("--raw-len", type=int, default=384)
    ap.add_argument("--limit", type=int, default=None, help="cap prompts per source (smoke tests)")
    ap.add_argument("--max-code-bytes", type=int, default=None)
    args = ap.parse_args()

    common.seed_all(args.seed)
    rng = random.Random(args.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(args.target, "tokenizer.json"))
    eot = tok.token_to_id(common.EOT)
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    model = common.load_target(args.target, dev, dtype, attn="sdpa")

    gsm_train, gsm_val = common.load_gsm8k_train()
    _, code_train, code_val = common.load_stdlib_code(max_total_bytes=args.max_code_bytes)
    sets = {
        "gsm8k_train": [common.gsm8k_prompt(r["question"]) for r in gsm_train],
        "gsm8k_val": [common.gsm8k_prompt(r["question"]) for r in gsm_val],
        "code_train": code_prompts(code_train, rng, args.code_per_file),
        "code_val": code_prompts(code_val, rng, args.code_per_file),
    }
    if args.doc_per_file:
        sets["codedoc_train"] = docstring_prompts(code_train, rng, args.doc_per_file)
        sets["codedoc_val"] = docstring_prompts(code_val, rng, args.doc_per_file)
        for k in ("codedoc_train", "codedoc_val"):  # keep whole docstrings only (no truncated prompts)
            lens = [len(e.ids) for e in tok.encode_batch(sets[k], add_special_tokens=True)]
            sets[k] = [p for p, n in zip(sets[k], lens) if n <= args.max_prompt]
    if args.limit:
        sets = {k: v[:args.limit] for k, v in sets.items()}
    print({k: len(v) for k, v in sets.items()}, flush=True)

    t0 = time.time()
    data = {}
    # one pass over all sets (fewer, fuller batches), split afterwards
    names = list(sets)
    allp = [p for n in names for p in sets[n]]
    gen = generate(model, tok, allp, args.max_new, args.batch, args.max_prompt, dev, eot)
    o = 0
    for name in names:
        data[name] = gen[o:o + len(sets[name])]
        o += len(sets[name])
    gen_time = time.time() - t0

    # raw teacher-forced chunks of the training text
    docs = [common.gsm8k_doc(r) for r in gsm_train] + [s for _, s in code_train]
    rng.shuffle(docs)
    stream = np.concatenate([np.asarray(e.ids, dtype=np.int16)
                             for e in tok.encode_batch(docs, add_special_tokens=True)])
    nrng = np.random.default_rng(args.seed)
    starts = nrng.integers(0, len(stream) - args.raw_len, size=args.raw_chunks)
    data["raw_train"] = [(1, stream[s:s + args.raw_len].copy()) for s in starts]

    stats = {k: {"sequences": len(v), "tokens": int(sum(len(x[1]) for x in v)),
                 "response_tokens": int(sum(len(x[1]) - x[0] for x in v))} for k, v in data.items()}
    stats["generation_time_s"] = round(gen_time, 1)
    stats["max_new_tokens"] = args.max_new
    print(stats, flush=True)
    data["stats"] = stats
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    torch.save(data, args.out)


if __name__ == "__main__":
    main()
