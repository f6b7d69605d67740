"""Golden outputs of the tiny target for the Rust engine's tests.

The target is loaded from its saved bf16 checkpoint upcast to float32
(dtype=torch.float32), eager attention, on the CPU. For each prompt: the prompt's
token ids exactly as fed (tokenizer.json encode with special tokens, which
prepends <|endoftext|> as BOS), the greedy continuation of 32 new tokens (argmax,
no repetition penalty, no early stop at EOS: 32 tokens always), and the float32
logits at the last prompt position.

Writes models/tiny-llama/golden/{golden.json, golden_logits.safetensors}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

PROMPTS = [
    # GSM8K-style questions (written for this file, not taken from GSM8K)
    ("gsm8k", "Question: Tom has 12 apples. He gives 5 apples to his sister and buys 8 more. "
              "How many apples does Tom have now?\nAnswer:"),
    ("gsm8k", "Question: A baker makes 24 muffins every hour. How many muffins does the baker "
              "make in 6 hours?\nAnswer:"),
    ("gsm8k", "Question: Sara earns $15 an hour and works 8 hours a day. How much money does she "
              "earn in 5 days?\nAnswer:"),
    # Python code starts
    ("code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("code", "import os\nimport sys\n\n\ndef main():\n"),
    ("code", "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n"),
    # plain chat-like sentences
    ("chat", "Hello! How are you doing today?"),
    ("chat", "Please tell me a short story about a dog who learns to swim."),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default=common.MODEL_DIR)
    ap.add_argument("--out", default=os.path.join(common.MODEL_DIR, "golden"))
    ap.add_argument("--new", type=int, default=32)
    args = ap.parse_args()

    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    from safetensors.torch import save_file
    from tokenizers import Tokenizer
    from transformers import LlamaForCausalLM

    tok = Tokenizer.from_file(os.path.join(args.target, "tokenizer.json"))
    model = LlamaForCausalLM.from_pretrained(args.target, dtype=torch.float32, attn_implementation="eager").eval()

    rows, last_logits = [], []
    with torch.no_grad():
        for kind, p in PROMPTS:
            ids = tok.encode(p).ids
            x = torch.tensor([ids])
            logits = model(input_ids=x, use_cache=False).logits[0, -1].float()
            last_logits.append(logits)
            gen, margins = [], []
            for _ in range(args.new):
                lg = model(input_ids=x, use_cache=False).logits[0, -1]
                top2 = torch.topk(lg, 2).values
                margins.append(float(top2[0] - top2[1]))
                t = int(lg.argmax())
                gen.append(t)
                x = torch.cat([x, torch.tensor([[t]])], 1)
            # cross-check with transformers' own greedy generate (KV cache); it may stop at EOS
            ref = model.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                 do_sample=False, max_new_tokens=args.new, pad_token_id=0,
                                 repetition_penalty=None, top_k=None, top_p=None, temperature=None)[0, len(ids):].tolist()
            agree = gen[:len(ref)] == ref
            rows.append({"kind": kind, "prompt": p, "prompt_token_ids": ids, "greedy_token_ids": gen,
                         "greedy_text": tok.decode(gen), "min_top2_logit_margin": round(min(margins), 5),
                         "generate_agrees": agree})
            print(kind, repr(p[:40]), "->", repr(tok.decode(gen)), f"margin {min(margins):.4f}",
                  "generate agrees" if agree else f"GENERATE DIFFERS {ref}", flush=True)

    os.makedirs(args.out, exist_ok=True)
    logits = torch.stack(last_logits).contiguous()
    save_file({"logits": logits}, os.path.join(args.out, "golden_logits.safetensors"))
    wpath = os.path.join(args.target, "model.safetensors")
    sha = hashlib.sha256(open(wpath, "rb").read()).hexdigest()
    doc = {
        "model": "models/tiny-llama",
        "model_safetensors_sha256": sha,
        "dtype": "float32",
        "weights_dtype": "bfloat16 (upcast to float32 on load)",
        "attn_implementation": "eager",
        "device": "cpu",
        "torch": torch.__version__,
        "max_new_tokens": args.new,
        "decoding": "greedy argmax over the full vocab, no repetition penalty, no early stop at EOS",
        "bos": "prompt_token_ids are tokenizer.json encode(prompt, add_special_tokens=True): BOS <|endoftext|> (id 0) first",
        "logits": "golden_logits.safetensors: tensor 'logits' [num_prompts, vocab_size] float32, "
                  "the logits at the last prompt position (before any generated token)",
        "tolerance": "tokens exact; logits within 1e-3 relative error",
        "prompts": [r["prompt"] for r in rows],
        "prompt_token_ids": [r["prompt_token_ids"] for r in rows],
        "greedy_token_ids": [r["greedy_token_ids"] for r in rows],
        "items": rows,
    }
    with open(os.path.join(args.out, "golden.json"), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print("golden written, logits", tuple(logits.shape))


if __name__ == "__main__":
    main()
