"""Baselines on the same network, data, budget rule and seeds as Smoothie.

- :class:`MaskedDiffusion` — MDLM-style absorbing-state diffusion (re-implemented; the
  PyPI names ``mdlm``/``sedd`` are unrelated projects): each position is masked with
  probability t (linear schedule α_t = 1 − t), the loss is the cross-entropy of the masked
  positions weighted by 1/t (the continuous-time ELBO), sampling unmasks each masked
  position with probability (t − s)/t per step and draws its token from the prediction.
- :class:`Autoregressive` — the same Transformer with causal self-attention, no time
  input, a token head, teacher forcing and greedy decoding (the FLAN-T5 role, scaled down).
- :func:`copy_source` — the floor: output the source sequence unchanged.
- :func:`retrieve_target` — nearest-neighbour retrieval: the training target of the
  training source closest to the test source (most positions with the same token, or the
  same concept when a token → concept map is given).

D3PM (uniform and absorbing) is in :mod:`icml26.smoothie.d3pm`; it shares
:class:`TokenBaseline`'s training skeleton.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml26.smoothie.model import Denoiser, DenoiserConfig, TrainConfig, TrainResult, train_loop
from icml26.smoothie.space import check_embeddings

__all__ = [
    "Autoregressive",
    "MaskedDiffusion",
    "TokenBaseline",
    "copy_source",
    "retrieve_target",
]


def copy_source(src: Tensor) -> Tensor:
    """The trivial reference: the output is the input."""
    return src.clone()


def retrieve_target(
    src: Tensor,
    train_src: Tensor,
    train_trg: Tensor,
    *,
    concept_of: Tensor | None = None,
    chunk: int = 256,
) -> Tensor:
    """Nearest-neighbour retrieval: for each row of ``src (B, L)`` the target of the training
    pair whose source agrees with it at the most positions (on concepts if ``concept_of``
    maps token ids to concepts; ties go to the first pair)."""
    for name, x in (("src", src), ("train_src", train_src), ("train_trg", train_trg)):
        if not isinstance(x, Tensor) or x.ndim != 2 or x.is_floating_point():
            raise TypeError(f"{name} must be a 2-d tensor of token ids")
    if src.shape[1] != train_src.shape[1] or train_src.shape[0] != train_trg.shape[0]:
        raise ValueError(
            f"shapes do not match: src {tuple(src.shape)}, train_src {tuple(train_src.shape)}, "
            f"train_trg {tuple(train_trg.shape)}"
        )
    if train_src.shape[0] == 0:
        raise ValueError("retrieval needs at least one training pair")
    key, bank = (src, train_src) if concept_of is None else (concept_of[src], concept_of[train_src])
    best = torch.cat(
        [
            (key[i : i + chunk, None] == bank[None]).sum(-1).argmax(-1)
            for i in range(0, len(key), chunk)
        ]
    )
    return train_trg[best].clone()


class _TokenModel(nn.Module):
    """Frozen embeddings (+ one learned extra row) feeding a :class:`Denoiser` with a head."""

    def __init__(self, config: DenoiserConfig, embeddings: Tensor, *, causal: bool, timed: bool):
        super().__init__()
        check_embeddings(embeddings)
        self.register_buffer("table", embeddings.clone())
        self.extra = nn.Parameter(torch.zeros(1, embeddings.shape[1]))
        self.vocab = embeddings.shape[0]
        self.net = Denoiser(config, head=self.vocab, causal=causal, timed=timed)

    def embed(self, ids: Tensor) -> Tensor:
        """Ids in ``[0, V]``; id V is the extra row (MASK for MDLM, BOS for the AR model)."""
        return torch.cat([self.table, self.extra], 0)[ids]

    def forward(
        self, ids: Tensor, t: Tensor | None, src: Tensor | None, src_mask: Tensor | None
    ) -> Tensor:
        s = None if src is None else self.table[src]
        return self.net(self.embed(ids), t, src=s, src_mask=src_mask)


class TokenBaseline:
    """A token-level model on the Smoothie network, trained by the same rule.

    Subclasses build ``self.model`` and define ``loss(trg, src, src_mask, generator)``;
    :meth:`fit` runs :func:`train_loop` (AdamW, EMA, Plateau on the training loss,
    all-reduce under a launcher) on it and keeps the EMA weights.
    """

    model: _TokenModel
    name: str

    def loss(
        self,
        trg: Tensor,
        src: Tensor | None,
        src_mask: Tensor | None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        raise NotImplementedError

    @staticmethod
    def _batch(steps: int, src: Tensor | None, batch_size: int | None) -> int:
        """The sampling batch size, after checking N (shared by the diffusion baselines)."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(
                f"the number of sampling steps N must be an integer ≥ 1, got {steps!r}"
            )
        b = src.shape[0] if src is not None else batch_size
        if b is None:
            raise ValueError("give src or batch_size")
        return b

    def fit(
        self,
        trg: Tensor,
        src: Tensor | None,
        src_mask: Tensor | None,
        config: TrainConfig,
        *,
        seed: int,
        device: str | torch.device = "cpu",
    ) -> TrainResult:
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        self.model.to(device)

        def loss_fn(idx: Tensor) -> Tensor:
            return self.loss(
                trg[idx],
                None if src is None else src[idx],
                None if src_mask is None else src_mask[idx],
                gen,
            )

        res = train_loop(
            self.model, loss_fn, trg.shape[0], config, seed=seed, device=device,
            desc=f"train {self.name}",
        )  # fmt: skip
        if res.ema is not None:
            self.model.load_state_dict(res.ema)
        return res


@dataclass
class MaskedDiffusion(TokenBaseline):
    """MDLM-style masked diffusion with the Smoothie network (a token head instead of x0)."""

    config: DenoiserConfig
    embeddings: Tensor
    name: str = "masked diffusion"

    def __post_init__(self) -> None:
        self.model = _TokenModel(self.config, self.embeddings, causal=False, timed=True)

    @property
    def mask_id(self) -> int:
        return self.model.vocab

    def loss(
        self,
        trg: Tensor,
        src: Tensor | None,
        src_mask: Tensor | None,
        generator: torch.Generator | None = None,
        t_eps: float = 1e-3,
    ) -> Tensor:
        b, n = trg.shape
        t = torch.rand(b, generator=generator, device=trg.device) * (1 - t_eps) + t_eps
        masked = torch.rand(b, n, generator=generator, device=trg.device) < t[:, None]
        x = torch.where(masked, torch.full_like(trg, self.mask_id), trg)
        logits = self.model(x, t, src, src_mask)
        ce = F.cross_entropy(logits.transpose(1, 2), trg, reduction="none")
        return ((ce * masked) / t[:, None]).mean()

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
        b = self._batch(steps, src, batch_size)
        self.model.eval()
        x = torch.full((b, length), self.mask_id, dtype=torch.long, device=self.embeddings.device)
        ts = torch.linspace(1.0, 0.0, steps + 1)
        for i in range(steps):
            t, s = float(ts[i]), float(ts[i + 1])
            logits = self.model(x, torch.full((b,), t), src, src_mask)
            probs = torch.softmax(logits.double(), -1).view(-1, logits.shape[-1])
            draw = torch.multinomial(probs, 1, generator=generator).view(b, length)
            still = x == self.mask_id
            reveal = torch.rand(b, length, generator=generator) < (t - s) / t
            x = torch.where(still & reveal, draw, x)
        return x


@dataclass
class Autoregressive(TokenBaseline):
    """A causal Transformer decoder with cross-attention (the AR reference)."""

    config: DenoiserConfig
    embeddings: Tensor
    name: str = "autoregressive"

    def __post_init__(self) -> None:
        self.model = _TokenModel(self.config, self.embeddings, causal=True, timed=False)

    @property
    def bos_id(self) -> int:
        return self.model.vocab

    def _shift(self, trg: Tensor) -> Tensor:
        bos = torch.full_like(trg[:, :1], self.bos_id)
        return torch.cat([bos, trg[:, :-1]], 1)

    def loss(
        self,
        trg: Tensor,
        src: Tensor | None,
        src_mask: Tensor | None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Teacher-forced cross-entropy (deterministic: ``generator`` is unused)."""
        logits = self.model(self._shift(trg), None, src, src_mask)
        return F.cross_entropy(logits.transpose(1, 2), trg)

    @torch.no_grad()
    def sample(
        self,
        *,
        length: int,
        src: Tensor | None = None,
        src_mask: Tensor | None = None,
        batch_size: int | None = None,
    ) -> Tensor:
        """Greedy decoding, one token per step (``length`` network calls)."""
        b = src.shape[0] if src is not None else batch_size
        if b is None:
            raise ValueError("give src or batch_size")
        self.model.eval()
        seq = torch.full((b, 1), self.bos_id, dtype=torch.long)
        for _ in range(length):
            logits = self.model(seq, None, src, src_mask)
            seq = torch.cat([seq, logits[:, -1].argmax(-1, keepdim=True)], 1)
        return seq[:, 1:]

    def nll(self, trg: Tensor, src: Tensor | None = None, src_mask: Tensor | None = None) -> float:
        """Mean token negative log-likelihood (for generative perplexity = exp(nll))."""
        with torch.no_grad():
            return float(self.loss(trg, src, src_mask))
