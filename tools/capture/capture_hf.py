#!/usr/bin/env python3
"""Write a specula capture file from any Hugging Face causal LM.

The file is the one `specula capture` writes (docs/DESIGN.md section 5.1):
per prompt, the tokens (prompt + the target's greedy continuation), the
target's greedy choice after every token, and the residual stream at each
stored boundary b (Hugging Face hidden_states[b], 0 = the embedding output),
in bfloat16, with metadata naming the model and this writer. `specula audit
--states FILE --draft DIR` then checks an EAGLE-3 draft without the target.

It runs any architecture transformers can load with output_hidden_states
(Llama, Qwen, DeepseekV3ForCausalLM, Kimi-K2.5's multimodal wrapper with
--trust-remote-code), spread over the GPUs with device_map="auto". Prompts
are written one at a time (tensors to a scratch file, the safetensors header
in front at the end), so host memory holds one prompt's states.

Prompt files are read as specula reads them: JSONL (MT-bench / Spec-Bench
`turns[0]`, HumanEval `prompt`, GSM8K `question`, else `prompt` or `text`)
or plain text (one prompt per non-empty line). Every prompt is used, in
file order (give `specula capture --samples 0` the same file to compare).
Tokens: the model folder's tokenizer.json through the `tokenizers` library
with special tokens (as specula does), else AutoTokenizer.

Example (the test fixture of harness/tests/cli/capture_parity.rs):
  python tools/capture/capture_hf.py --model models/tiny-llama \
      --prompts tools/capture/parity_prompts.txt --max-new-tokens 16 \
      --dtype float32 --device-map cpu --attn-implementation eager \
      --out models/tiny-llama/golden/capture_hf.safetensors
"""

import argparse
import json
import os
import struct
import sys

FORMAT = "specula-capture"
FORMAT_VERSION = "1"


def read_prompts(path):
    """The prompt texts of a prompt file, as specula's loaders read them."""
    with open(path, encoding="utf-8") as f:
        content = f.read()
    lines = [l for l in content.splitlines() if l.strip()]
    if not lines:
        sys.exit(f"error: {path}: no prompt")
    try:
        first = json.loads(lines[0])
    except json.JSONDecodeError:
        first = None
    if not isinstance(first, dict) and not path.endswith((".jsonl", ".json")):
        return [l.strip() for l in lines]
    out = []
    for n, line in enumerate(lines, 1):
        r = json.loads(line)
        if "question_id" in r and "turns" in r:
            text = r["turns"][0]
        elif "task_id" in r and "prompt" in r:
            text = r["prompt"]
        elif "question" in r and "answer" in r:
            text = r["question"]
        elif "prompt" in r:
            text = r["prompt"]
        elif "text" in r:
            text = r["text"]
        else:
            sys.exit(f"error: {path}: line {n}: no prompt, text, turns or question field")
        if isinstance(text, list):
            text = text[0]
        out.append(text)
    return out


def tokenizer_for(model_dir, trust_remote_code):
    """encode(text) -> token ids, with the special tokens the tokenizer adds."""
    tj = os.path.join(model_dir, "tokenizer.json")
    if os.path.exists(tj):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(tj)
        return lambda text: tok.encode(text, add_special_tokens=True).ids
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=trust_remote_code)
    return lambda text: tok(text, add_special_tokens=True)["input_ids"]


def load_model(model_dir, dtype, device_map, attn, trust_remote_code):
    """The causal LM to call (the language model inside a multimodal wrapper)."""
    import torch
    from transformers import AutoModel, AutoModelForCausalLM

    kw = dict(
        torch_dtype="auto" if dtype == "auto" else getattr(torch, dtype),
        device_map=device_map,
        trust_remote_code=trust_remote_code,
    )
    if attn:
        kw["attn_implementation"] = attn
    try:
        model = AutoModelForCausalLM.from_pretrained(model_dir, **kw)
    except ValueError:
        with open(os.path.join(model_dir, "config.json")) as f:
            if "text_config" in json.load(f):
                return load_text_model(model_dir, dtype, device_map, attn)
        model = AutoModel.from_pretrained(model_dir, **kw)
    inner = getattr(model, "language_model", None)
    if inner is not None and hasattr(inner, "lm_head"):
        model = inner
    model.eval()
    return model


def load_text_model(model_dir, dtype, device_map, attn):
    """The language model of a wrapper transformers cannot build as a causal
    LM (Kimi-K2.5's without its remote code): `text_config` and the weights
    found under `language_model.` (vision parts left out), written to a
    scratch folder as a plain checkpoint and loaded from there, so that
    transformers converts the weights as it does for any checkpoint. For a
    checkpoint too large to copy, load the wrapper with --trust-remote-code."""
    import glob
    import shutil
    import tempfile

    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForCausalLM

    with open(os.path.join(model_dir, "config.json")) as f:
        text = dict(json.load(f)["text_config"])
    scratch = tempfile.mkdtemp(prefix="capture_hf_text_")
    try:
        state, skipped = {}, 0
        for path in sorted(glob.glob(os.path.join(model_dir, "*.safetensors"))):
            for name, tensor in load_file(path).items():
                if name.startswith("language_model."):
                    state[name[len("language_model."):]] = tensor
                else:
                    skipped += 1
        save_file(state, os.path.join(scratch, "model.safetensors"), metadata={"format": "pt"})
        with open(os.path.join(scratch, "config.json"), "w") as f:
            json.dump(text, f)
        print(f"note: {model_dir}: read the language model of text_config ({text.get('model_type')}); {skipped} other tensors (vision parts) not read", file=sys.stderr)
        return load_model(scratch, dtype, device_map, attn, False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def first_device(model):
    import torch

    return next(p.device for p in model.parameters() if p.device != torch.device("meta"))


def greedy_continuation(model, ids, n, use_cache):
    """n greedy tokens after ids (the end-of-sequence token does not stop it, as in specula)."""
    import torch

    dev = first_device(model)
    seq = torch.tensor([ids], device=dev)
    out, past, step_in = [], None, seq
    for _ in range(n):
        r = model(input_ids=step_in, past_key_values=past, use_cache=use_cache)
        nxt = int(r.logits[0, -1].float().argmax())
        out.append(nxt)
        if use_cache:
            past, step_in = r.past_key_values, torch.tensor([[nxt]], device=dev)
        else:
            step_in = torch.tensor([ids + out], device=dev)
    return out


class Writer:
    """Streams tensors to OUT.data.tmp; finish() writes OUT = header + data."""

    def __init__(self, out):
        self.out, self.data_path = out, out + ".data.tmp"
        self.data = open(self.data_path, "wb")
        self.entries, self.offset = {}, 0

    def tensor(self, name, dtype, shape, raw):
        self.data.write(raw)
        self.entries[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [self.offset, self.offset + len(raw)]}
        self.offset += len(raw)

    def finish(self, metadata):
        self.data.close()
        header = {"__metadata__": metadata, **self.entries}
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        tmp = self.out + ".tmp"
        with open(tmp, "wb") as f, open(self.data_path, "rb") as d:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            while chunk := d.read(1 << 24):
                f.write(chunk)
        os.replace(tmp, self.out)
        os.remove(self.data_path)


def ids_bytes(ids):
    return struct.pack(f"<{len(ids)}q", *ids)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="Hugging Face model folder (config.json, weights, tokenizer)")
    ap.add_argument("--prompts", required=True, help="prompt file (JSONL, MT-bench, Spec-Bench, GSM8K, HumanEval or text)")
    ap.add_argument("--out", required=True, help="capture file to write (refused if it exists)")
    ap.add_argument("--boundaries", default="all", help="comma-separated boundaries to store (0 always kept), or all (0..L-1)")
    ap.add_argument("--max-new-tokens", type=int, default=48, help="greedy tokens after each prompt")
    ap.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"], help="compute dtype")
    ap.add_argument("--device-map", default="auto", help='where the weights go: "auto" (every GPU), "cpu", "cuda:0"')
    ap.add_argument("--attn-implementation", default=None, help="eager, sdpa, flash_attention_2 (default: transformers' choice)")
    ap.add_argument("--trust-remote-code", action="store_true", help="for models with their own code (Kimi-K2.5)")
    ap.add_argument("--no-cache", action="store_true", help="recompute the whole sequence per token (models whose KV cache fails)")
    a = ap.parse_args()
    if os.path.exists(a.out):
        sys.exit(f"error: {a.out}: exists; remove it or pick another --out")

    import torch
    import transformers

    torch.backends.cuda.matmul.allow_tf32 = False  # float32 means float32 (as specula computes)
    torch.backends.cudnn.allow_tf32 = False
    with open(os.path.join(a.model, "config.json")) as f:
        config = json.load(f)
    text_cfg = config.get("text_config", config)
    get = lambda k: text_cfg.get(k, config.get(k))
    layers, hidden, vocab = get("num_hidden_layers"), get("hidden_size"), get("vocab_size")
    if a.boundaries == "all":
        boundaries = list(range(layers))
    else:
        asked = [int(b) for b in a.boundaries.split(",")]
        bad = [b for b in asked if not 0 <= b < layers]
        if bad:
            sys.exit(f"error: --boundaries: {bad} outside 0..{layers - 1} (hidden_states[{layers}] follows the final norm, never an aux state)")
        boundaries = sorted(set(asked) | {0})

    prompts = read_prompts(a.prompts)
    encode = tokenizer_for(a.model, a.trust_remote_code)
    model = load_model(a.model, a.dtype, a.device_map, a.attn_implementation, a.trust_remote_code)
    dtype = str(next(model.parameters()).dtype).replace("torch.", "")
    w = Writer(a.out)
    lengths = []
    with torch.no_grad():
        for i, text in enumerate(prompts):
            ids = list(encode(text))
            tokens = ids + greedy_continuation(model, ids, max(a.max_new_tokens, 1), not a.no_cache)
            r = model(input_ids=torch.tensor([tokens], device=first_device(model)), output_hidden_states=True, use_cache=False)
            hs = r.hidden_states
            if len(hs) != layers + 1:
                sys.exit(f"error: the model returned {len(hs)} hidden states, expected num_hidden_layers + 1 = {layers + 1}")
            argmax = r.logits[0].float().argmax(-1).tolist()
            w.tensor(f"prompt.{i}.tokens", "I64", [len(tokens)], ids_bytes(tokens))
            w.tensor(f"prompt.{i}.argmax", "I64", [len(tokens)], ids_bytes(argmax))
            for b in boundaries:
                h = hs[b][0].to(torch.bfloat16).contiguous().cpu()
                w.tensor(f"prompt.{i}.hidden.{b}", "BF16", [len(tokens), hidden], h.view(torch.int16).numpy().tobytes())
            lengths.append(len(ids))
            del r, hs
            print(f"capture: prompt {i + 1}/{len(prompts)} ({len(tokens)} tokens) -> {a.out}", file=sys.stderr)
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "writer": f"capture_hf.py (transformers {transformers.__version__}, torch {torch.__version__})",
        "model_type": str(get("model_type") or ""),
        "architectures": json.dumps(config.get("architectures") or []),
        "num_hidden_layers": str(layers),
        "hidden_size": str(hidden),
        "vocab_size": str(vocab),
        "dtype": dtype,
        "boundaries": json.dumps(boundaries),
        "prompt_lengths": json.dumps(lengths),
        "target_config": json.dumps(text_cfg),
    }
    w.finish(metadata)
    print(f"wrote {len(prompts)} prompts, boundaries {boundaries} to {a.out}")


if __name__ == "__main__":
    main()
