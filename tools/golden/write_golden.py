"""Golden outputs of transformers for specula's tiny MoE / latent-attention
fixtures (issue 16): greedy tokens and last-position logits, in float32 on
the CPU, which engine/tests/integration/moe_golden.rs compares the Rust engine against.

    python3 tools/golden/write_golden.py --out engine/tests/fixtures/golden \
        engine/tests/fixtures/moe/tiny-deepseek-v3 engine/tests/fixtures/moe/tiny-kimi-k25 \
        engine/tests/fixtures/moe/tiny-deepseek-v2 engine/tests/fixtures/moe/tiny-qwen3-moe

Each argument is a fixture folder as `specula fixtures random` writes it
(target/ and draft/; a folder holding config.json directly is taken as the
target). Writes OUT/<folder name>.json. A wrapper config (Kimi-K2.5: the
language model under `text_config`, weights under `language_model.`) is
loaded as its language model: text_config as the config, the
`language_model.` tensors with the prefix stripped, the vision tensors
dropped. Needs torch, transformers and safetensors; no GPU (it runs on the
CPU in float32, eager attention, so the numbers are reproducible).
"""

import argparse
import json
import tempfile
from pathlib import Path

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

# The prompt: the bytes of this text (the fixtures' tokenizer is byte-level).
PROMPT = "Speculative decoding, MoE and latent attention."
NEW_TOKENS = 16
PREFIX = "language_model."


def language_model_dir(target: Path, tmp: Path) -> Path:
    """The folder transformers loads: `target`, or for a wrapper a copy of
    its language model (config from text_config, prefix stripped)."""
    config = json.loads((target / "config.json").read_text())
    if "text_config" not in config:
        return target
    text = dict(config["text_config"])
    text["model_type"] = "deepseek_v3"
    text["architectures"] = ["DeepseekV3ForCausalLM"]
    text.setdefault("torch_dtype", config.get("torch_dtype", "float32"))
    tensors = load_file(str(target / "model.safetensors"))
    kept = {n[len(PREFIX):]: t for n, t in tensors.items() if n.startswith(PREFIX)}
    dropped = sorted(n for n in tensors if not n.startswith(PREFIX))
    print(f"  wrapper {config.get('architectures')}: {len(kept)} language-model tensors, "
          f"ignoring {dropped}")
    (tmp / "config.json").write_text(json.dumps(text, indent=2))
    save_file(kept, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    return tmp


def load(path: Path):
    major = int(transformers.__version__.split(".")[0])
    dtype_kw = {"dtype": torch.float32} if major >= 5 else {"torch_dtype": torch.float32}
    model, info = AutoModelForCausalLM.from_pretrained(
        str(path), attn_implementation="eager", output_loading_info=True, **dtype_kw
    )
    bad = {k: v for k, v in info.items() if v}
    if bad:
        raise SystemExit(f"{path}: loading was not exact: {bad}")
    return model.to("cpu").float().eval()


@torch.no_grad()
def last_logits(model, ids):
    out = model(input_ids=torch.tensor([ids]), use_cache=False)
    return out.logits[0, -1].float()


def golden(fixture: Path) -> dict:
    target = fixture / "target" if (fixture / "target").is_dir() else fixture
    prompt = list(PROMPT.encode())
    ids = list(prompt)
    prompt_logits = None
    with tempfile.TemporaryDirectory() as tmp:
        model = load(language_model_dir(target, Path(tmp)))
        for _ in range(NEW_TOKENS):
            logits = last_logits(model, ids)
            if prompt_logits is None:
                prompt_logits = logits
            ids.append(int(torch.argmax(logits)))
        final = last_logits(model, ids)
    return {
        "made_by": "tools/golden/write_golden.py",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "architecture": type(model).__name__,
        "config": json.loads((target / "config.json").read_text()),
        "weights_bytes": (target / "model.safetensors").stat().st_size,
        "prompt_token_ids": prompt,
        "greedy_token_ids": ids[len(prompt):],
        "prompt_last_logits": prompt_logits.tolist(),
        "final_last_logits": final.tolist(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder for <fixture>.json")
    p.add_argument("fixtures", type=Path, nargs="+", help="fixture folders")
    a = p.parse_args()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    a.out.mkdir(parents=True, exist_ok=True)
    for fixture in a.fixtures:
        print(f"{fixture}:")
        g = golden(fixture)
        path = a.out / f"{fixture.resolve().name}.json"
        path.write_text(json.dumps(g, indent=1) + "\n")
        print(f"  {g['architecture']}: greedy {g['greedy_token_ids']} -> {path}")
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")


if __name__ == "__main__":
    main()
