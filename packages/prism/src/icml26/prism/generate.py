"""Controllable generation (official ``generate`` and ``pll_guided_sampler.py``).

1. **Collect**: mask each position once (L forward passes) and cache the 53-way
   log-probabilities (:func:`masked_log_probs`).
2. **Choose positions**: rank positions by the log-probability of the wild-type
   residue in the mode's channel and draw ``n`` of the ``pool_size`` lowest by
   Gumbel-top-k (``score + position_temperature · Gumbel``, lowest first).
3. **Sample residues** from the mode's 20 log-probabilities at temperature ``T`` with
   top-k and nucleus (top-p) filtering.

Modes: ``"gl"`` reads the uppercase (germline) channel — stability, humanisation;
``"ngl"`` the lowercase (non-germline) channel — affinity-maturation mimicry;
``"full"`` the case-marginal; ``"region_specific"`` GL in frameworks and NGL in CDRs.
The number of mutations is ``round(1 + (n − 1)·Beta(2, 1))`` when randomised.

For a PRISM-less model the channels coincide, so every mode samples its 33-way
distribution (the matched baseline sampler).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml26.prism.conditioning import Conditioning
from icml26.prism.germline import CDR_REGION_IDS, REGION_ID, assign_germline
from icml26.prism.model import PrismLessModel, PrismModel
from icml26.prism.score import residue_log_probs
from icml26.prism.vocab import AA_ORDER, Tokenizer, residue_ids

GEN_MODES = ("gl", "ngl", "full", "region_specific")


@dataclass(frozen=True)
class MaskedLogProbs:
    """Cache of step 1: ``gl`` and ``ngl`` are (L, 20) log-probabilities at each masked
    position (PRISM-less: both its 33-way residue log-probs)."""

    sequence: str
    gl: np.ndarray
    ngl: np.ndarray

    @property
    def full(self) -> np.ndarray:
        if self.gl is self.ngl:
            return self.gl
        return np.logaddexp(self.gl, self.ngl)


@dataclass(frozen=True)
class Variant:
    sequence: str
    positions: tuple[int, ...]
    mutations: str  # e.g. "S31Y,G55D" (1-based); unchanged draws are left out
    mode: str


def masked_log_probs(
    model: PrismModel | PrismLessModel,
    sequence: str,
    *,
    v_gene: int | None = None,
    j_gene: int | None = None,
    regions: Sequence[int] | np.ndarray | None = None,
    batch_size: int = 256,
) -> MaskedLogProbs:
    """Step 1: the per-position masked log-probabilities of ``sequence`` (L passes);
    ``v_gene``, ``j_gene`` and ``regions`` condition a model trained with them."""
    seq = sequence.upper()
    residue_ids(seq, chain="sequence")
    enc = Tokenizer()(seq)
    n = len(seq)
    lp = residue_log_probs(
        model,
        enc.input_ids,
        enc.attention_mask,
        np.zeros(n, dtype=int),
        np.arange(1, n + 1),
        batch_size=batch_size,
        conditioning=Conditioning.build(1, v_gene=v_gene, j_gene=j_gene, regions=regions),
    )
    return MaskedLogProbs(seq, lp["gl"], lp["ngl"])


def select_positions(
    scores: np.ndarray,
    n: int,
    pool_size: int,
    rng: np.random.Generator,
    *,
    temperature: float = 0.5,
    exclude: np.ndarray | None = None,
) -> np.ndarray:
    """Gumbel-top-k among the ``pool_size`` lowest ``scores`` (official ``_select_positions``)."""
    s = np.asarray(scores, dtype=float).copy()
    if exclude is not None and len(exclude):
        s[np.asarray(exclude)] = np.inf
    available = int(np.isfinite(s).sum())
    if available == 0:
        raise ValueError("every position is excluded")
    n = min(n, available)
    pool_size = max(min(pool_size, available), n)
    pool = np.argsort(s, kind="stable")[:pool_size]
    if pool_size == n:
        return np.sort(pool)
    gumbel = -np.log(-np.log(rng.uniform(1e-10, 1 - 1e-10, size=pool_size)))
    chosen = pool[np.argsort(s[pool] + temperature * gumbel, kind="stable")[:n]]
    return np.sort(chosen)


def sample_residues(
    log_probs: np.ndarray,
    rng: np.random.Generator,
    *,
    temperature: float = 0.8,
    top_k: int | None = 10,
    top_p: float | None = 0.9,
) -> np.ndarray:
    """One residue column (0..19) per row of (K, 20) log-probabilities."""
    logits = np.asarray(log_probs, dtype=float) / max(temperature, 1e-10)
    out = np.empty(len(logits), dtype=np.int64)
    for i, row in enumerate(logits):
        row = row.copy()
        if top_k is not None and top_k < 20:
            row[row < np.partition(row, -top_k)[-top_k]] = -np.inf
        if top_p is not None:
            order = np.argsort(row)[::-1]
            p = np.exp(row[order] - row[order][0])
            cum = np.cumsum(p / p.sum())
            keep = order[: int(np.searchsorted(cum, top_p)) + 1]
            drop = np.ones(20, dtype=bool)
            drop[keep] = False
            row[drop] = -np.inf
        p = np.exp(row - row.max())
        out[i] = rng.choice(20, p=p / p.sum())
    return out


def generate(
    model: PrismModel | PrismLessModel,
    sequence: str,
    *,
    n_samples: int = 100,
    n_mutations: int = 5,
    mode: str = "full",
    rng: np.random.Generator,
    regions: Sequence[int] | np.ndarray | None = None,
    v_gene: int | None = None,
    j_gene: int | None = None,
    restrict_to: Sequence[str] | None = None,
    exclude_positions: Sequence[int] | None = None,
    pool_size: int = 30,
    position_temperature: float = 0.5,
    temperature: float = 0.8,
    top_k: int | None = 10,
    top_p: float | None = 0.9,
    randomize_n_mutations: bool = True,
    cache: MaskedLogProbs | None = None,
) -> list[Variant]:
    """PLL-guided variants of ``sequence`` in one of :data:`GEN_MODES`.

    ``regions`` gives an IMGT region id (0..6) per residue; when missing and needed
    (``region_specific`` or ``restrict_to``) it is assigned with
    :func:`~icml26.prism.germline.assign_germline`. ``restrict_to`` (e.g. ``["CDR3"]``)
    limits mutations to the named regions. ``cache`` reuses step 1 across calls.
    ``v_gene``/``j_gene`` condition a model trained with gene embeddings, and
    ``regions`` also conditions one trained with region embeddings.
    """
    if mode not in GEN_MODES:
        raise ValueError(f"mode must be one of {GEN_MODES}, got {mode!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if n_samples < 1 or n_mutations < 1:
        raise ValueError("n_samples and n_mutations must be positive")
    seq = sequence.upper()
    residue_ids(seq, chain="sequence")
    n = len(seq)
    if (mode == "region_specific" or restrict_to) and regions is None:
        found = assign_germline(seq)
        if not found.called:
            raise ValueError(
                f"mode {mode!r} needs IMGT regions and none could be assigned "
                f"({found.note}); pass regions= explicitly"
            )
        regions = found.regions
    if regions is not None:
        regions = np.asarray(regions, dtype=np.int64)
        if regions.shape != (n,):
            raise ValueError(f"regions must have one id per residue ({n}), got {regions.shape}")
    if cache is None:
        uses_regions = regions is not None and bool(model.config.n_regions)
        cache = masked_log_probs(
            model, seq, v_gene=v_gene, j_gene=j_gene, regions=regions if uses_regions else None
        )
    elif cache.sequence != seq:
        raise ValueError("the cache belongs to another sequence")
    exclude = {int(i) for i in (exclude_positions or ())}
    if restrict_to:
        unknown = [r for r in restrict_to if r not in REGION_ID]
        if unknown:
            raise ValueError(f"unknown regions {unknown}; use {list(REGION_ID)}")
        allowed = np.isin(regions, [REGION_ID[r] for r in restrict_to])
        exclude |= set(np.flatnonzero(~allowed).tolist())
    wt = np.array([AA_ORDER.index(a) for a in seq])
    rows = np.arange(n)
    if mode == "gl":
        channel = cache.gl
    elif mode == "ngl":
        channel = cache.ngl
    elif mode == "full":
        channel = cache.full
    else:
        cdr = np.isin(regions, CDR_REGION_IDS)[:, None]
        channel = np.where(cdr, cache.ngl, cache.gl)
    wt_scores = channel[rows, wt]
    exclude_arr = np.array(sorted(exclude), dtype=np.int64)
    out = []
    for _ in range(n_samples):
        k = n_mutations
        if randomize_n_mutations:
            k = min(int(np.round(1 + (n_mutations - 1) * rng.beta(2, 1))), n_mutations)
        pos = select_positions(
            wt_scores, k, pool_size, rng, temperature=position_temperature, exclude=exclude_arr
        )
        new = sample_residues(channel[pos], rng, temperature=temperature, top_k=top_k, top_p=top_p)
        s = list(seq)
        muts = []
        for p, a in zip(pos, new, strict=True):
            if a != wt[p]:
                s[p] = AA_ORDER[a]
                muts.append(f"{seq[p]}{p + 1}{AA_ORDER[a]}")
        out.append(Variant("".join(s), tuple(int(p) for p in pos), ",".join(muts), mode))
    return out
