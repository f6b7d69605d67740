"""Estimate greedy acceptance length tau of a draft by simulating chain speculative
decoding (topk 1, --steps draft tokens per verify step) with the target in PyTorch.

Each round: the draft proposes a chain from the last accepted position (step 0 over
the whole context with fc(aux), then steps 1.. on its own outputs), the target
verifies context+chain in one forward, the longest matching prefix is accepted and
the target's next token is added (the bonus). tau = tokens emitted by verify steps /
verify steps (the first token, from prefill, is not counted). Everything is
recomputed each round (no KV cache): slow but simple and exact.

Prompt sets (from datasets/public/, or $SPECULA_DATA): gsm8k (test questions, "Question: q\\nAnswer:"),
humaneval (prompt code as is), mtbench (first turn through the chat template, i.e.
"Question: ...\\nAnswer:"), mtbench_raw (first turn as plain text). The tokenizer
prepends <|endoftext|> (BOS).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def load_prompts(name: str, n: int) -> list[str]:
    d = common.data_dir()
    if name == "gsm8k":
        return [common.gsm8k_prompt(r["question"]) for r in common.read_jsonl(os.path.join(d, "gsm8k_test.jsonl"))[:n]]
    if name == "humaneval":
        return [r["prompt"] for r in common.read_jsonl(os.path.join(d, "humaneval.jsonl"))[:n]]
    if name == "mtbench":
        return [common.gsm8k_prompt(r["turns"][0]) for r in common.read_jsonl(os.path.join(d, "mt_bench.jsonl"))[:n]]
    if name == "mtbench_raw":
        return [r["turns"][0] for r in common.read_jsonl(os.path.join(d, "mt_bench.jsonl"))[:n]]
    raise ValueError(name)


@torch.no_grad()
def run_prompt(target, draft, embed, points, prompt_ids, steps, max_new, eot, dev):
    ctx = torch.tensor([prompt_ids], device=dev)
    aux, logits = common.target_forward(target, ctx, points)
    first = int(logits[0, -1].argmax())
    ctx = torch.cat([ctx, torch.tensor([[first]], device=dev)], 1)
    out = [first]
    accepted_hist = []
    while len(out) < max_new and out[-1] != eot:
        n = ctx.shape[1] - 1
        prop = draft.propose_chain(embed, ctx, aux[:, :n], steps)
        full = torch.cat([ctx, torch.tensor([prop], device=dev)], 1)
        aux_full, lg = common.target_forward(target, full, points)
        tgt = lg[0, n:].argmax(-1).tolist()  # target tokens after ctx, ctx+d1, ...
        a = 0
        while a < steps and prop[a] == tgt[a]:
            a += 1
        emitted = prop[:a] + [tgt[a]]
        if eot in emitted:
            emitted = emitted[:emitted.index(eot) + 1]
        emitted = emitted[:max_new - len(out)]
        accepted_hist.append((a, len(emitted)))
        out += emitted
        ctx = torch.cat([ctx, torch.tensor([emitted], device=dev)], 1)
        aux = aux_full[:, :ctx.shape[1] - 1]
    return out, accepted_hist


@torch.no_grad()
def greedy(target, prompt_ids, max_new, eot, dev):
    ctx = torch.tensor([prompt_ids], device=dev)
    out = []
    while len(out) < max_new and (not out or out[-1] != eot):
        t = int(target(input_ids=ctx, use_cache=False).logits[0, -1].argmax())
        out.append(t)
        ctx = torch.cat([ctx, torch.tensor([[t]], device=dev)], 1)
    return out


def simulate(target, draft, tok, points, sets, n, steps, max_new, dev, check_lossless=True, on_set=None):
    eot = tok.token_to_id(common.EOT)
    embed = target.model.embed_tokens
    res = {}
    for name in sets:
        prompts = load_prompts(name, n)
        emitted = vsteps = lossless = 0
        pos = [0] * (steps + 1)
        t0 = time.time()
        for p in prompts:
            ids = tok.encode(p).ids
            out, hist = run_prompt(target, draft, embed, points, ids, steps, max_new, eot, dev)
            emitted += sum(e for _, e in hist)
            vsteps += len(hist)
            for a, _ in hist:
                for k in range(1, a + 1):
                    pos[k] += 1
            if check_lossless:
                lossless += int(out == greedy(target, ids, max_new, eot, dev))
        res[name] = {"prompts": len(prompts), "tau": round(emitted / max(vsteps, 1), 3),
                     "verify_steps": vsteps, "emitted": emitted,
                     "accept_rate": round((emitted - vsteps) / max(vsteps * steps, 1), 3),
                     "per_position_acceptance": [round(pos[k] / max(vsteps, 1), 3) for k in range(1, steps + 1)],
                     "time_s": round(time.time() - t0, 1)}
        if check_lossless:
            res[name]["lossless_prompts"] = lossless
        print(name, json.dumps(res[name]), flush=True)
        if on_set:
            on_set(res)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=common.MODEL_DIR)
    ap.add_argument("--draft", required=True)
    ap.add_argument("--ids", default=None, help="serve with these aux layer ids instead of the draft's own")
    ap.add_argument("--sets", default="gsm8k,humaneval,mtbench,mtbench_raw")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--no-lossless", action="store_true")
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--cpu", action="store_true")
    args = ap.parse_args()

    dev = "cuda" if torch.cuda.is_available() and not args.cpu else "cpu"
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(args.target, "tokenizer.json"))
    target = common.load_target(args.target, dev, torch.float32, attn="eager")
    draft = common.load_draft(args.draft, dev, torch.float32)
    ids = ([int(s) for s in args.ids.split(",")] if args.ids
           else draft.cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"])
    points = common.capture_points(ids)
    print(f"draft {args.draft} served with ids {ids} (hidden_states {points})", flush=True)
    summary = {"draft": os.path.basename(args.draft.rstrip("/")), "served_ids": ids,
               "trained_ids": draft.cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"],
               "steps": args.steps, "topk": 1, "max_new_tokens": args.max_new,
               "compute": f"float32 ({dev}) on the bf16-stored weights", "sets": {}}

    def write(res):  # after every prompt set, so a run cut short keeps what it measured
        summary["sets"] = dict(res)
        if args.json_out:
            with open(args.json_out, "w") as f:
                json.dump(summary, f, indent=2)
                f.write("\n")

    simulate(target, draft, tok, points, args.sets.split(","), args.n, args.steps, args.max_new, dev,
             check_lossless=not args.no_lossless, on_set=write)


if __name__ == "__main__":
    main()
