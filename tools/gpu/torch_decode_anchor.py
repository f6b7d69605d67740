"""The same-run anchor of `specula gpu bench`: transformers' greedy decode step
of the same shape, compiled by torch.compile (mode "reduce-overhead", so the
step replays as a CUDA graph) over a static KV cache, timed with CUDA events.

For each (batch, prompt length) it writes one CSV row: the median decode step,
the bytes a step reads (weights + the KV of the mean context), the same
measure as a fraction of the device-to-device copy bandwidth measured in the
same process the way specula's ceiling does (1 GiB copied, read + write), and
prefill time. Random bf16 weights on the device: no download.

Usage (on the GPU machine, from the repository root):
  python3 tools/gpu/torch_decode_anchor.py --config bench/configs/llama-3.1-8b.json \
      --batch-sizes 1,8,64 --prompt-lens 128 --out results/h200/torch_anchor.csv
"""

import argparse
import csv
import json
import statistics
import sys
import time

import torch


def copy_gb_s():
    """Device-to-device copy of 1 GiB, read + write bytes over the median time."""
    n = 1 << 28
    src = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    times = []
    for _ in range(11):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    del src, dst
    return 2.0 * n * 4 / (statistics.median(times[1:]) * 1e-3) / 1e9


def build(config_path):
    from transformers import AutoConfig, AutoModelForCausalLM

    with open(config_path) as f:
        raw = json.load(f)
    config = AutoConfig.for_model(**raw)
    torch.manual_seed(1)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.bfloat16)
    model.eval()
    return model, config


def kv_bytes_per_token(config):
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return config.num_hidden_layers * 2 * config.num_key_value_heads * head_dim * 2


def measure(model, config, batch, prompt_len, new_tokens, steps_timed):
    from transformers import StaticCache

    cache = StaticCache(config=config, max_batch_size=batch,
                        max_cache_len=prompt_len + new_tokens + 8,
                        device="cuda", dtype=torch.bfloat16)
    ids = torch.randint(0, config.vocab_size, (batch, prompt_len), device="cuda")
    step = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    with torch.no_grad():
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        out = model(input_ids=ids, past_key_values=cache, use_cache=True,
                    cache_position=torch.arange(prompt_len, device="cuda"))
        b.record()
        b.synchronize()
        prefill_ms = a.elapsed_time(b)
        token = out.logits[:, -1:].argmax(-1)
        times = []
        for i in range(new_tokens):
            pos = torch.tensor([prompt_len + i], device="cuda")
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            out = step(input_ids=token, past_key_values=cache, use_cache=True, cache_position=pos)
            token = out.logits[:, -1:].argmax(-1)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
    # The first steps compile and record the graph: time the last ones.
    timed = times[-steps_timed:]
    return prefill_ms, statistics.median(timed), len(timed)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--batch-sizes", default="1")
    p.add_argument("--prompt-lens", default="128")
    p.add_argument("--new-tokens", type=int, default=64, help="decode steps per case (the first compile)")
    p.add_argument("--timed", type=int, default=32, help="last steps timed")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    if a.timed > a.new_tokens - 8:
        sys.exit("--timed must leave at least 8 warm-up steps of --new-tokens")
    model, config = build(a.config)
    weight_bytes = sum(t.numel() * t.element_size() for t in model.parameters())
    ceiling = copy_gb_s()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, copy {ceiling:.0f} GB/s, "
          f"weights {weight_bytes / 1e9:.2f} GB", flush=True)
    rows = []
    for prompt_len in [int(x) for x in a.prompt_lens.split(",")]:
        for batch in [int(x) for x in a.batch_sizes.split(",")]:
            t0 = time.time()
            prefill_ms, step_ms, n = measure(model, config, batch, prompt_len, a.new_tokens, a.timed)
            mean_context = prompt_len + a.new_tokens / 2
            kv = batch * mean_context * kv_bytes_per_token(config)
            read = weight_bytes + kv
            frac = read / (step_ms * 1e-3) / 1e9 / ceiling
            rows.append({
                "engine": "torch.compile reduce-overhead", "torch": torch.__version__,
                "batch_size": batch, "prompt_len": prompt_len, "step_us_p50": round(step_ms * 1e3, 1),
                "steps_timed": n, "weight_bytes": weight_bytes, "kv_bytes": int(kv), "bytes_read": int(read),
                "copy_gb_s": round(ceiling, 1), "read_fraction_of_copy": round(frac, 4),
                "prefill_ms": round(prefill_ms, 2),
                "prefill_tok_s": round(batch * prompt_len / (prefill_ms * 1e-3), 1),
            })
            print(f"batch {batch} prompt {prompt_len}: step {step_ms:.3f} ms, {100 * frac:.1f}% of copy, "
                  f"prefill {prefill_ms:.1f} ms ({time.time() - t0:.0f} s with compiling)", flush=True)
            torch._dynamo.reset()
            torch.cuda.empty_cache()
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
