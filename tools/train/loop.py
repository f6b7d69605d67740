"""The parts of a draft's training loop that EAGLE-1 and EAGLE-3 training share.

- `make_batch`: padded token ids and the prompt / sequence lengths of a batch;
- `cosine_lr`: warm-up, then cosine decay to 0.05x;
- `BatchDraw`: which training sequences make the next batch (generated rows,
  optionally split between the GSM8K and code pools, plus raw text chunks);
- `EndAt`: re-fits the step count every 50 steps so that training ends by a wall-clock time;
- `fit_steps`: the arithmetic behind `EndAt`.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch


def make_batch(samples, dev, round_to=32):
    """Pads (prompt_len, ids) samples into x [B, L] (L rounded up to `round_to`, at most
    4096) and returns x with the prompt and sequence lengths, all on `dev`."""
    L = max(len(s[1]) for s in samples)
    L = min(((L + round_to - 1) // round_to) * round_to, 4096)
    B = len(samples)
    x = torch.zeros((B, L), dtype=torch.long)
    plen = torch.zeros(B, dtype=torch.long)
    slen = torch.zeros(B, dtype=torch.long)
    for r, (pl, ids) in enumerate(samples):
        x[r, :len(ids)] = torch.from_numpy(ids.astype(np.int64))
        plen[r], slen[r] = pl, len(ids)
    return x.to(dev), plen.to(dev), slen.to(dev)


def cosine_lr(step, lr, warmup, steps):
    """Linear warm-up over `warmup` steps, then cosine decay from lr to 0.05 lr at `steps`."""
    if step < warmup:
        return lr * (step + 1) / warmup
    p = (step - warmup) / max(1, steps - warmup)
    return lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * p)))


class BatchDraw:
    """Draws each batch: `batch - round(batch * raw_frac)` generated sequences (from `train`
    in permuted order, or, with `code_frac`, that share from the code pool and the rest from
    the GSM8K pool, each in its own permuted order) plus raw text chunks drawn with
    replacement. Without `code_frac` the pools draw nothing from `rng`."""

    def __init__(self, rng, train, gsm_pool, code_pool, raw, batch, raw_frac, code_frac):
        self.rng, self.train, self.raw = rng, train, raw
        self.n_raw = int(round(batch * raw_frac))
        self.n_gen = batch - self.n_raw
        self.n_code = int(round(self.n_gen * code_frac)) if code_frac is not None else None
        self.perm, self.pi = rng.permutation(len(train)), 0
        self.pools = [gsm_pool, code_pool]
        if self.n_code is not None:
            self.pperm = [rng.permutation(len(p)) for p in self.pools]
            self.ppi = [0, 0]

    def next(self):
        """The next batch's samples."""
        rng = self.rng
        if self.n_code is None:
            if self.pi + self.n_gen > len(self.perm):
                self.perm, self.pi = rng.permutation(len(self.train)), 0
            samples = [self.train[j] for j in self.perm[self.pi:self.pi + self.n_gen]]
            self.pi += self.n_gen
        else:
            samples = []
            for q, cnt in ((0, self.n_gen - self.n_code), (1, self.n_code)):
                if self.ppi[q] + cnt > len(self.pools[q]):
                    self.pperm[q], self.ppi[q] = rng.permutation(len(self.pools[q])), 0
                samples += [self.pools[q][j] for j in self.pperm[q][self.ppi[q]:self.ppi[q] + cnt]]
                self.ppi[q] += cnt
        samples += [self.raw[j] for j in rng.integers(0, len(self.raw), size=self.n_raw)]
        return samples


def fit_steps(step, steps_requested, per_step_s, seconds_left, eval_every, eval_s, reserve_s=5.0):
    """Total step count that ends training `seconds_left` from now (at most steps_requested),
    counting the evaluations still to come (every eval_every steps, plus the final one)."""
    left = seconds_left - reserve_s
    n = left / per_step_s
    for _ in range(3):  # evals depend on the count; a few fixed-point rounds
        evals = max(0, int((step + n) // eval_every) - step // eval_every) + 1
        n = max(0.0, (left - evals * eval_s) / per_step_s)
    return int(min(steps_requested, max(step + 1, step + int(n))))


class EndAt:
    """Keeps a run's step count such that training ends by the unix time `end_at` (None:
    no change): every 50 steps from step 50 it times the last 50 steps (+3%) and re-fits."""

    def __init__(self, end_at, steps_requested, eval_every, dev):
        self.end_at, self.steps_requested = end_at, steps_requested
        self.eval_every, self.dev, self.t_win = eval_every, dev, None

    def steps(self, step, steps, eval_s):
        """The step count to use from `step` on (`steps` is the current one)."""
        if not self.end_at or step < 40 or step % 50 != 0:
            return steps
        if self.dev == "cuda":
            torch.cuda.synchronize()
        now = time.time()
        if self.t_win is not None:
            per = (now - self.t_win) / 50 * 1.03
            new = fit_steps(step, self.steps_requested, per, self.end_at - now, self.eval_every, eval_s)
            if abs(new - steps) >= 25:
                print(f"end-at: {per * 1000:.0f} ms/step -> steps {steps} -> {new}", flush=True)
            steps = new
        self.t_win = now
        return steps
