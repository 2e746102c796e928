"""Diffusion-LM (Li et al., 2022): Gaussian diffusion on learned embeddings with rounding.

The embedding-diffusion baseline of the brief with the parts that distinguish it from
the frozen-embedding ablation space (:class:`~icml26.smoothie.space.EmbeddingSpace`):

- the embedding table is **learned** jointly with the denoiser (initialised from the
  task's table, so every method starts from the same information);
- the end-to-end objective L_e2e-simple of the paper (Sec. 4.1) as the official
  ``training_losses_e2e`` computes it: x_0 = EMB(w) + σ_0 ε with σ_0² = 1 − ᾱ(0);
  ‖f(x_t, t) − x_0‖² + ‖√ᾱ(1) x_0‖² (the prior term) + the rounding loss
  −log p(w | x_0), whose logits are x_0 · EMBᵀ (the tied rounding head);
- the sqrt noise schedule ᾱ(t) = 1 − √(t + 10⁻⁴), clipped at 0 where it turns negative
  (the paper's β clipping), on continuous t;
- the clamping trick at sampling: each step's predicted x_0 is replaced by its nearest
  learned embedding before re-noising.

*Reconstructed*: sampling uses the predict-x0-then-re-noise step of every other method
here (N equal steps, fresh noise), not the DDPM posterior over all T of the paper, so
that the sampler and N are shared; the source of a seq2seq pair enters through the same
cross-attention encoder as for Smoothie, reading the learned table.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml26.smoothie.baselines import TokenBaseline
from icml26.smoothie.model import Denoiser, DenoiserConfig
from icml26.smoothie.space import check_embeddings, nearest_tokens

__all__ = ["DiffusionLM", "sqrt_alpha_bar"]

_OFFSET = 1e-4  # the s of ᾱ(t) = 1 − √(t + s)


def sqrt_alpha_bar(t: Tensor) -> Tensor:
    """Diffusion-LM's sqrt schedule ᾱ(t) = 1 − √(t + 10⁻⁴), clipped to [0, 1]."""
    return (1.0 - torch.sqrt(t.clamp(0.0, 1.0) + _OFFSET)).clamp(min=0.0)


class _LearnedTable(nn.Module):
    """A learned embedding table feeding a :class:`Denoiser` that predicts x_0."""

    def __init__(self, config: DenoiserConfig, embeddings: Tensor):
        super().__init__()
        check_embeddings(embeddings)
        if embeddings.shape[1] != config.embed_dim:
            raise ValueError(
                f"embedding width {embeddings.shape[1]} differs from the denoiser's "
                f"embed_dim {config.embed_dim}"
            )
        self.table = nn.Parameter(embeddings.detach().clone().float())
        self.net = Denoiser(config)

    def forward(self, x: Tensor, t: Tensor, src: Tensor | None, src_mask: Tensor | None):
        s = None if src is None else self.table[src]
        return self.net(x, t, src=s, src_mask=src_mask)

    def logits(self, x0: Tensor) -> Tensor:
        """The tied rounding head: logits of p(w | x_0)."""
        return x0 @ self.table.T


@dataclass
class DiffusionLM(TokenBaseline):
    """Diffusion-LM-style embedding diffusion with learned embeddings and rounding."""

    config: DenoiserConfig
    embeddings: Tensor
    clamp: bool = True  # the clamping trick at sampling
    name: str = "Diffusion-LM"

    def __post_init__(self) -> None:
        self.model = _LearnedTable(self.config, self.embeddings)

    def loss(
        self,
        trg: Tensor,
        src: Tensor | None,
        src_mask: Tensor | None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """L_e2e-simple: x_0 regression + prior term + rounding cross-entropy."""
        b = trg.shape[0]
        dev = trg.device
        table = self.model.table
        mean = table[trg]
        sigma0 = torch.sqrt(1.0 - sqrt_alpha_bar(torch.zeros((), device=dev)))
        x0 = mean + sigma0 * torch.randn(mean.shape, generator=generator, device=dev)
        t = torch.rand(b, generator=generator, device=dev)
        ab = sqrt_alpha_bar(t)[:, None, None]
        eps = torch.randn(x0.shape, generator=generator, device=dev)
        x_t = ab.sqrt() * x0 + (1 - ab).sqrt() * eps
        pred = self.model(x_t, t, src, src_mask)
        mse = F.mse_loss(pred, x0)
        prior = (sqrt_alpha_bar(torch.ones((), device=dev)).sqrt() * x0).pow(2).mean()
        rounding = F.cross_entropy(self.model.logits(x0).transpose(1, 2), trg)
        return mse + prior + rounding

    @torch.no_grad()
    def sample(
        self,
        *,
        length: int,
        src: Tensor | None = None,
        src_mask: Tensor | None = None,
        batch_size: int | None = None,
        steps: int = 200,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """N predict-x0 (clamped), re-noise steps from N(0, I); rounding at the end."""
        b = self._batch(steps, src, batch_size)
        self.model.eval()
        table = self.model.table
        x = torch.randn((b, length, table.shape[1]), generator=generator, device=table.device)
        grid = torch.linspace(1.0, 0.0, steps + 1)
        for i in range(steps):
            t = torch.full((b,), float(grid[i]), device=table.device)
            raw = self.model(x, t, src, src_mask)
            if i + 1 == steps:  # the last prediction is rounded, not clamped
                return self.model.logits(raw).argmax(-1)
            pred = table[nearest_tokens(raw, table)] if self.clamp else raw
            ab = sqrt_alpha_bar(torch.tensor(float(grid[i + 1])))
            eps = torch.randn(x.shape, generator=generator, device=x.device)
            x = ab.sqrt() * pred + (1 - ab).sqrt() * eps
        raise AssertionError("unreachable: steps ≥ 1")
