#!/usr/bin/env python3
"""Writes a random bf16 checkpoint with a model's exact tensor names and
shapes (a Llama / Qwen2 config.json), sharded like save_pretrained
(model-0000i-of-0000n.safetensors + model.safetensors.index.json), and
optionally an EAGLE-3 draft in the SGLang layout. Tensors are drawn with
torch on the GPU (bf16, scale 0.02; norms 1) and saved shard by shard with
safetensors, so host memory holds one shard at a time.

  write_random_checkpoint.py CONFIG.json OUT --shards 4 [--draft OUT/eagle3 --draft-vocab 32000]
"""
import argparse, json, os, shutil, time
import torch
from safetensors.torch import save_file


def target_tensors(c):
    h, i, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    nh, kv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = c.get("head_dim") or h // nh
    bias = c.get("attention_bias", c.get("model_type") == "qwen2")
    yield "model.embed_tokens.weight", (c["vocab_size"], h)
    for l in range(L):
        p = f"model.layers.{l}"
        yield f"{p}.input_layernorm.weight", (h,)
        yield f"{p}.self_attn.q_proj.weight", (nh * hd, h)
        yield f"{p}.self_attn.k_proj.weight", (kv * hd, h)
        yield f"{p}.self_attn.v_proj.weight", (kv * hd, h)
        if bias:
            yield f"{p}.self_attn.q_proj.bias", (nh * hd,)
            yield f"{p}.self_attn.k_proj.bias", (kv * hd,)
            yield f"{p}.self_attn.v_proj.bias", (kv * hd,)
        yield f"{p}.self_attn.o_proj.weight", (h, nh * hd)
        yield f"{p}.post_attention_layernorm.weight", (h,)
        yield f"{p}.mlp.gate_proj.weight", (i, h)
        yield f"{p}.mlp.up_proj.weight", (i, h)
        yield f"{p}.mlp.down_proj.weight", (h, i)
    yield "model.norm.weight", (h,)
    if not c.get("tie_word_embeddings", False):
        yield "lm_head.weight", (c["vocab_size"], h)


def draw(name, shape, gen):
    if name.endswith("norm.weight"):
        return torch.ones(shape, dtype=torch.bfloat16, device="cuda")
    return (torch.randn(shape, dtype=torch.bfloat16, device="cuda", generator=gen) * 0.02)


def write_sharded(tensors, out, shards, gen):
    total = sum(torch.Size(s).numel() * 2 for _, s in tensors)
    per = total / shards
    index, shard, size, n = {}, {}, 0, 1
    names = [f"model-{k:05d}-of-{shards:05d}.safetensors" for k in range(1, shards + 1)]
    for name, shape in tensors:
        shard[name] = draw(name, shape, gen).cpu()
        index[name] = names[n - 1]
        size += shard[name].numel() * 2
        if size >= per * n and n < shards:
            save_file(shard, os.path.join(out, names[n - 1]), metadata={"format": "pt"})
            shard, n = {}, n + 1
    save_file(shard, os.path.join(out, names[n - 1]), metadata={"format": "pt"})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": index}, f, indent=1)
    return total


def write_draft(c, out, draft_vocab, gen):
    h, i = c["hidden_size"], c["intermediate_size"]
    nh, kv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = c.get("head_dim") or h // nh
    L, V = c["num_hidden_layers"], c["vocab_size"]
    os.makedirs(out, exist_ok=True)
    cfg = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
        "hidden_size": h, "intermediate_size": i, "num_attention_heads": nh,
        "num_key_value_heads": kv, "head_dim": hd, "num_hidden_layers": 1,
        "hidden_act": "silu", "rms_norm_eps": c.get("rms_norm_eps", 1e-5),
        "rope_theta": c.get("rope_theta", 10000.0), "rope_scaling": c.get("rope_scaling"),
        "max_position_embeddings": c.get("max_position_embeddings", 4096),
        "vocab_size": V, "draft_vocab_size": draft_vocab, "target_hidden_size": h,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, L // 2 - 1, L - 4],
                         "use_aux_hidden_state": True},
    }
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=1)
    t = {
        "fc.weight": (h, 3 * h), "midlayer.input_layernorm.weight": (h,),
        "midlayer.hidden_norm.weight": (h,),
        "midlayer.self_attn.q_proj.weight": (nh * hd, 2 * h),
        "midlayer.self_attn.k_proj.weight": (kv * hd, 2 * h),
        "midlayer.self_attn.v_proj.weight": (kv * hd, 2 * h),
        "midlayer.self_attn.o_proj.weight": (h, nh * hd),
        "midlayer.post_attention_layernorm.weight": (h,),
        "midlayer.mlp.gate_proj.weight": (i, h), "midlayer.mlp.up_proj.weight": (i, h),
        "midlayer.mlp.down_proj.weight": (h, i), "norm.weight": (h,),
        "lm_head.weight": (draft_vocab, h),
    }
    d = {k: draw(k, s, gen).cpu() for k, s in t.items()}
    # d2t: offsets from draft id to target id (draft ids spread over the vocabulary).
    stride = V // draft_vocab
    ids = torch.arange(draft_vocab, dtype=torch.int64)
    d["d2t"] = ids * stride - ids
    t2d = torch.zeros(V, dtype=torch.bool)
    t2d[ids * stride] = True
    d["t2d"] = t2d
    save_file(d, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})


def main():
    a = argparse.ArgumentParser()
    a.add_argument("config"); a.add_argument("out")
    a.add_argument("--shards", type=int, default=4)
    a.add_argument("--draft"); a.add_argument("--draft-vocab", type=int, default=32000)
    a.add_argument("--tokenizer-from")
    x = a.parse_args()
    os.makedirs(x.out, exist_ok=True)
    c = json.load(open(x.config))
    shutil.copy(x.config, os.path.join(x.out, "config.json"))
    if x.tokenizer_from:
        for f in ["tokenizer.json", "tokenizer_config.json"]:
            shutil.copy(os.path.join(x.tokenizer_from, f), os.path.join(x.out, f))
    gen = torch.Generator(device="cuda").manual_seed(0)
    t0 = time.time()
    total = write_sharded(list(target_tensors(c)), x.out, x.shards, gen)
    print(f"wrote {x.out}: {total / 1e9:.2f} GB in {x.shards} shards, {time.time() - t0:.1f} s", flush=True)
    if x.draft:
        t0 = time.time()
        write_draft(c, x.draft, x.draft_vocab, gen)
        print(f"wrote {x.draft} in {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
