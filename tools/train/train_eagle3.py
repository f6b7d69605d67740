"""Train an EAGLE-3 draft for the tiny target, SpecForge-style (online target states).

Each batch: the frozen bf16 target runs over the sequences (its own greedy
continuations from gen_draft_data.py, plus a share of raw training text) and gives
the aux states at the capture points and its logits; the draft is unrolled for
--ttt-steps steps (training-time test, see common.Eagle3Draft.ttt_forward) and
trained with soft cross-entropy against the target's distribution restricted to
the draft vocab, step k weighted 0.8^k. Loss and accuracy only count label
positions inside the generated response (raw chunks: everywhere) whose target
argmax lies in the draft vocab.

Writes <out>/{config.json, model.safetensors, training_report.json, training_report.md}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from loop import BatchDraw, EndAt, cosine_lr, make_batch  # noqa: E402


def step_terms(draft, target, embed, x, plen, slen, points, steps, vocab_t):
    """Returns per-step (loss_sum, n_valid, correct, n_valid_all, correct_all)."""
    B, T = x.shape
    aux, tlogits = common.target_forward(target, x, points)
    ta = tlogits.argmax(-1)  # [B,T] target argmax
    in_vocab = draft.t2d[ta]
    tp = torch.softmax(tlogits[..., vocab_t], dim=-1)  # [B,T,D] soft labels
    del tlogits
    logits = draft.ttt_forward(embed, x, aux, steps)
    out = []
    for k, lg in enumerate(logits):
        sft = 1 + k  # chain i at step k is labelled by the target's prediction at position j = i+1+k
        n = T - sft
        j = torch.arange(sft, T, device=x.device)[None]
        valid_all = (j >= plen[:, None] - 1) & (j <= slen[:, None] - 2)
        ta_k = ta[:, sft:]
        valid = valid_all & in_vocab[:, sft:]
        lp = F.log_softmax(lg[:, :n].float(), dim=-1)
        ce = -(tp[:, sft:] * lp).sum(-1)
        loss_sum = (ce * valid).sum()
        pred = draft.draft_to_target(lg[:, :n].argmax(-1))
        hit = pred == ta_k
        out.append((loss_sum, valid.sum(), (hit & valid).sum(), valid_all.sum(), (hit & valid_all).sum()))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=common.MODEL_DIR)
    ap.add_argument("--data", default=os.path.join(common.REPO, "devrun", "draft_data.pt"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--ids", default=None, help="aux layer ids, boundary convention (-1 = embedding); default [2, L/2, L-3]")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--draft-vocab", type=int, default=2048)
    ap.add_argument("--ttt-steps", type=int, default=5)
    ap.add_argument("--decay", type=float, default=0.8)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--raw-frac", type=float, default=0.2)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--val-max", type=int, default=512, help="validation sequences per set")
    ap.add_argument("--time-budget", type=float, default=None,
                    help="seconds; after 30 steps, cut --steps so training fits (schedule follows)")
    ap.add_argument("--end-at", type=float, default=None,
                    help="unix time by which training must end; every 50 steps --steps is re-fitted "
                         "(never above the requested count) from the last 50 steps' speed (schedule follows)")
    ap.add_argument("--code-frac", type=float, default=None,
                    help="share of the generated rows of a batch drawn from code (code + codedoc); "
                         "default: uniform over all generated sequences")
    ap.add_argument("--vocab-balance", action="store_true",
                    help="draft vocab from per-source token frequencies weighted equally (gsm8k, code)")
    ap.add_argument("--init", default=None, help="start from this draft (weights and vocab)")
    ap.add_argument("--eval-only", action="store_true", help="with --init: evaluate, write nothing")
    ap.add_argument("--draft-geometry", default=None,
                    help="the draft layer's 'intermediate,heads,kv_heads,head_dim' (default: the target's; "
                         "needed for a latent-attention target such as DeepseekV3ForCausalLM)")
    args = ap.parse_args()

    t_start = time.time()
    common.seed_all(args.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    tdtype = torch.bfloat16 if dev == "cuda" else torch.float32
    target = common.load_target(args.target, dev, tdtype, attn="sdpa")
    for p in target.parameters():
        p.requires_grad_(False)
    embed = target.model.embed_tokens
    tcfg = target.config
    L = tcfg.num_hidden_layers
    ids = [int(s) for s in args.ids.split(",")] if args.ids else common.default_layer_ids(L)
    points = common.capture_points(ids)
    print(f"layer ids {ids} -> hidden_states indices {points}", flush=True)

    data = torch.load(args.data, weights_only=False)
    gsm_pool = data["gsm8k_train"]
    code_pool = data["code_train"] + data.get("codedoc_train", [])
    train = gsm_pool + code_pool
    raw = data["raw_train"]
    val_sets = {"gsm8k": data["gsm8k_val"][:args.val_max], "code": data["code_val"][:args.val_max]}
    if data.get("codedoc_val"):
        val_sets["codedoc"] = data["codedoc_val"][:args.val_max]

    # draft vocab: the most frequent tokens of the target-generated training sequences
    counts = np.zeros(tcfg.vocab_size, dtype=np.int64)
    for pl, s in train:
        np.add.at(counts, s.astype(np.int64), 1)
    score = counts.astype(np.float64)
    if args.vocab_balance:
        score = np.zeros(tcfg.vocab_size)
        for pool in (gsm_pool, code_pool):
            c = np.zeros(tcfg.vocab_size, dtype=np.int64)
            for pl, s in pool:
                np.add.at(c, s.astype(np.int64), 1)
            score += c / max(c.sum(), 1)
    if args.init:
        draft = common.load_draft(args.init, dev, torch.float32)
        assert draft.cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == ids, "--ids differ from --init's"
        draft.train()
        cfg = draft.cfg
        vocab_t = (draft.d2t + torch.arange(draft.d2t.numel(), device=dev)).to(dev)
        top = vocab_t.cpu().numpy()
        args.draft_vocab = int(top.size)
    else:
        top = np.argsort(-score, kind="stable")[:args.draft_vocab]
        vocab_t = torch.from_numpy(np.sort(top)).to(dev)
        geometry = None
        if args.draft_geometry:
            gi, gh, gkv, ghd = (int(v) for v in args.draft_geometry.split(","))
            geometry = {"intermediate_size": gi, "num_attention_heads": gh,
                        "num_key_value_heads": gkv, "head_dim": ghd}
        cfg = common.draft_config(tcfg, ids, args.draft_vocab, geometry)
        draft = common.Eagle3Draft(cfg).to(dev)
        draft.set_vocab(vocab_t)
    coverage = float(counts[top].sum() / counts.sum())
    nparams = sum(p.numel() for p in draft.parameters())
    print(f"draft params {nparams / 1e6:.2f}M, draft vocab {args.draft_vocab} covers {coverage:.4f} of train tokens",
          flush=True)

    opt = torch.optim.AdamW(draft.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01,
                            fused=(dev == "cuda"))

    def lr_at(step):
        return cosine_lr(step, args.lr, args.warmup, args.steps)

    ac = dict(device_type=dev, dtype=torch.bfloat16, enabled=(dev == "cuda"))

    @torch.no_grad()
    def evaluate():
        draft.eval()
        res = {}
        for name, samples in val_sets.items():
            tot = np.zeros((args.ttt_steps, 5))
            order = sorted(range(len(samples)), key=lambda i: len(samples[i][1]))
            for b0 in range(0, len(order), args.batch):
                x, pl, sl = make_batch([samples[i] for i in order[b0:b0 + args.batch]], dev)
                with torch.autocast(**ac):
                    terms = step_terms(draft, target, embed, x, pl, sl, points, args.ttt_steps, vocab_t)
                tot += np.array([[float(t) for t in tt] for tt in terms])
            res[name] = {
                "acc": [round(r[2] / max(r[1], 1), 4) for r in tot],
                "acc_incl_oov": [round(r[4] / max(r[3], 1), 4) for r in tot],
                "loss": [round(r[0] / max(r[1], 1), 4) for r in tot],
                "label_positions": int(tot[0][3]),
            }
        draft.train()
        return res

    if args.eval_only:
        v = evaluate()
        print("eval", json.dumps({"step": 0, "init": args.init, "val": v}), flush=True)
        return

    rng = np.random.default_rng(args.seed)
    draw = BatchDraw(rng, train, gsm_pool, code_pool, raw, args.batch, args.raw_frac, args.code_frac)
    weights = [args.decay ** k for k in range(args.ttt_steps)]
    history = []
    t_eval = 5.0
    t0 = time.time()
    steps_requested = args.steps
    budget = common.TimeBudget(args.time_budget, t0, dev)
    end_at = EndAt(args.end_at, steps_requested, args.eval_every, dev)
    step = -1
    while step + 1 < args.steps:
        step += 1
        args.steps = budget.steps_within(step, args.steps)
        args.steps = end_at.steps(step, args.steps, t_eval)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        samples = draw.next()
        x, pl, sl = make_batch(samples, dev)
        with torch.autocast(**ac):
            terms = step_terms(draft, target, embed, x, pl, sl, points, args.ttt_steps, vocab_t)
        loss = sum(w * t[0] / t[1].clamp(min=1) for w, t in zip(weights, terms))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            accs = [round(float(t[2]) / max(float(t[1]), 1), 3) for t in terms]
            print(f"step {step} loss {loss.item():.4f} acc {accs} lr {lr_at(step):.2e} "
                  f"{time.time() - t0:.1f}s", flush=True)
        if (step + 1) % args.eval_every == 0 or step == args.steps - 1:
            te = time.time()
            v = evaluate()
            t_eval = time.time() - te
            history.append({"step": step + 1, "val": v, "elapsed_s": round(time.time() - t0, 1)})
            print("eval", json.dumps(history[-1]), flush=True)
    train_time = time.time() - t0

    common.save_draft(draft, args.out)
    final = history[-1]["val"]
    stats = data.get("stats", {})
    report = {
        "draft": args.out.rstrip("/").split("/")[-1],
        "eagle_aux_hidden_state_layer_ids": ids,
        "capture_points_hidden_states_index": points,
        "capture_points_meaning": [("embedding output" if p == 0 else f"residual stream entering layer {p}")
                                   for p in points],
        "target_num_hidden_layers": L,
        "params": nparams,
        "draft_vocab_size": args.draft_vocab,
        "draft_vocab_coverage_of_train_tokens": round(coverage, 4),
        "validation": final,
        "validation_note": ("teacher-forced top-1 accuracy per unrolled step k (k=0 is the fc(aux) step): "
                            "draft argmax mapped through d2t == target argmax; 'acc' ignores label positions "
                            "whose target argmax is outside the draft vocab, 'acc_incl_oov' counts them as misses; "
                            "validation sequences are the target's greedy continuations of held-out GSM8K "
                            "questions and held-out stdlib code starts (response positions only); 'codedoc' (when present): "
                            "held-out def+docstring starts, whose continuation is a function body"),
        "data": {"train_generated_sequences": len(train), "raw_text_chunks": len(raw),
                 "val_sequences": {k: len(v) for k, v in val_sets.items()}, "generation": stats},
        "training": {"seed": args.seed, "steps": args.steps, "steps_requested": steps_requested, "batch": args.batch,
                     "raw_text_fraction": args.raw_frac, "ttt_steps": args.ttt_steps,
                     "step_weight_decay": args.decay, "loss": "soft CE vs target softmax over the draft vocab",
                     "lr": args.lr, "schedule": f"warmup {args.warmup} + cosine to 0.05x",
                     "code_fraction_of_generated_rows": args.code_frac, "vocab_balanced": args.vocab_balance,
                     "init_from": args.init,
                     "optimizer": "AdamW(0.9,0.95) wd 0.01 clip 1.0",
                     "precision": "bf16 autocast, fp32 master weights; saved bf16",
                     "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
                     "torch": torch.__version__, "train_time_s": round(train_time, 1),
                     "total_time_s": round(time.time() - t_start, 1)},
        "history": history,
    }
    with open(os.path.join(args.out, "training_report.json"), "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    write_md(report, os.path.join(args.out, "training_report.md"))
    print("done", json.dumps(final), flush=True)


def write_md(r, path):
    lines = [f"# Training report: {r['draft']}", "",
             f"- aux layer ids (config, boundary convention): `{r['eagle_aux_hidden_state_layer_ids']}`",
             f"- capture points (HF hidden_states index): `{r['capture_points_hidden_states_index']}` = "
             + "; ".join(r["capture_points_meaning"]),
             f"- params {r['params']:,}, draft vocab {r['draft_vocab_size']} "
             f"(covers {r['draft_vocab_coverage_of_train_tokens']:.1%} of training tokens)",
             f"- data: {r['data']['train_generated_sequences']} target-generated sequences + "
             f"{r['data']['raw_text_chunks']} raw text chunks; validation {r['data']['val_sequences']}",
             f"- training: {r['training']['steps']} steps x batch {r['training']['batch']}, "
             f"{r['training']['ttt_steps']} unrolled steps, {r['training']['train_time_s']} s on "
             f"{r['training']['device']}", "",
             "Validation teacher-forced top-1 accuracy per unrolled step:", "",
             "| set | " + " | ".join(f"step {k}" for k in range(len(r["validation"]["gsm8k"]["acc"]))) + " |",
             "|---|" + "---|" * len(r["validation"]["gsm8k"]["acc"])]
    for name, v in r["validation"].items():
        lines.append(f"| {name} | " + " | ".join(f"{a:.3f}" for a in v["acc"]) + " |")
        lines.append(f"| {name} (OOV = miss) | " + " | ".join(f"{a:.3f}" for a in v["acc_incl_oov"]) + " |")
    lines += ["", r["validation_note"], ""]
    prev = r.get("replaced_draft")
    if prev and prev.get("validation_on_these_val_sets"):
        lines += [f"The draft this one replaced ({prev['training']['steps']} steps), on the same validation sets:", "",
                  "| set | " + " | ".join(f"step {k}" for k in range(len(r["validation"]["gsm8k"]["acc"]))) + " |",
                  "|---|" + "---|" * len(r["validation"]["gsm8k"]["acc"])]
        for name, v in prev["validation_on_these_val_sets"].items():
            lines.append(f"| {name} | " + " | ".join(f"{a:.3f}" for a in v["acc"]) + " |")
            lines.append(f"| {name} (OOV = miss) | " + " | ".join(f"{a:.3f}" for a in v["acc_incl_oov"]) + " |")
        if prev.get("simulation"):
            lines += ["", "Its simulated tau (same settings as below): " + ", ".join(
                f"{k} {v['tau']:.2f}" for k, v in prev["simulation"].items()), ""]
        else:
            lines.append("")
    if r.get("note"):
        lines += ["Note: " + r["note"], ""]
    if "simulation" in r:
        lines += ["Simulated chain speculative greedy decoding (see tools/train/simulate.py):", ""]
        for row in r["simulation"]:
            lines.append(f"- {row}")
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
