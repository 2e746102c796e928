"""D3PM (Austin et al., 2021): discrete diffusion with uniform or absorbing transitions.

The baseline the brief names beside masked diffusion, on the same network (a token head,
frozen embeddings) and the same training rule. Both transition families have closed-form
marginals, so one cumulative schedule ᾱ(t) on t ∈ [0, 1] defines every step:

    q(x_t | x_0) = ᾱ_t δ(x_0) + (1 − ᾱ_t) m,      q(x_t | x_s) = a δ(x_s) + (1 − a) m,

with a = ᾱ_t / ᾱ_s for s < t and m the stationary distribution: uniform over the V tokens
(``kind="uniform"``, cosine ᾱ as in the D3PM paper's uniform runs) or a point mass on an
extra [MASK] state (``kind="absorbing"``, ᾱ_t = 1 − t, the paper's 1/(T − t + 1)
schedule in continuous form). The network predicts p̂(x_0 | x_t) (x_0-parameterisation,
paper eq. 4); the reverse step is

    p(x_s | x_t) ∝ q(x_t | x_s) · Σ_{x_0} q(x_s | x_0) p̂(x_0 | x_t).

Training uses the paper's hybrid loss L_vb + λ·CE(x_0) (λ = 0.01) on T = 1000 discrete
steps: KL(q(x_{s} | x_t, x_0) ‖ p(x_s | x_t)) at a uniform step, and −log p̂(x_0 | x_t) at
the first. Sampling walks N equal steps of the same closed form (reconstructed: the paper
samples all T steps; N is shared with every other method here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from icml26.smoothie.baselines import TokenBaseline, _TokenModel
from icml26.smoothie.model import DenoiserConfig

__all__ = ["D3PM", "KINDS"]

KINDS = ("uniform", "absorbing")
_TINY = 1e-30


@dataclass
class D3PM(TokenBaseline):
    """D3PM with the Smoothie network; ``kind`` is ``"uniform"`` or ``"absorbing"``."""

    config: DenoiserConfig
    embeddings: Tensor
    kind: str = "uniform"
    hybrid: float = 0.01  # λ of the hybrid loss (D3PM paper, Section 3.3)
    train_steps: int = 1000  # T
    name: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if isinstance(self.train_steps, bool) or not isinstance(self.train_steps, int):
            raise TypeError(f"train_steps must be an int, got {self.train_steps!r}")
        if self.train_steps < 1:
            raise ValueError(f"train_steps T must be ≥ 1, got {self.train_steps}")
        if not self.hybrid >= 0:
            raise ValueError(f"hybrid weight λ must be ≥ 0, got {self.hybrid!r}")
        self.name = self.name or f"D3PM ({self.kind})"
        self.model = _TokenModel(self.config, self.embeddings, causal=False, timed=True)

    @property
    def vocab(self) -> int:
        return self.model.vocab

    @property
    def states(self) -> int:
        """V tokens, plus [MASK] (id V) for the absorbing kind."""
        return self.vocab + (self.kind == "absorbing")

    def alpha_bar(self, t: Tensor) -> Tensor:
        """ᾱ(t): 1 at t = 0, 0 at t = 1."""
        t = t.clamp(0.0, 1.0).double()
        if self.kind == "uniform":
            return torch.cos(0.5 * math.pi * t).pow(2).clamp(min=0.0)
        return 1.0 - t

    def _stationary(self, device: torch.device) -> Tensor:
        m = torch.zeros(self.states, dtype=torch.float64, device=device)
        if self.kind == "uniform":
            m += 1.0 / self.vocab
        else:
            m[self.vocab] = 1.0
        return m

    def _x0_probs(self, logits: Tensor) -> Tensor:
        """p̂(x_0 | x_t) over the ``states`` (the [MASK] state never is an x_0)."""
        p = torch.softmax(logits.double(), -1)
        if self.kind == "absorbing":
            p = F.pad(p, (0, 1))
        return p

    def _reverse(self, x0: Tensor, xt: Tensor, s: Tensor, t: Tensor) -> Tensor:
        """p(x_s | x_t) ∝ q(x_t | x_s) · (x0 Q̄_s)(x_s); ``x0`` a distribution or one-hot.

        ``x0`` is (B, L, K) over the K states, ``xt`` (B, L) ids, ``s`` and ``t`` (B,).
        """
        m = self._stationary(x0.device)
        ab_s, ab_t = self.alpha_bar(s)[:, None, None], self.alpha_bar(t)[:, None, None]
        a = torch.where(ab_s > 0, ab_t / ab_s.clamp(min=_TINY), torch.zeros_like(ab_t))
        marginal = ab_s * x0 + (1 - ab_s) * m  # q(x_s | x_0) averaged over p̂(x_0)
        onehot_t = F.one_hot(xt, self.states).double()
        likelihood = a * onehot_t + (1 - a) * m[xt][..., None]  # q(x_t | x_s) as a function of x_s
        joint = likelihood * marginal
        return joint / joint.sum(-1, keepdim=True).clamp(min=_TINY)

    def corrupt(self, x0: Tensor, t: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Draw x_t ~ q(x_t | x_0) for ids ``x0`` (B, L) at times ``t`` (B,)."""
        keep = torch.rand(x0.shape, generator=generator, device=x0.device)
        keep = keep < self.alpha_bar(t)[:, None].to(keep.dtype)
        if self.kind == "uniform":
            noise = torch.randint(self.vocab, x0.shape, generator=generator, device=x0.device)
        else:
            noise = torch.full_like(x0, self.vocab)
        return torch.where(keep, x0, noise)

    def loss(
        self,
        trg: Tensor,
        src: Tensor | None,
        src_mask: Tensor | None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Hybrid loss: L_t (KL of the posteriors, or −log p̂ at the first step) + λ CE."""
        b = trg.shape[0]
        T = self.train_steps
        step = torch.randint(1, T + 1, (b,), generator=generator, device=trg.device)
        t, s = step.double() / T, (step - 1).double() / T
        xt = self.corrupt(trg, t, generator)
        logits = self.model(xt, t.float(), src, src_mask)
        ce = F.cross_entropy(logits.transpose(1, 2).float(), trg, reduction="none")  # (B, L)
        p = self._reverse(self._x0_probs(logits), xt, s, t)
        q = self._reverse(F.one_hot(trg, self.states).double(), xt, s, t)
        kl = (torch.xlogy(q, q) - torch.xlogy(q, p.clamp(min=_TINY))).sum(-1)  # (B, L)
        first = (step == 1)[:, None]
        vb = torch.where(first, ce.double(), kl)
        return (vb.mean() + self.hybrid * ce.double().mean()).float()

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
        """Ancestral sampling over N equal steps from the stationary distribution."""
        b = self._batch(steps, src, batch_size)
        self.model.eval()
        device = self.embeddings.device
        ones = torch.ones(b, dtype=torch.float64, device=device)
        x = self.corrupt(torch.zeros(b, length, dtype=torch.long, device=device), ones, generator)
        grid = torch.linspace(1.0, 0.0, steps + 1, dtype=torch.float64)
        for i in range(steps):
            t, s = grid[i] * ones, grid[i + 1] * ones
            logits = self.model(x, t.float(), src, src_mask)
            probs = self._reverse(self._x0_probs(logits), x, s, t)
            flat = probs.reshape(-1, self.states)
            x = torch.multinomial(flat, 1, generator=generator).view(b, length)
        return x  # the last step (s = 0, ᾱ_0 = 1) puts no mass on [MASK]
