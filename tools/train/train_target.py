"""Train the byte-level BPE tokenizer and the tiny Llama target from scratch.

Data: GSM8K train ("Question: ...\\nAnswer: ..." documents) + the Python sources of
the running interpreter's standard library (test folders and files > 200 kB skipped).
A deterministic 3% of GSM8K questions and of stdlib files (by crc32) is held out:
they give the validation loss and, later, the drafts' validation prompts.

Writes models/tiny-llama/{config.json, generation_config.json, model.safetensors,
tokenizer.json, tokenizer_config.json, training_report.json}.

`--arch deepseek_v3` trains a DeepseekV3ForCausalLM target instead (multi-head latent
attention, routed + shared experts, sigmoid group-limited routing; models/tiny-deepseek-v3);
`--tokenizer-from DIR` reuses DIR's tokenizer.json / tokenizer_config.json instead of
training one. The routers' `e_score_correction_bias` is updated as DeepSeek-V3's
auxiliary-loss-free balancing does (after each step, bias += speed * sign(mean load - load)
per expert; transformers leaves the buffer at zero).
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

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402
from common import EOT  # noqa: E402

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ message['content'] | trim }}\n"
    "{% elif message['role'] == 'user' %}Question: {{ message['content'] | trim }}\nAnswer:"
    "{% elif message['role'] == 'assistant' %} {{ message['content'] | trim }}{{ eos_token }}"
    "{% endif %}"
    "{% endfor %}"
)


def train_tokenizer(texts, vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    eot_id = tok.token_to_id(EOT)
    assert eot_id == 0
    # Llama-3 style: encode(text) (add_special_tokens=True) prepends BOS.
    tok.post_processor = processors.TemplateProcessing(
        single=f"{EOT} $A", pair=f"{EOT} $A {EOT} $B:1", special_tokens=[(EOT, eot_id)])
    return tok


def save_tokenizer(tok, out_dir: str, max_len: int):
    """tokenizer.json + a plain tokenizer_config.json (chat template inline)."""
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": EOT, "eos_token": EOT, "pad_token": EOT, "unk_token": None,
        "add_bos_token": True, "add_eos_token": False,
        "model_max_length": max_len, "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")


def encode_docs(tok, texts):
    """Each document -> [EOT] + ids (EOT is both BOS and EOS; the stream ends with EOT)."""
    encs = tok.encode_batch(texts, add_special_tokens=True)
    return [np.asarray(e.ids, dtype=np.int32) for e in encs]


class Stream:
    def __init__(self, docs, eot_id):
        self.starts = np.cumsum([0] + [len(d) for d in docs])[:-1]
        self.ids = np.concatenate(docs + [np.asarray([eot_id], dtype=np.int32)])

    def sample(self, rng, n, T, aligned_frac):
        out = np.empty((n, T + 1), dtype=np.int64)
        for r in range(n):
            if rng.random() < aligned_frac:
                s = int(self.starts[rng.integers(len(self.starts))])
                s = min(s, len(self.ids) - T - 1)
            else:
                s = int(rng.integers(0, len(self.ids) - T - 1))
            out[r] = self.ids[s:s + T + 1]
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=common.MODEL_DIR)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--inter", type=int, default=768)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=1001)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--gsm-frac", type=float, default=0.3, help="share of batch rows drawn from GSM8K")
    ap.add_argument("--max-code-bytes", type=int, default=None)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--time-budget", type=float, default=None,
                    help="seconds; after 30 steps, cut --steps so training fits (schedule follows)")
    ap.add_argument("--arch", choices=["llama", "deepseek_v3"], default="llama")
    ap.add_argument("--tokenizer-from", default=None,
                    help="copy tokenizer.json / tokenizer_config.json from this folder instead of training one")
    # deepseek_v3 only
    ap.add_argument("--moe-inter", type=int, default=128)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--experts-per-tok", type=int, default=2)
    ap.add_argument("--shared-experts", type=int, default=1)
    ap.add_argument("--n-group", type=int, default=4)
    ap.add_argument("--topk-group", type=int, default=2)
    ap.add_argument("--first-dense", type=int, default=1)
    ap.add_argument("--q-lora-rank", type=int, default=128)
    ap.add_argument("--kv-lora-rank", type=int, default=64)
    ap.add_argument("--qk-nope-dim", type=int, default=32)
    ap.add_argument("--qk-rope-dim", type=int, default=16)
    ap.add_argument("--v-head-dim", type=int, default=32)
    ap.add_argument("--routed-scale", type=float, default=2.5)
    ap.add_argument("--bias-update", type=float, default=1e-3,
                    help="aux-loss-free balancing speed for e_score_correction_bias (0: off)")
    ap.add_argument("--experts-impl", default="eager",
                    help="transformers experts implementation used for training (eager, grouped_mm, ...)")
    args = ap.parse_args()

    t_start = time.time()
    common.seed_all(args.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    os.makedirs(args.out, exist_ok=True)

    gsm_train, gsm_val = common.load_gsm8k_train()
    stdlib_root, code_train, code_val = common.load_stdlib_code(max_total_bytes=args.max_code_bytes)
    gsm_train_txt = [common.gsm8k_doc(r) for r in gsm_train]
    gsm_val_txt = [common.gsm8k_doc(r) for r in gsm_val]
    code_train_txt = [s for _, s in code_train]
    code_val_txt = [s for _, s in code_val]
    print(f"data: gsm8k {len(gsm_train_txt)}+{len(gsm_val_txt)} docs, stdlib {stdlib_root}: "
          f"{len(code_train_txt)}+{len(code_val_txt)} files, "
          f"{sum(map(len, code_train_txt)) / 1e6:.1f} MB code", flush=True)

    t0 = time.time()
    if args.tokenizer_from:
        import shutil
        from tokenizers import Tokenizer
        for fn in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(os.path.join(args.tokenizer_from, fn), os.path.join(args.out, fn))
        tok = Tokenizer.from_file(os.path.join(args.out, "tokenizer.json"))
    else:
        tok = train_tokenizer(gsm_train_txt + code_train_txt, args.vocab)
        save_tokenizer(tok, args.out, max_len=2048)
    t_tok = time.time() - t0
    eot = tok.token_to_id(EOT)
    print(f"tokenizer: vocab {tok.get_vocab_size()} in {t_tok:.1f}s", flush=True)

    enc = {k: encode_docs(tok, v) for k, v in
           [("gsm_train", gsm_train_txt), ("gsm_val", gsm_val_txt),
            ("code_train", code_train_txt), ("code_val", code_val_txt)]}
    ntok = {k: int(sum(len(d) for d in v)) for k, v in enc.items()}
    print("tokens:", ntok, flush=True)
    chars = sum(map(len, gsm_train_txt)) + sum(map(len, code_train_txt))
    streams = {k: Stream(v, eot) for k, v in enc.items()}

    if args.arch == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM
        cfg = LlamaConfig(
            vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.inter,
            num_hidden_layers=args.layers, num_attention_heads=args.heads,
            num_key_value_heads=args.kv_heads, head_dim=args.hidden // args.heads,
            max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
            tie_word_embeddings=False, bos_token_id=eot, eos_token_id=eot, pad_token_id=eot,
            attention_bias=False, mlp_bias=False, hidden_act="silu", initializer_range=0.02)
        model = LlamaForCausalLM(cfg).to(dev)
    else:
        from transformers import DeepseekV3Config, DeepseekV3ForCausalLM
        cfg = DeepseekV3Config(
            vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.inter,
            moe_intermediate_size=args.moe_inter, num_hidden_layers=args.layers,
            num_attention_heads=args.heads, num_key_value_heads=args.heads,
            n_shared_experts=args.shared_experts, n_routed_experts=args.experts,
            routed_scaling_factor=args.routed_scale, kv_lora_rank=args.kv_lora_rank,
            q_lora_rank=args.q_lora_rank, qk_rope_head_dim=args.qk_rope_dim,
            v_head_dim=args.v_head_dim, qk_nope_head_dim=args.qk_nope_dim,
            n_group=args.n_group, topk_group=args.topk_group,
            num_experts_per_tok=args.experts_per_tok, first_k_dense_replace=args.first_dense,
            norm_topk_prob=True, max_position_embeddings=2048, rms_norm_eps=1e-5,
            rope_theta=10000.0, rope_interleave=True, tie_word_embeddings=False,
            bos_token_id=eot, eos_token_id=eot, pad_token_id=eot, attention_bias=False,
            hidden_act="silu", initializer_range=0.02,
            experts_implementation=args.experts_impl)
        model = DeepseekV3ForCausalLM(cfg).to(dev)
        print(f"experts implementation (training): {model.config._experts_implementation}", flush=True)
    routers = []  # (layer index, router module, expert load counts of the current step)
    if args.arch == "deepseek_v3":
        for li, layer in enumerate(model.model.layers):
            gate = getattr(layer.mlp, "gate", None)
            if gate is not None and hasattr(gate, "e_score_correction_bias"):
                cnt = torch.zeros(gate.num_experts, device=dev)
                routers.append((li, gate, cnt))

                def hook(mod, inp, out, cnt=cnt):
                    if mod.training:
                        cnt += torch.bincount(out[2].reshape(-1), minlength=cnt.numel()).float()
                gate.register_forward_hook(hook)
    nparams = sum(p.numel() for p in model.parameters())
    print(f"target params: {nparams / 1e6:.2f}M", flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
                            fused=(dev == "cuda"))

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        p = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))

    rng = np.random.default_rng(args.seed)
    val_rng = np.random.default_rng(args.seed + 1)
    n_val = 32 if dev == "cuda" else 4
    val_batches = {
        "gsm8k": torch.from_numpy(streams["gsm_val"].sample(val_rng, n_val, args.seq, 1.0)),
        "code": torch.from_numpy(streams["code_val"].sample(val_rng, n_val, args.seq, 0.5)),
    }

    @torch.no_grad()
    def evaluate():
        model.eval()
        res = {}
        for name, b in val_batches.items():
            losses = []
            for i in range(0, len(b), 16):
                x = b[i:i + 16].to(dev)
                with torch.autocast(dev, dtype=torch.bfloat16, enabled=(dev == "cuda")):
                    out = model(input_ids=x[:, :-1], use_cache=False)
                logits = out.logits.float()
                l = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                      x[:, 1:].reshape(-1))
                losses.append(l.item())
            res[name] = float(np.mean(losses))
        model.train()
        return res

    history = []
    model.train()
    t0 = time.time()
    n_gsm = int(round(args.batch * args.gsm_frac))
    steps_requested = args.steps
    budget = common.TimeBudget(args.time_budget, t0, dev)
    step = -1
    while step + 1 < args.steps:
        step += 1
        args.steps = budget.steps_within(step, args.steps)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        xb = np.concatenate([streams["gsm_train"].sample(rng, n_gsm, args.seq, 1.0),
                             streams["code_train"].sample(rng, args.batch - n_gsm, args.seq, 0.3)])
        x = torch.from_numpy(xb).to(dev, non_blocking=True)
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=(dev == "cuda")):
            logits = model(input_ids=x[:, :-1], use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                                 x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        imbalance = None
        if routers:
            with torch.no_grad():
                worst = 0.0
                for li, gate, cnt in routers:
                    load = cnt / cnt.sum().clamp(min=1)
                    if args.bias_update > 0:
                        gate.e_score_correction_bias += args.bias_update * torch.sign(load.mean() - load)
                    worst = max(worst, float(load.max() / load.mean()))
                    cnt.zero_()
                imbalance = worst
        if step % 50 == 0 or step == args.steps - 1:
            extra = f" max-load/mean {imbalance:.2f}" if imbalance is not None else ""
            print(f"step {step} loss {loss.item():.4f} lr {lr_at(step):.2e} "
                  f"{time.time() - t0:.1f}s{extra}", flush=True)
        if (step + 1) % args.eval_every == 0 or step == args.steps - 1:
            v = evaluate()
            history.append({"step": step + 1, "train_loss": loss.item(), "val_loss": v,
                            "elapsed_s": round(time.time() - t0, 1)})
            print("eval", history[-1], flush=True)
    train_time = time.time() - t0

    if args.arch == "llama":
        model = model.to(torch.bfloat16)
    else:  # the routers' e_score_correction_bias buffers stay float32, as in DeepSeek-V3's checkpoint
        for p in model.parameters():
            p.data = p.data.to(torch.bfloat16)
    model.config.use_cache = True
    model.save_pretrained(args.out, safe_serialization=True)
    # Older readers (and the Rust engine) look for these top-level keys.
    cpath = os.path.join(args.out, "config.json")
    with open(cpath) as f:
        c = json.load(f)
    c["rope_theta"] = 10000.0
    c["torch_dtype"] = "bfloat16"
    c["dtype"] = "bfloat16"
    if args.arch == "deepseek_v3":
        c.pop("experts_implementation", None)
        c.pop("_experts_implementation", None)
        c["scoring_func"] = "sigmoid"
        c["topk_method"] = "noaux_tc"
        c["moe_layer_freq"] = 1
    with open(cpath, "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")

    final = history[-1]["val_loss"]
    report = {
        "model": ({"params": nparams, "vocab_size": args.vocab, "hidden_size": args.hidden,
                   "intermediate_size": args.inter, "num_hidden_layers": args.layers,
                   "num_attention_heads": args.heads, "num_key_value_heads": args.kv_heads,
                   "head_dim": args.hidden // args.heads, "tie_word_embeddings": False,
                   "stored_dtype": "bfloat16"} if args.arch == "llama" else
                  {"architecture": "DeepseekV3ForCausalLM", "params": nparams, "vocab_size": args.vocab,
                   "hidden_size": args.hidden, "num_hidden_layers": args.layers,
                   "dense_intermediate_size": args.inter, "first_k_dense_replace": args.first_dense,
                   "num_attention_heads": args.heads, "q_lora_rank": args.q_lora_rank,
                   "kv_lora_rank": args.kv_lora_rank, "qk_nope_head_dim": args.qk_nope_dim,
                   "qk_rope_head_dim": args.qk_rope_dim, "v_head_dim": args.v_head_dim,
                   "n_routed_experts": args.experts, "moe_intermediate_size": args.moe_inter,
                   "num_experts_per_tok": args.experts_per_tok, "n_shared_experts": args.shared_experts,
                   "n_group": args.n_group, "topk_group": args.topk_group,
                   "routed_scaling_factor": args.routed_scale, "norm_topk_prob": True,
                   "scoring_func": "sigmoid", "tie_word_embeddings": False,
                   "experts_implementation_in_training": args.experts_impl,
                   "e_score_correction_bias_update": args.bias_update,
                   "e_score_correction_bias_final": {str(li): [round(float(b), 4) for b in gate.e_score_correction_bias]
                                                     for li, gate, _ in routers},
                   "stored_dtype": "bfloat16"}),
        "data": {"gsm8k_train_docs": len(gsm_train_txt), "gsm8k_val_docs": len(gsm_val_txt),
                 "stdlib_root": stdlib_root, "python": sys.version.split()[0],
                 "code_train_files": len(code_train_txt), "code_val_files": len(code_val_txt),
                 "train_chars": chars, "tokens": ntok,
                 "chars_per_token": round(chars / (ntok["gsm_train"] + ntok["code_train"]), 3),
                 "gsm8k_row_fraction": args.gsm_frac},
        "training": {"seed": args.seed, "steps": args.steps, "steps_requested": steps_requested, "batch": args.batch, "seq_len": args.seq,
                     "tokens_seen": args.steps * args.batch * args.seq, "lr": args.lr,
                     "schedule": f"linear warmup {args.warmup} + cosine to 0.1x",
                     "optimizer": "AdamW(0.9,0.95) wd 0.1 clip 1.0", "autocast": "bf16" if dev == "cuda" else "none",
                     "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
                     "torch": torch.__version__, "train_time_s": round(train_time, 1),
                     "tokenizer_time_s": round(t_tok, 1),
                     "total_time_s": round(time.time() - t_start, 1)},
        "final_val_loss": final,
        "final_val_ppl": {k: round(math.exp(v), 3) for k, v in final.items()},
        "history": history,
    }
    with open(os.path.join(args.out, "training_report.json"), "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print("done", json.dumps(report["final_val_ppl"]), flush=True)


if __name__ == "__main__":
    main()
