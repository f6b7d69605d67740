"""Train an EAGLE-1/2 draft for the tiny target (the EAGLE authors' cnets1.py draft).

Architecture (what specula's engine runs, engine/src/model/eagle_draft.rs): at draft
position i the input is x = fc(cat(embed(x_{i+1}), f_i)) (fc with bias; embed = the
target's frozen embedding; f_i = the target's last hidden state AFTER its final norm,
HF hidden_states[L], the vector its lm_head reads); then one Llama decoder layer
without input layernorm: x = x + attn(x) (RoPE at position i, GQA like the target);
x = x + mlp(post_attention_layernorm(x)). x is the next step's hidden input (fed again
through fc with the next token's embedding) and the logits are the TARGET's lm_head
applied to x, no norm. Full vocabulary (no d2t).

Training as train_eagle3.py trains EAGLE-3 (online target states, unrolled
training-time test with the draft's own outputs fed back, soft cross-entropy against
the target's softmax over the full vocabulary, step k weighted 0.8^k), plus EAGLE-1's
smooth-L1 regression of x against the target's f_{i+1+k} with weight --reg-weight
(0 = off). Chain i at step k takes token x_{i+1+k} at RoPE position i+k and is
labelled by the target at position i+1+k (its distribution and its f).

Writes <out>/{config.json, pytorch_model.bin (float16, torch.save), training_report.json,
training_report.md} in the EAGLE authors' layout (keys fc.*, layers.0.*; no embed_tokens,
lm_head or norm).

    python3 tools/train/train_eagle1.py --data devrun/draft_data.pt --out DIR [--end-at T]
    python3 tools/train/train_eagle1.py --self-check        # CPU: unrolled == chain, save/load
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from loop import BatchDraw, EndAt, cosine_lr, make_batch  # noqa: E402


# ---------------------------------------------------------------------------
# the draft

class Attn1(nn.Module):
    def __init__(self, H, nh, nkv, hd):
        super().__init__()
        self.q_proj = nn.Linear(H, nh * hd, bias=False)
        self.k_proj = nn.Linear(H, nkv * hd, bias=False)
        self.v_proj = nn.Linear(H, nkv * hd, bias=False)
        self.o_proj = nn.Linear(nh * hd, H, bias=False)


class Layer1(nn.Module):
    """A Llama decoder layer without input_layernorm (EAGLE-1 layer 0)."""

    def __init__(self, H, I, nh, nkv, hd, eps):
        super().__init__()
        self.self_attn = Attn1(H, nh, nkv, hd)
        self.post_attention_layernorm = common.RMSNorm(H, eps)
        self.mlp = common.MLP(H, I)


def eagle1_config(tcfg) -> dict:
    rope_theta = getattr(tcfg, "rope_theta", None)
    if rope_theta is None:
        rope_theta = tcfg.rope_parameters["rope_theta"]
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": tcfg.hidden_size,
        "intermediate_size": tcfg.intermediate_size,
        "num_attention_heads": tcfg.num_attention_heads,
        "num_key_value_heads": tcfg.num_key_value_heads,
        "head_dim": tcfg.head_dim,
        "num_hidden_layers": 1,
        "hidden_act": "silu",
        "rms_norm_eps": tcfg.rms_norm_eps,
        "rope_theta": float(rope_theta),
        "max_position_embeddings": tcfg.max_position_embeddings,
        "vocab_size": tcfg.vocab_size,
        "bias": True,
        "tie_word_embeddings": False,
        "bos_token_id": tcfg.bos_token_id,
        "eos_token_id": tcfg.eos_token_id,
        "torch_dtype": "float16",
    }


class Eagle1Draft(nn.Module):
    """Parameter names equal the EAGLE authors' checkpoint keys (fc.*, layers.0.*)."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = cfg
        H = cfg["hidden_size"]
        self.H, self.nh, self.nkv, self.hd = H, cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        self.fc = nn.Linear(2 * H, H, bias=True)
        self.layers = nn.ModuleList([Layer1(H, cfg["intermediate_size"], self.nh, self.nkv, self.hd,
                                            cfg["rms_norm_eps"])])
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        self.register_buffer("inv_freq", inv, persistent=False)

    rope = common.Eagle3Draft.rope

    def inputs(self, emb, h):
        """fc(cat(embedding, hidden)): the layer's input and its residual stream."""
        return self.fc(torch.cat((emb.to(h.dtype), h), dim=-1))

    def qkv(self, x, pos):
        a = self.layers[0].self_attn
        B, T, _ = x.shape
        q = a.q_proj(x).view(B, T, self.nh, self.hd)
        k = a.k_proj(x).view(B, T, self.nkv, self.hd)
        v = a.v_proj(x).view(B, T, self.nkv, self.hd)
        q, k = self.rope(q, pos), self.rope(k, pos)
        rep = self.nh // self.nkv
        q = q.transpose(1, 2)
        k = k.transpose(1, 2).repeat_interleave(rep, dim=1)
        v = v.transpose(1, 2).repeat_interleave(rep, dim=1)
        return q, k, v

    def finish(self, x, attn_heads):
        """x + o_proj(attention) + mlp(post_attention_layernorm(.)): the draft's output hidden."""
        m = self.layers[0]
        B, _, T, _ = attn_heads.shape
        x = x + m.self_attn.o_proj(attn_heads.transpose(1, 2).reshape(B, T, self.nh * self.hd))
        return x + m.mlp(m.post_attention_layernorm(x))

    def ttt_forward(self, embed, tokens, feats, steps: int):
        """Unrolled forward over whole sequences; tokens [B, T], feats [B, T, H] = f (post-norm).
        Returns the output hidden [B, T, H] of each step (chain i at step k at index i);
        entries whose input token would be past the end are garbage (callers mask them)."""
        B, T = tokens.shape
        scale = 1.0 / math.sqrt(self.hd)
        pos0 = torch.arange(T, device=tokens.device)
        causal = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()
        h = feats
        outs = []
        K0 = V0 = None
        extra_k, extra_v = [], []
        for k in range(steps):
            tok = F.pad(tokens[:, 1 + k:], (0, 1 + k), value=0)  # x_{i+1+k}
            x = self.inputs(embed(tok), h)
            q, kk, vv = self.qkv(x, pos0 + k)
            if k == 0:
                K0, V0 = kk, vv
                s0 = ((q @ K0.transpose(-1, -2)) * scale).float().masked_fill(~causal, float("-inf"))
                o = torch.softmax(s0, dim=-1).to(V0.dtype) @ V0
            else:
                extra_k.append(kk)
                extra_v.append(vv)
                s0 = ((q @ K0.transpose(-1, -2)) * scale).float().masked_fill(~causal, float("-inf"))
                sd = torch.stack([(q * ek).sum(-1) for ek in extra_k], dim=-1).float() * scale
                p = torch.softmax(torch.cat((s0, sd), dim=-1), dim=-1)
                p0, pd = p[..., :T].to(V0.dtype), p[..., T:].to(V0.dtype)
                o = p0 @ V0
                for j, ev in enumerate(extra_v):
                    o = o + pd[..., j:j + 1] * ev
            h = self.finish(x, o)
            outs.append(h)
        return outs

    @torch.no_grad()
    def chain_from(self, embed, head, tokens, feats, i: int, steps: int, forced=None):
        """One chain from draft position i, computed step by step as an engine does: step 0
        over positions 0..i (target feats, tokens x_1..x_{i+1}), then steps k >= 1 each on
        one token (forced[k] if given, else the draft's argmax) with the previous output.
        Returns (hidden outputs [steps][H], proposed tokens); head = the target's lm_head."""
        dev = tokens.device
        scale = 1.0 / math.sqrt(self.hd)
        x = self.inputs(embed(tokens[:, 1:i + 2]), feats[:, :i + 1])
        q, K, V = self.qkv(x, torch.arange(i + 1, device=dev))
        causal = torch.ones(i + 1, i + 1, dtype=torch.bool, device=dev).tril()
        s = ((q @ K.transpose(-1, -2)) * scale).float().masked_fill(~causal, float("-inf"))
        g = self.finish(x, torch.softmax(s, -1).to(V.dtype) @ V)[:, -1:]
        outs, toks = [g[0, 0]], []
        for k in range(1, steps):
            t = forced[k] if forced is not None else int(head(g).argmax(-1).item())
            toks.append(t)
            x = self.inputs(embed(torch.tensor([[t]], device=dev)), g)
            q, kk, vv = self.qkv(x, torch.tensor([i + k], device=dev))
            K, V = torch.cat((K, kk), dim=2), torch.cat((V, vv), dim=2)
            s = ((q @ K.transpose(-1, -2)) * scale).float()
            g = self.finish(x, torch.softmax(s, -1).to(V.dtype) @ V)
            outs.append(g[0, 0])
        return outs, toks


def save_eagle1(draft: Eagle1Draft, out_dir: str):
    """The EAGLE authors' layout: config.json + float16 pytorch_model.bin (torch.save of a
    plain dict), keys fc.weight, fc.bias, layers.0.*."""
    os.makedirs(out_dir, exist_ok=True)
    sd = {k: v.detach().to(torch.float16).cpu().contiguous().clone() for k, v in draft.state_dict().items()}
    torch.save(sd, os.path.join(out_dir, "pytorch_model.bin"))
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(draft.cfg, f, indent=2)
        f.write("\n")


def load_eagle1(path: str, device="cpu", dtype=torch.float32) -> Eagle1Draft:
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    d = Eagle1Draft(cfg)
    sd = torch.load(os.path.join(path, "pytorch_model.bin"), map_location="cpu", weights_only=True)
    d.load_state_dict(sd, strict=True)
    return d.to(device=device, dtype=dtype).eval()


# ---------------------------------------------------------------------------
# training

def target_feats(target, x):
    """(f = hidden_states[L] (after the final norm) [B,T,H], logits float32 [B,T,V])."""
    out = target(input_ids=x, output_hidden_states=True, use_cache=False)
    return out.hidden_states[-1], out.logits.float()


def step_terms(draft, target, embed, x, plen, slen, steps):
    """Per step (ce_sum, reg_sum, n_valid, correct)."""
    B, T = x.shape
    with torch.no_grad():
        f, tlogits = target_feats(target, x)
        ta = tlogits.argmax(-1)
        tp = torch.softmax(tlogits, dim=-1)
        del tlogits
    outs = draft.ttt_forward(embed, x, f, steps)
    res = []
    for k, h in enumerate(outs):
        sft = 1 + k
        n = T - sft
        j = torch.arange(sft, T, device=x.device)[None]
        valid = (j >= plen[:, None] - 1) & (j <= slen[:, None] - 2)
        hk = h[:, :n]
        lg = target.lm_head(hk).float()
        ce = -(tp[:, sft:] * F.log_softmax(lg, dim=-1)).sum(-1)
        reg = F.smooth_l1_loss(hk.float(), f[:, sft:].float(), reduction="none").mean(-1)
        hit = lg.argmax(-1) == ta[:, sft:]
        res.append(((ce * valid).sum(), (reg * valid).sum(), valid.sum(), (hit & valid).sum()))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=common.MODEL_DIR)
    ap.add_argument("--data", default=os.path.join(common.REPO, "devrun", "draft_data.pt"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--ttt-steps", type=int, default=5)
    ap.add_argument("--decay", type=float, default=0.8)
    ap.add_argument("--reg-weight", type=float, default=0.0,
                    help="weight of the smooth-L1 regression of the draft's output hidden on the target's f")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--raw-frac", type=float, default=0.2)
    ap.add_argument("--code-frac", type=float, default=None,
                    help="share of the generated rows of a batch drawn from code (code + codedoc)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--val-max", type=int, default=512)
    ap.add_argument("--end-at", type=float, default=None,
                    help="unix time by which training must end (step count re-fitted every 50 steps)")
    ap.add_argument("--init", default=None, help="start from this EAGLE-1 draft")
    ap.add_argument("--eval-only", action="store_true")
    ap.add_argument("--self-check", action="store_true",
                    help="CPU float32: unrolled forward == step-by-step chain; save/load round trip")
    args = ap.parse_args()

    if args.self_check:
        return self_check(args)
    t_start = time.time()
    common.seed_all(args.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    tdtype = torch.bfloat16 if dev == "cuda" else torch.float32
    target = common.load_target(args.target, dev, tdtype, attn="sdpa")
    for p in target.parameters():
        p.requires_grad_(False)
    embed = target.model.embed_tokens
    tcfg = target.config

    data = torch.load(args.data, weights_only=False)
    gsm_pool = data["gsm8k_train"]
    code_pool = data["code_train"] + data.get("codedoc_train", [])
    train = gsm_pool + code_pool
    raw = data["raw_train"]
    val_sets = {"gsm8k": data["gsm8k_val"][:args.val_max], "code": data["code_val"][:args.val_max]}
    if data.get("codedoc_val"):
        val_sets["codedoc"] = data["codedoc_val"][:args.val_max]

    if args.init:
        draft = load_eagle1(args.init, dev, torch.float32).train()
    else:
        draft = Eagle1Draft(eagle1_config(tcfg)).to(dev)
    nparams = sum(p.numel() for p in draft.parameters())
    print(f"EAGLE-1 draft params {nparams:,}, reg weight {args.reg_weight}", flush=True)

    # f = hidden_states[L] must be what the lm_head reads (post-norm)
    with torch.no_grad():
        xx = torch.tensor([[0, 5, 6, 7, 8, 9]], device=dev)
        f, lg = target_feats(target, xx)
        err = (target.lm_head(f).float() - lg).abs().max().item()
        assert err < 1e-2, f"hidden_states[L] is not the lm_head's input (max diff {err})"

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
            tot = np.zeros((args.ttt_steps, 4))
            order = sorted(range(len(samples)), key=lambda i: len(samples[i][1]))
            for b0 in range(0, len(order), args.batch):
                x, pl, sl = make_batch([samples[i] for i in order[b0:b0 + args.batch]], dev)
                with torch.autocast(**ac):
                    terms = step_terms(draft, target, embed, x, pl, sl, args.ttt_steps)
                tot += np.array([[float(t) for t in tt] for tt in terms])
            res[name] = {
                "acc": [round(r[3] / max(r[2], 1), 4) for r in tot],
                "loss": [round(r[0] / max(r[2], 1), 4) for r in tot],
                "reg": [round(r[1] / max(r[2], 1), 4) for r in tot],
                "label_positions": int(tot[0][2]),
            }
        draft.train()
        return res

    if args.eval_only:
        print("eval", json.dumps({"init": args.init, "val": evaluate()}), flush=True)
        return

    rng = np.random.default_rng(args.seed)
    draw = BatchDraw(rng, train, gsm_pool, code_pool, raw, args.batch, args.raw_frac, args.code_frac)
    weights = [args.decay ** k for k in range(args.ttt_steps)]
    history = []
    t_eval = 5.0
    steps_requested = args.steps
    end_at = EndAt(args.end_at, steps_requested, args.eval_every, dev)
    t0 = time.time()
    step = -1
    while step + 1 < args.steps:
        step += 1
        args.steps = end_at.steps(step, args.steps, t_eval)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        samples = draw.next()
        x, pl, sl = make_batch(samples, dev)
        with torch.autocast(**ac):
            terms = step_terms(draft, target, embed, x, pl, sl, args.ttt_steps)
        loss = sum(w * (t[0] + args.reg_weight * t[1]) / t[2].clamp(min=1) for w, t in zip(weights, terms))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == args.steps - 1:
            accs = [round(float(t[3]) / max(float(t[2]), 1), 3) for t in terms]
            regs = [round(float(t[1].detach()) / max(float(t[2]), 1), 3) for t in terms]
            print(f"step {step} loss {loss.item():.4f} acc {accs} reg {regs} lr {lr_at(step):.2e} "
                  f"{time.time() - t0:.1f}s", flush=True)
        if (step + 1) % args.eval_every == 0 or step == args.steps - 1:
            te = time.time()
            v = evaluate()
            t_eval = time.time() - te
            history.append({"step": step + 1, "val": v, "elapsed_s": round(time.time() - t0, 1)})
            print("eval", json.dumps(history[-1]), flush=True)
    train_time = time.time() - t0

    out = args.out or os.path.join(common.MODEL_DIR, "eagle1")
    save_eagle1(draft, out)
    final = history[-1]["val"]
    report = {
        "draft": out.rstrip("/").split("/")[-1],
        "kind": "EAGLE-1/2 (cnets1.py): fc(cat(embed(x_{i+1}), f_i)) with bias, one decoder layer "
                "without input norm, the target's lm_head on the output, full vocabulary",
        "params": nparams,
        "validation": final,
        "validation_note": ("teacher-forced top-1 accuracy per unrolled step k (k = 0 is fed the target's f): "
                            "argmax of the target's lm_head on the draft's output == the target's argmax, "
                            "full vocabulary; 'loss' = soft CE, 'reg' = smooth-L1 of the output vs the "
                            "target's f (mean over the hidden dim); validation sequences are the target's "
                            "greedy continuations of held-out GSM8K questions, stdlib code starts and "
                            "def+docstring starts (response positions only)"),
        "data": {"train_generated_sequences": len(train), "raw_text_chunks": len(raw),
                 "val_sequences": {k: len(v) for k, v in val_sets.items()}, "generation": data.get("stats", {})},
        "training": {"seed": args.seed, "steps": args.steps, "steps_requested": steps_requested,
                     "batch": args.batch, "raw_text_fraction": args.raw_frac,
                     "code_fraction_of_generated_rows": args.code_frac, "ttt_steps": args.ttt_steps,
                     "step_weight_decay": args.decay,
                     "loss": "sum_k 0.8^k (soft CE vs the target softmax over the full vocab "
                             f"+ {args.reg_weight} x smooth-L1(x, f_next))",
                     "reg_weight": args.reg_weight, "lr": args.lr,
                     "schedule": f"warmup {args.warmup} + cosine to 0.05x", "init_from": args.init,
                     "optimizer": "AdamW(0.9,0.95) wd 0.01 clip 1.0",
                     "precision": "bf16 autocast, fp32 master weights; saved float16",
                     "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
                     "torch": torch.__version__, "train_time_s": round(train_time, 1),
                     "total_time_s": round(time.time() - t_start, 1)},
        "history": history,
    }
    with open(os.path.join(out, "training_report.json"), "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print("done", json.dumps(final), flush=True)


def self_check(args):
    """CPU float32 on random weights (a small random perturbation so nothing is symmetric):
    the unrolled training forward equals the step-by-step chain with the same tokens, and
    the saved float16 checkpoint loads back with the expected keys."""
    torch.manual_seed(0)
    target = common.load_target(args.target, "cpu", torch.float32)
    embed = target.model.embed_tokens
    d = Eagle1Draft(eagle1_config(target.config)).eval()
    T, steps = 24, 4
    x = torch.randint(1, target.config.vocab_size, (2, T))
    with torch.no_grad():
        f, _ = target_feats(target, x)
        outs = d.ttt_forward(embed, x, f, steps)
        worst = 0.0
        for b in range(2):
            for i in (0, 3, T - steps - 2):
                forced = [None] + [int(x[b, i + 1 + k]) for k in range(1, steps)]
                ch, _ = d.chain_from(embed, target.lm_head, x[b:b + 1], f[b:b + 1], i, steps, forced)
                for k in range(steps):
                    worst = max(worst, (ch[k] - outs[k][b, i]).abs().max().item())
    print(f"unrolled vs chain: max |diff| {worst:.2e}")
    assert worst < 1e-4
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        save_eagle1(d, tmp)
        sd = torch.load(os.path.join(tmp, "pytorch_model.bin"), weights_only=True)
        print(sorted((k, tuple(v.shape), str(v.dtype)) for k, v in sd.items()))
        d2 = load_eagle1(tmp)
        for (k, v), (k2, v2) in zip(d.state_dict().items(), d2.state_dict().items()):
            assert k == k2 and (v.half().float() - v2).abs().max() == 0
    print("self-check ok")


if __name__ == "__main__":
    main()
