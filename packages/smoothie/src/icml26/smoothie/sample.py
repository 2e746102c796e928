"""The official sampler: predict x0, then re-noise with fresh noise (``Solver.step``, default
branch), N steps with t linear from 1 to 0; nearest-embedding decoding cut at EOS; MBR.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch
from torch import Tensor

from icml26.smoothie.model import Denoiser
from icml26.smoothie.space import DiffusionSpace, check_embeddings

__all__ = ["cut_at_eos", "mbr_select", "sample", "sentence_bleu"]


@torch.no_grad()
def sample(
    space: DiffusionSpace,
    model: Denoiser,
    embeddings: Tensor,
    *,
    length: int,
    src: Tensor | None = None,
    src_mask: Tensor | None = None,
    batch_size: int | None = None,
    steps: int = 200,
    generator: torch.Generator | None = None,
    noise_scale: float = 1.0,
    t_end: float = 0.0,
    src_embeddings: Tensor | None = None,
) -> Tensor:
    """Token ids ``(B, length)`` sampled from ``model`` in ``space``.

    Each of the ``steps`` steps: ``ê = f(input(X_t), t, src)``; ``X̂0 = relatent(ê)``;
    ``X_{t'} = μ_{t'} X̂0 + noise_scale · std_{t'} · ε`` with fresh ε (official default
    solver; not the DDPM posterior, not DDIM). ``noise_scale = 0`` makes the sampler
    deterministic given the prior draw. Returns the nearest tokens of the last ``ê``.

    Args:
        src: source token ids ``(B, Ls)`` of a conditional model (their embeddings are used).
        src_embeddings: the table that embeds ``src`` when it differs from ``embeddings``
            (trained embeddings: the source keeps the frozen input table); default
            ``embeddings``.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"the number of sampling steps N must be an integer ≥ 1, got {steps!r}")
    check_embeddings(embeddings)
    if length < 1 or length > model.config.max_len:
        raise ValueError(f"length must lie in [1, {model.config.max_len}], got {length}")
    device = embeddings.device
    if src is not None:
        batch_size = src.shape[0]
        table = embeddings if src_embeddings is None else src_embeddings.to(device)
        if table.shape[0] != embeddings.shape[0]:
            raise ValueError(
                f"src_embeddings has {table.shape[0]} rows, embeddings {embeddings.shape[0]}"
            )
        src_emb = table[src.to(device)]
    elif model.config.conditional:
        raise ValueError("a conditional model needs `src`")
    else:
        src_emb = None
    if batch_size is None or batch_size < 1:
        raise ValueError("give `src` or a positive batch_size")
    model.eval()
    shape = (batch_size, length, space.latent_size(embeddings))
    x = space.prior(shape, generator=generator, device=device)
    ts = torch.linspace(1.0, t_end, steps + 1, device=device)
    ctx = model.encode_source(src_emb, src_mask) if src_emb is not None else None
    self_cond = (
        torch.zeros(batch_size, length, embeddings.shape[1], device=device)
        if model.config.self_conditioning
        else None
    )
    pred = None
    for i in range(steps):
        t = ts[i].expand(batch_size)
        pred = model(
            space.model_input(x, embeddings), t, src_mask=src_mask, ctx=ctx, self_cond=self_cond
        )
        if not torch.isfinite(pred).all():
            raise FloatingPointError(f"the denoiser produced NaN/inf at sampling step {i}")
        x0 = space.relatent(pred, embeddings)
        mu, std = space.params(ts[i + 1].expand(batch_size))
        eps = torch.randn(x0.shape, generator=generator, device=device)
        x = mu * x0 + noise_scale * std * eps
        self_cond = pred if self_cond is not None else None
    assert pred is not None
    return space.decode(pred, embeddings)


def cut_at_eos(tokens: Tensor | Sequence[Sequence[int]], end_ids: Sequence[int]) -> list[list[int]]:
    """Each sequence up to (not including) its first end token (official decoding)."""
    rows = tokens.tolist() if isinstance(tokens, Tensor) else [list(r) for r in tokens]
    ends = set(end_ids)
    out = []
    for seq in rows:
        i = 0
        while i < len(seq) and seq[i] not in ends:
            i += 1
        out.append(seq[:i])
    return out


def _ngrams(seq: Sequence, n: int) -> Counter:
    return Counter(tuple(seq[i : i + n]) for i in range(len(seq) - n + 1))


def sentence_bleu(hyp: Sequence, ref: Sequence, max_n: int = 4) -> float:
    """Smoothed (add-one for n > 1) sentence BLEU on token sequences, for MBR and self-BLEU."""
    import math

    if not hyp or not ref:
        return 0.0
    logs = []
    for n in range(1, max_n + 1):
        h, r = _ngrams(hyp, n), _ngrams(ref, n)
        match = sum(min(c, r[g]) for g, c in h.items())
        total = max(sum(h.values()), 0)
        if n == 1:
            if match == 0:
                return 0.0
            logs.append(math.log(match / total))
        else:
            logs.append(math.log((match + 1) / (total + 1)))
    bp = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return bp * math.exp(sum(logs) / max_n)


def mbr_select(candidates: Sequence[Sequence]) -> int:
    """Minimum-Bayes-risk choice: the candidate with the highest mean BLEU to the others.

    Never compare an MBR@k output with single-sample baselines.
    """
    k = len(candidates)
    if k == 0:
        raise ValueError("mbr_select needs at least one candidate")
    if k == 1:
        return 0
    scores = [
        sum(sentence_bleu(candidates[i], candidates[j]) for j in range(k) if j != i) / (k - 1)
        for i in range(k)
    ]
    return max(range(k), key=scores.__getitem__)
