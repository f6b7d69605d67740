"""Rewrites draft-layout fixtures that ship as PyTorch checkpoints with
torch itself: each named folder's model.safetensors (or its shards and
model.safetensors.index.json) becomes pytorch_model.bin (or
pytorch_model-0000N-of-0000M.bin shards with pytorch_model.bin.index.json),
as the EAGLE authors and save_pretrained(safe_serialization=False) write
them. Tensors keep their dtype (float16 where the fixture is float16).

    specula fixtures draft-layouts --out DIR
    python3 tools/pytorch_fixtures/write_layouts.py DIR LAYOUT [LAYOUT ...]

Needs torch and safetensors (run where they are installed: the GPU box).
"""

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file


def convert(folder: Path) -> None:
    index = folder / "model.safetensors.index.json"
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        weight_map = {}
        for i, shard in enumerate(shards, start=1):
            tensors = load_file(str(folder / shard))
            name = f"pytorch_model-{i:05d}-of-{len(shards):05d}.bin"
            torch.save(tensors, folder / name)
            weight_map.update({n: name for n in tensors})
            (folder / shard).unlink()
        index.unlink()
        out = {"metadata": {}, "weight_map": weight_map}
        (folder / "pytorch_model.bin.index.json").write_text(json.dumps(out, indent=2))
    else:
        tensors = load_file(str(folder / "model.safetensors"))
        torch.save(tensors, folder / "pytorch_model.bin")
        (folder / "model.safetensors").unlink()


def main(root: Path, layouts: list) -> None:
    for name in layouts:
        convert(root / name)
        print(f"torch {torch.__version__}: {root / name} -> pytorch_model.bin")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
