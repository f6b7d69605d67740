"""Shared pieces of the tiny-llama training pipeline.

- corpus loading (GSM8K train + the CPython standard library's Python sources),
- seeding,
- aux hidden-state capture (the repo's conventions, see docs/DESIGN.md),
- the EAGLE-3 draft module (SGLang ``LlamaForCausalLMEagle3`` / SpecForge weight
  layout) with a training-time-test (unrolled) forward and the single-chain
  inference forward used by ``simulate.py``.
"""

from __future__ import annotations

import json
import math
import os
import random
import sysconfig
import time
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

EOT = "<|endoftext|>"

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL_DIR = os.path.join(REPO, "models", "tiny-llama")


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def data_dir() -> str:
    """Where the jsonl prompt sets are: $SPECULA_DATA if set, else the repository's datasets/public/."""
    d = os.environ.get("SPECULA_DATA") or os.path.join(REPO, "datasets", "public")
    if not os.path.exists(os.path.join(d, "gsm8k_train.jsonl")):
        raise FileNotFoundError(f"{d}: no gsm8k_train.jsonl (SPECULA_DATA names another folder)")
    return d


def read_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def gsm8k_prompt(question: str) -> str:
    return f"Question: {question.strip()}\nAnswer:"


def gsm8k_doc(row: dict) -> str:
    return gsm8k_prompt(row["question"]) + " " + row["answer"].strip()


def is_heldout(key: str, frac: float = 0.03) -> bool:
    """Deterministic hold-out split by content hash (same split in every script)."""
    return (zlib.crc32(key.encode("utf-8")) % 10000) < frac * 10000


def load_gsm8k_train() -> tuple[list[dict], list[dict]]:
    rows = read_jsonl(os.path.join(data_dir(), "gsm8k_train.jsonl"))
    train = [r for r in rows if not is_heldout(r["question"])]
    val = [r for r in rows if is_heldout(r["question"])]
    return train, val


SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"}


def load_stdlib_code(max_file_bytes: int = 200_000, max_total_bytes: int | None = None):
    """(train, val) lists of (relative path, source) from this interpreter's stdlib."""
    root = sysconfig.get_paths()["stdlib"]
    files = []
    for d, ds, fs in os.walk(root):
        ds[:] = sorted(x for x in ds if x not in SKIP_DIRS and not x.startswith("test"))
        for f in sorted(fs):
            if not f.endswith(".py") or f.startswith("test_"):
                continue
            p = os.path.join(d, f)
            try:
                if os.path.getsize(p) > max_file_bytes:
                    continue
                with open(p, encoding="utf-8") as fh:
                    src = fh.read()
            except (OSError, UnicodeDecodeError):
                continue
            if len(src) < 200:
                continue
            files.append((os.path.relpath(p, root), src))
    files.sort()
    if max_total_bytes is not None:
        out, tot = [], 0
        for rel, src in files:
            if tot + len(src) > max_total_bytes:
                break
            out.append((rel, src))
            tot += len(src)
        files = out
    train = [f for f in files if not is_heldout(f[0])]
    val = [f for f in files if is_heldout(f[0])]
    return root, train, val


# ---------------------------------------------------------------------------
# aux hidden-state capture

def capture_points(layer_ids: list[int]) -> list[int]:
    """Config ids ("boundary" convention, ids as given, -1 = embedding) -> hs indices.

    hs index p = HF output_hidden_states[p] = residual stream entering layer p
    (p = 0: embedding output)."""
    pts = []
    for l in layer_ids:
        pts.append(0 if l == -1 else l)
    return pts


def default_layer_ids(num_layers: int) -> list[int]:
    return [2, num_layers // 2, num_layers - 3]


@torch.no_grad()
def target_forward(target, input_ids: torch.Tensor, points: list[int]):
    """Returns (aux [B,T,3H], logits [B,T,V] float32)."""
    out = target(input_ids=input_ids, output_hidden_states=True, use_cache=False)
    hs = out.hidden_states
    aux = torch.cat([hs[p] for p in points], dim=-1)
    return aux, out.logits.float()


# ---------------------------------------------------------------------------
# EAGLE-3 draft

class RMSNorm(nn.Module):
    def __init__(self, n: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dt)


class Attn(nn.Module):
    def __init__(self, H, nh, nkv, hd):
        super().__init__()
        self.q_proj = nn.Linear(2 * H, nh * hd, bias=False)
        self.k_proj = nn.Linear(2 * H, nkv * hd, bias=False)
        self.v_proj = nn.Linear(2 * H, nkv * hd, bias=False)
        self.o_proj = nn.Linear(nh * hd, H, bias=False)


class MLP(nn.Module):
    def __init__(self, H, I):
        super().__init__()
        self.gate_proj = nn.Linear(H, I, bias=False)
        self.up_proj = nn.Linear(H, I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MidLayer(nn.Module):
    def __init__(self, H, I, nh, nkv, hd, eps):
        super().__init__()
        self.input_layernorm = RMSNorm(H, eps)
        self.hidden_norm = RMSNorm(H, eps)
        self.post_attention_layernorm = RMSNorm(H, eps)
        self.self_attn = Attn(H, nh, nkv, hd)
        self.mlp = MLP(H, I)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def draft_config(target_cfg, layer_ids, draft_vocab_size, geometry: dict | None = None) -> dict:
    """The draft's config: a one-layer Llama with the target's attention geometry and MLP
    width, or, where given, `geometry` (keys intermediate_size, num_attention_heads,
    num_key_value_heads, head_dim), as for a latent-attention target whose geometry a
    Llama layer cannot copy (SpecForge's Kimi / DeepSeek drafts are Llama layers too)."""
    t = target_cfg
    rope_theta = getattr(t, "rope_theta", None)
    if rope_theta is None:
        rope_theta = t.rope_parameters["rope_theta"]
    g = {"intermediate_size": t.intermediate_size, "num_attention_heads": t.num_attention_heads,
         "num_key_value_heads": getattr(t, "num_key_value_heads", None),
         "head_dim": getattr(t, "head_dim", None)}
    g.update(geometry or {})
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": t.hidden_size,
        "intermediate_size": g["intermediate_size"],
        "num_attention_heads": g["num_attention_heads"],
        "num_key_value_heads": g["num_key_value_heads"],
        "head_dim": g["head_dim"],
        "num_hidden_layers": 1,
        "hidden_act": "silu",
        "rms_norm_eps": t.rms_norm_eps,
        "rope_theta": float(rope_theta),
        "max_position_embeddings": t.max_position_embeddings,
        "vocab_size": t.vocab_size,
        "draft_vocab_size": draft_vocab_size,
        "target_hidden_size": t.hidden_size,
        "tie_word_embeddings": False,
        "bos_token_id": t.bos_token_id,
        "eos_token_id": t.eos_token_id,
        "torch_dtype": "bfloat16",
        "eagle_config": {
            "eagle_aux_hidden_state_layer_ids": list(layer_ids),
            "use_aux_hidden_state": True,
        },
    }


class Eagle3Draft(nn.Module):
    """One-layer EAGLE-3 draft; parameter names equal the SGLang/SpecForge checkpoint keys."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = cfg
        H = cfg["hidden_size"]
        Ht = cfg.get("target_hidden_size", H)
        self.H, self.nh, self.nkv, self.hd = H, cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        self.fc = nn.Linear(3 * Ht, H, bias=False)
        self.midlayer = MidLayer(H, cfg["intermediate_size"], self.nh, self.nkv, self.hd, cfg["rms_norm_eps"])
        self.norm = RMSNorm(H, cfg["rms_norm_eps"])
        self.lm_head = nn.Linear(H, cfg["draft_vocab_size"], bias=False)
        self.register_buffer("d2t", torch.zeros(cfg["draft_vocab_size"], dtype=torch.long))
        self.register_buffer("t2d", torch.zeros(cfg["vocab_size"], dtype=torch.bool))
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        self.register_buffer("inv_freq", inv, persistent=False)

    # -- pieces -------------------------------------------------------------
    def set_vocab(self, draft_to_target: torch.Tensor):
        """draft_to_target: ascending target ids of the draft vocab, [D]."""
        D = draft_to_target.numel()
        self.d2t.copy_(draft_to_target - torch.arange(D, device=draft_to_target.device))
        self.t2d.zero_()
        self.t2d[draft_to_target] = True

    def draft_to_target(self, draft_ids):
        return draft_ids + self.d2t[draft_ids]

    def rope(self, x, pos):
        # x [B, T, n, hd], pos [B, T] or [T]
        f = pos.float()[..., None] * self.inv_freq  # [.., T, hd/2]
        emb = torch.cat((f, f), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        if cos.dim() == 2:
            cos, sin = cos[None], sin[None]
        cos, sin = cos[:, :, None, :].to(x.dtype), sin[:, :, None, :].to(x.dtype)
        return x * cos + rotate_half(x) * sin

    def qkv(self, emb, h_in, pos):
        m = self.midlayer
        u = torch.cat((m.input_layernorm(emb), m.hidden_norm(h_in)), dim=-1)
        B, T, _ = u.shape
        q = m.self_attn.q_proj(u).view(B, T, self.nh, self.hd)
        k = m.self_attn.k_proj(u).view(B, T, self.nkv, self.hd)
        v = m.self_attn.v_proj(u).view(B, T, self.nkv, self.hd)
        q, k = self.rope(q, pos), self.rope(k, pos)
        # -> [B, heads, T, hd]; kv repeated to the query heads (GQA)
        rep = self.nh // self.nkv
        q = q.transpose(1, 2)
        k = k.transpose(1, 2).repeat_interleave(rep, dim=1)
        v = v.transpose(1, 2).repeat_interleave(rep, dim=1)
        return q, k, v

    def finish(self, h_in, attn_heads):
        """attn_heads [B, nh, T, hd] -> (g prenorm hidden, draft logits)."""
        m = self.midlayer
        B, _, T, _ = attn_heads.shape
        a = m.self_attn.o_proj(attn_heads.transpose(1, 2).reshape(B, T, self.nh * self.hd))
        h = h_in + a
        h = h + m.mlp(m.post_attention_layernorm(h))
        return h, self.lm_head(self.norm(h))

    # -- training-time test -------------------------------------------------
    def ttt_forward(self, embed, tokens, aux, steps: int):
        """Unrolled forward over whole sequences.

        tokens [B, T] (ground truth), aux [B, T, 3Ht]. Chain i (draft position i)
        at step k takes token x_{i+1+k}, RoPE position i+k and predicts the target's
        prediction at position i+1+k. Returns a list of draft logits [B, T, D], one
        per step; entries whose input token would be past the end are garbage
        (callers mask them)."""
        B, T = tokens.shape
        scale = 1.0 / math.sqrt(self.hd)
        pos0 = torch.arange(T, device=tokens.device)
        causal = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()
        h_in = self.fc(aux)
        logits_all = []
        K0 = V0 = None
        extra_k, extra_v = [], []
        for k in range(steps):
            tok = F.pad(tokens[:, 1 + k:], (0, 1 + k), value=0)  # x_{i+1+k}
            emb = embed(tok).to(h_in.dtype)
            q, kk, vv = self.qkv(emb, h_in, pos0 + k)
            if k == 0:
                K0, V0 = kk, vv
                s0 = (q @ K0.transpose(-1, -2)) * scale
                s0 = s0.float().masked_fill(~causal, float("-inf"))
                p = torch.softmax(s0, dim=-1).to(V0.dtype)
                o = p @ V0
            else:
                extra_k.append(kk)
                extra_v.append(vv)
                s0 = ((q @ K0.transpose(-1, -2)) * scale).float().masked_fill(~causal, float("-inf"))
                sd = torch.stack([(q * ek).sum(-1) for ek in extra_k], dim=-1).float() * scale  # [B,nh,T,k]
                p = torch.softmax(torch.cat((s0, sd), dim=-1), dim=-1)
                p0, pd = p[..., :T].to(V0.dtype), p[..., T:].to(V0.dtype)
                o = p0 @ V0
                for j, ev in enumerate(extra_v):
                    o = o + pd[..., j:j + 1] * ev
            g, logits = self.finish(h_in, o)
            logits_all.append(logits)
            h_in = g
        return logits_all

    # -- inference: one chain from the last position -------------------------
    @torch.no_grad()
    def propose_chain(self, embed, tokens, aux, steps: int):
        """tokens [1, n+1] = context incl. the newest (bonus) token; aux [1, n, 3Ht]
        = target aux states of positions 0..n-1. Returns `steps` proposed target ids."""
        n = aux.shape[1]
        scale = 1.0 / math.sqrt(self.hd)
        dev = tokens.device
        h_in = self.fc(aux)
        emb = embed(tokens[:, 1:n + 1]).to(h_in.dtype)
        pos = torch.arange(n, device=dev)
        q, K0, V0 = self.qkv(emb, h_in, pos)
        causal = torch.ones(n, n, dtype=torch.bool, device=dev).tril()
        s = ((q @ K0.transpose(-1, -2)) * scale).float().masked_fill(~causal, float("-inf"))
        o = torch.softmax(s, -1).to(V0.dtype) @ V0
        g, logits = self.finish(h_in, o)
        g, logits = g[:, -1:], logits[:, -1:]
        out = []
        ek, ev = [], []
        for k in range(steps):
            d = self.draft_to_target(logits.argmax(-1))  # [1,1]
            out.append(int(d.item()))
            if k == steps - 1:
                break
            emb = embed(d).to(g.dtype)
            q, kk, vv = self.qkv(emb, g, torch.tensor([n - 1 + k + 1], device=dev))
            ek.append(kk)
            ev.append(vv)
            Kc = torch.cat([K0] + ek, dim=2)
            Vc = torch.cat([V0] + ev, dim=2)
            s = ((q @ Kc.transpose(-1, -2)) * scale).float()
            o = torch.softmax(s, -1).to(Vc.dtype) @ Vc
            g, logits = self.finish(g, o)
        return out


def save_draft(draft: Eagle3Draft, out_dir: str):
    from safetensors.torch import save_file
    os.makedirs(out_dir, exist_ok=True)
    sd = {}
    for k, v in draft.state_dict().items():
        if k in ("d2t", "t2d"):
            sd[k] = v.detach().cpu().contiguous()
        else:
            sd[k] = v.detach().to(torch.bfloat16).cpu().contiguous()
    save_file(sd, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(draft.cfg, f, indent=2)
        f.write("\n")


def load_draft(path: str, device="cpu", dtype=torch.float32) -> Eagle3Draft:
    from safetensors.torch import load_file
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    d = Eagle3Draft(cfg)
    sd = load_file(os.path.join(path, "model.safetensors"))
    missing, unexpected = d.load_state_dict(sd, strict=False)
    assert not unexpected and set(missing) <= {"inv_freq"}, (missing, unexpected)
    d = d.to(device)
    for n, p in d.named_parameters():
        p.data = p.data.to(dtype)
    return d.eval()


def load_target(path: str, device="cpu", dtype=torch.float32, attn="eager"):
    """A Llama target as LlamaForCausalLM; any other architecture (DeepseekV3ForCausalLM)
    through AutoModelForCausalLM, with transformers' eager experts loop (the per-expert
    reference path; $SPECULA_EXPERTS_IMPL names another, e.g. grouped_mm)."""
    with open(os.path.join(path, "config.json")) as f:
        archs = json.load(f).get("architectures") or ["LlamaForCausalLM"]
    if archs[0] == "LlamaForCausalLM":
        from transformers import LlamaForCausalLM
        m = LlamaForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation=attn)
    else:
        from transformers import AutoModelForCausalLM
        m = AutoModelForCausalLM.from_pretrained(
            path, dtype=dtype, attn_implementation=attn,
            experts_implementation=os.environ.get("SPECULA_EXPERTS_IMPL", "eager"))
        for mod in m.modules():  # keep the routers' correction bias in float32 (as stored)
            if hasattr(mod, "e_score_correction_bias"):
                mod.e_score_correction_bias.data = mod.e_score_correction_bias.data.float()
    return m.to(device).eval()


class TimeBudget:
    """Cuts a run's step count to what fits in `budget_s` seconds from `t0`,
    timing steps 10..40 (past the warm-up); no budget (0 or None) cuts nothing."""

    def __init__(self, budget_s, t0: float, dev: str):
        self.budget_s, self.t0, self.dev, self.mark = budget_s, t0, dev, None

    def steps_within(self, step: int, steps: int) -> int:
        if not self.budget_s or step not in (10, 40):
            return steps
        if self.dev == "cuda":
            torch.cuda.synchronize()
        if step == 10:
            self.mark = time.time()
            return steps
        per = (time.time() - self.mark) / 30 * 1.05
        left = self.budget_s - (time.time() - self.t0)
        if step + left / per < steps:
            steps = max(100, int(step + left / per))
            print(f"time budget: {per * 1000:.0f} ms/step -> steps cut to {steps}", flush=True)
        return steps

