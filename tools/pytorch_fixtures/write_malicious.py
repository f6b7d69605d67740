"""Writes a malicious pytorch_model.bin: a pickle whose only record would run
`touch specula-ran-pickle-code` through os.system if the reader executed
pickle code (torch.load without weights_only would). specula's reader
interprets the pickle's opcodes itself, so loading it must run nothing and
fail with one line (harness/tests/cli/draft_layouts_cli.rs).

    python3 tools/pytorch_fixtures/write_malicious.py OUT_DIR

Needs torch. OUT_DIR gets pytorch_model.bin (add an EAGLE-3 config.json).
"""

import os
import sys
from pathlib import Path

import torch


class RunsACommand:
    def __reduce__(self):
        return (os.system, ("touch specula-ran-pickle-code",))


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    torch.save({"fc.weight": RunsACommand()}, out / "pytorch_model.bin")
    print(f"torch {torch.__version__}: wrote {out / 'pytorch_model.bin'}")
