"""Self-check: the unrolled training forward (Eagle3Draft.ttt_forward, diagonal
attention over [step0 ; step1 ; ...]) equals the plain inference chain
(Eagle3Draft.propose_chain, concatenated KV) on the same inputs, and a draft
survives save/load. CPU, float32, random weights; run: python3 tools/train/check_draft.py
"""

import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402


def main():
    torch.manual_seed(0)
    V, H, D = 300, 64, 128
    cfg = {"hidden_size": H, "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 16, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": V,
           "draft_vocab_size": D, "target_hidden_size": H}
    d = common.Eagle3Draft(cfg)
    for p in d.parameters():
        torch.nn.init.normal_(p, std=0.3)
    d.set_vocab(torch.sort(torch.randperm(V)[:D]).values)
    embed = torch.nn.Embedding(V, H)
    steps = 5
    for n in (1, 7, 20):
        ctx = torch.randint(0, V, (1, n + 1))
        aux = torch.randn(1, n + 1 + steps, 3 * H)
        prop = d.propose_chain(embed, ctx, aux[:, :n], steps)
        x = torch.cat([ctx, torch.tensor([prop[:-1]])], dim=1)  # teacher-force the drafted tokens
        with torch.no_grad():
            logits = d.ttt_forward(embed, x, aux[:, :x.shape[1]], steps)
        ttt = [int(d.draft_to_target(logits[k][0, n - 1].argmax()).item()) for k in range(steps)]
        assert ttt == prop, (n, ttt, prop)
        # logits too: rerun the chain by hand with logits exposed
    # d2t / t2d consistency
    tids = d.draft_to_target(torch.arange(D))
    assert bool((tids[1:] > tids[:-1]).all()) and bool(d.t2d[tids].all()) and int(d.t2d.sum()) == D
    with tempfile.TemporaryDirectory() as tmp:
        common.save_draft(d, tmp)
        d2 = common.load_draft(tmp)
        from safetensors import safe_open
        with safe_open(os.path.join(tmp, "model.safetensors"), "pt") as f:
            keys = sorted(f.keys())
            assert f.get_tensor("d2t").dtype == torch.int64 and f.get_tensor("t2d").dtype == torch.bool
        print("keys:", keys)
        assert torch.equal(d2.d2t, d.d2t)
    print("check_draft: ok")


if __name__ == "__main__":
    main()
