"""Writes the PyTorch-checkpoint twins of a safetensors model pair with
torch itself (torch.save of the state dict, as transformers'
save_pretrained(safe_serialization=False) and the EAGLE authors do), so
specula's .bin reader is tested on files real torch wrote.

    python3 tools/pytorch_fixtures/write.py SRC OUT

SRC holds target/ and draft/ (config.json, model.safetensors; the target
also tokenizer files). OUT gets:
  target/  config.json, tokenizers, pytorch_model-0000{1,2}-of-00002.bin
           and pytorch_model.bin.index.json (sharded: layers split in two)
  draft/   config.json, pytorch_model.bin (one file)
Needs torch and safetensors (run where they are installed: the GPU box).
"""

import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file


def main(src: Path, out: Path) -> None:
    for part in ("target", "draft"):
        (out / part).mkdir(parents=True, exist_ok=True)
        for f in (src / part).iterdir():
            if f.suffix != ".safetensors":
                shutil.copy(f, out / part / f.name)
    # The draft: one pytorch_model.bin.
    draft = load_file(str(src / "draft" / "model.safetensors"))
    torch.save(draft, out / "draft" / "pytorch_model.bin")
    # The target: two shards and their index, as save_pretrained writes them.
    target = load_file(str(src / "target" / "model.safetensors"))
    names = sorted(target)
    shards = [names[: len(names) // 2], names[len(names) // 2 :]]
    weight_map = {}
    for i, shard in enumerate(shards, start=1):
        file = f"pytorch_model-{i:05d}-of-{len(shards):05d}.bin"
        torch.save({n: target[n] for n in shard}, out / "target" / file)
        weight_map.update({n: file for n in shard})
    size = sum(t.numel() * t.element_size() for t in target.values())
    index = {"metadata": {"total_size": size}, "weight_map": weight_map}
    (out / "target" / "pytorch_model.bin.index.json").write_text(json.dumps(index, indent=2))
    print(f"torch {torch.__version__}: wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
