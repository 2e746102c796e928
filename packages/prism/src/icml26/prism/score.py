"""Scoring: pseudo-perplexity in four modes and zero-shot mutation scores.

**Pseudo-log-likelihood** (official ``pseudo_log_likelihood``): every residue is
masked once (L forward passes), and the normalised 53-way log-probability
``log softmax(final)`` at the masked position is read in four modes:

- ``marginalized``: ``logsumexp(log P(A), log P(a))`` — case summed out;
- ``gl``: ``log P(A)`` (uppercase);  ``ngl``: ``log P(a)`` (lowercase);
- ``exact``: the true token — lowercase at NGL residues, uppercase elsewhere.

``PPL = exp(−mean log p)``. For PRISM-less the 33-way log-probability of the residue
is returned under every mode. Masked copies of many sequences are batched together
(``batch_size`` rows per forward pass, fewer for long inputs: :func:`rows_per_pass`);
inputs longer than ``ModelConfig.max_length`` are refused with a clear error.
:func:`pseudo_log_likelihood_loop` is the one-position-at-a-time reference.

**Zero-shot binding** (official ``evaluate_flab2_binding.py``, "masked_individual +
wt_center", signal ``ngl_logprob``): for each mutated position of a variant, mask it
in the variant and read ``log P(mutant residue, NGL)``; subtract the same signal of
the wild-type residue from one unmasked forward pass of the wild type; sum over the
mutated positions. PRISM-less uses the masked-marginal log-likelihood ratio
``log p(mut) − log p(wt)`` at the masked position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from icml26.prism.conditioning import Conditioning, GeneIds, RegionIds, rows_of
from icml26.prism.model import PrismLessModel, PrismModel
from icml26.prism.vocab import (
    AA_ORDER,
    GL_IDS,
    MASK,
    NGL_IDS,
    Tokenizer,
    origin_labels,
    residue_ids,
    to_uppercase_ids,
)

MODES = ("marginalized", "gl", "ngl", "exact")
_AA_COL = {a: i for i, a in enumerate(AA_ORDER)}
Model = PrismModel | PrismLessModel

# residue token id -> its column in AA_ORDER
_COL = np.full(64, -1, dtype=np.int64)
_COL[GL_IDS] = np.arange(20)
_COL[NGL_IDS] = np.arange(20)


def _check_model(model: object) -> Model:
    if not isinstance(model, PrismModel | PrismLessModel):
        raise TypeError(f"model must be a PrismModel or PrismLessModel, got {type(model).__name__}")
    return model


#: attention scores held at once by one scoring pass (rows × heads × length²); 2^27
#: fp32 values are 512 MiB
ATTENTION_BUDGET = 2**27


def rows_per_pass(batch_size: int, length: int, n_heads: int) -> int:
    """Masked copies per forward pass: ``batch_size``, lowered for long inputs so that one
    pass holds at most :data:`ATTENTION_BUDGET` attention scores (at least one row)."""
    per_row = max(1, n_heads * length * length)
    return max(1, min(batch_size, ATTENTION_BUDGET // per_row))


@torch.no_grad()
def residue_log_probs(
    model: Model,
    input_ids: np.ndarray,
    attention_mask: np.ndarray,
    rows: np.ndarray,
    positions: np.ndarray,
    *,
    mask: bool = True,
    batch_size: int = 256,
    conditioning: Conditioning | None = None,
) -> dict[str, np.ndarray]:
    """Log-probabilities of the 20 residues at ``(rows[k], positions[k])``, each masked
    in its own copy of row ``rows[k]`` (or unmasked with ``mask=False``).
    ``conditioning`` holds one entry per row of ``input_ids``.

    Returns ``gl`` and ``ngl`` (K, 20) arrays (PRISM-less: both its 33-way residue
    log-probs), plus ``origin`` (K,) and ``alpha`` (K,) for PRISM.
    """
    _check_model(model)
    input_ids = np.asarray(input_ids)
    length = int(input_ids.shape[-1]) if input_ids.ndim == 2 else 0
    limit = model.config.max_length
    if length > limit:
        raise ValueError(
            f"input of {length} tokens exceeds the model's maximum length of {limit} "
            "(ModelConfig.max_length, special tokens included); split or trim the sequence"
        )
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    batch_size = rows_per_pass(batch_size, length, model.config.n_heads)
    device = model.device
    ids = torch.as_tensor(input_ids, device=device)
    attn = torch.as_tensor(attention_mask, device=device)
    rows_t = torch.as_tensor(rows, device=device, dtype=torch.long)
    pos_t = torch.as_tensor(positions, device=device, dtype=torch.long)
    gl_ids = torch.as_tensor(GL_IDS, device=device)
    ngl_ids = torch.as_tensor(NGL_IDS, device=device)
    is_prism = isinstance(model, PrismModel)
    cond: dict[str, torch.Tensor] = {}
    if conditioning is not None:
        conditioning.check(model)
        cond = conditioning.tensors(input_ids, device)
    gl, ngl, origin, alpha = [], [], [], []
    was_training = model.training
    model.eval()
    for start in range(0, len(rows_t), batch_size):
        r, p = rows_t[start : start + batch_size], pos_t[start : start + batch_size]
        batch = ids[r].clone()
        if mask:
            batch[torch.arange(len(r), device=device), p] = MASK
        out = model(batch, attn[r], **rows_of(cond, r))
        lp = out.log_probs()[torch.arange(len(r), device=device), p]
        gl.append(lp.index_select(-1, gl_ids))
        if is_prism:
            ngl.append(lp.index_select(-1, ngl_ids))
            origin.append(out.origin_logits[torch.arange(len(r), device=device), p])
            alpha.append(out.alpha[torch.arange(len(r), device=device), p, 0])
    model.train(was_training)
    res = {"gl": torch.cat(gl).double().cpu().numpy()}
    res["ngl"] = torch.cat(ngl).double().cpu().numpy() if is_prism else res["gl"]
    if is_prism:
        res["origin"] = torch.cat(origin).double().cpu().numpy()
        res["alpha"] = torch.cat(alpha).double().cpu().numpy()
    return res


@dataclass
class PLLResult:
    """Per-position log-probabilities per mode (``per_position[mode][i]`` has one value
    per residue of sequence ``i``, VH then VL)."""

    per_position: dict[str, list[np.ndarray]]

    def pll(self, mode: str = "marginalized") -> np.ndarray:
        return np.array([x.sum() for x in self._mode(mode)])

    def perplexity(self, mode: str = "marginalized") -> np.ndarray:
        return np.array([np.exp(-x.mean()) for x in self._mode(mode)])

    def pooled_perplexity(self, mode: str, select: Sequence[np.ndarray] | None = None) -> float:
        """``exp(−mean log p)`` over all residues (or those where ``select[i]`` is true)."""
        vals = self._mode(mode)
        if select is not None:
            if len(select) != len(vals):
                raise ValueError("select needs one mask per sequence")
            vals = [v[np.asarray(s, dtype=bool)] for v, s in zip(vals, select, strict=True)]
        flat = np.concatenate(vals) if vals else np.array([])
        if flat.size == 0:
            raise ValueError("no residues selected")
        return float(np.exp(-flat.mean()))

    def _mode(self, mode: str) -> list[np.ndarray]:
        if mode not in self.per_position:
            raise ValueError(f"unknown mode {mode!r}; modes: {list(self.per_position)}")
        return self.per_position[mode]


def _prepare(sequences, light) -> tuple[list[str], list[str | None], list[np.ndarray]]:
    seqs = [sequences] if isinstance(sequences, str) else list(sequences)
    if light is None:
        lights: list[str | None] = [None] * len(seqs)
    else:
        lights = [light] if isinstance(light, str) else list(light)
    if len(lights) != len(seqs):
        raise ValueError(f"{len(seqs)} heavy chains but {len(lights)} light chains")
    labels = []
    for h, lc in zip(seqs, lights, strict=True):
        lab = origin_labels(h)
        if lc is not None:
            lab = np.concatenate([lab, origin_labels(lc)])
        labels.append(lab)
    return seqs, lights, labels


def pseudo_log_likelihood(
    model: Model,
    sequences: str | Sequence[str],
    light: str | Sequence[str] | None = None,
    *,
    v_gene: GeneIds = None,
    j_gene: GeneIds = None,
    regions: RegionIds = None,
    batch_size: int = 256,
) -> PLLResult:
    """Pseudo-log-likelihood of each (unpaired or paired) antibody in four modes.

    Lowercase letters in the input mark NGL residues for the ``exact`` mode; the model
    always reads the uppercase sequence. ``v_gene``/``j_gene`` (one id, or one per
    sequence) and ``regions`` (region ids per residue) feed a model trained with gene
    or region embeddings (:mod:`icml26.prism.conditioning`).
    """
    _check_model(model)
    seqs, lights, labels = _prepare(sequences, light)
    enc = Tokenizer()(seqs, None if light is None else lights)
    cond = Conditioning.build(len(seqs), v_gene=v_gene, j_gene=j_gene, regions=regions)
    rows, cols = np.nonzero(enc.residue_mask)
    lp = residue_log_probs(
        model,
        enc.input_ids,
        enc.attention_mask,
        rows,
        cols,
        batch_size=batch_size,
        conditioning=cond,
    )
    true = _COL[to_uppercase_ids(enc.input_ids[rows, cols])]
    k = np.arange(len(rows))
    gl, ngl = lp["gl"][k, true], lp["ngl"][k, true]
    marg = np.logaddexp(gl, ngl) if isinstance(model, PrismModel) else gl
    flat_labels = np.concatenate(labels)
    exact = np.where(flat_labels, ngl, gl) if isinstance(model, PrismModel) else gl
    splits = np.cumsum([len(x) for x in labels])[:-1]
    per = {
        "marginalized": np.split(marg, splits),
        "gl": np.split(gl, splits),
        "ngl": np.split(ngl, splits),
        "exact": np.split(exact, splits),
    }
    return PLLResult(per)


@torch.no_grad()
def pseudo_log_likelihood_loop(model: Model, sequence: str) -> PLLResult:
    """Reference PLL of one unpaired sequence: one forward pass per masked position."""
    _check_model(model)
    labels = origin_labels(sequence)
    ids = Tokenizer().encode(sequence)
    if len(ids) > model.config.max_length:
        raise ValueError(
            f"input of {len(ids)} tokens exceeds the model's maximum length of "
            f"{model.config.max_length}"
        )
    out = {m: [] for m in MODES}
    was_training = model.training
    model.eval()
    for pos in range(1, len(ids) - 1):
        x = torch.as_tensor(ids, device=model.device).unsqueeze(0).clone()
        x[0, pos] = MASK
        lp = model(x).log_probs()[0, pos].double().cpu().numpy()
        c = _COL[ids[pos]]
        g = lp[GL_IDS[c]]
        n = lp[NGL_IDS[c]] if isinstance(model, PrismModel) else g
        out["gl"].append(g)
        out["ngl"].append(n)
        out["marginalized"].append(np.logaddexp(g, n) if isinstance(model, PrismModel) else g)
        out["exact"].append(n if labels[pos - 1] and isinstance(model, PrismModel) else g)
    model.train(was_training)
    return PLLResult({m: [np.array(v)] for m, v in out.items()})


# -- zero-shot mutation scores --------------------------------------------------------


def _mutations(wild_type: str, variant: str) -> list[int]:
    if len(variant) != len(wild_type):
        raise ValueError(
            f"variant length {len(variant)} differs from the wild type's {len(wild_type)}; "
            "only substitutions can be scored"
        )
    residue_ids(variant, chain="variant")
    return [i for i, (a, b) in enumerate(zip(wild_type, variant.upper(), strict=True)) if a != b]


def score_variants(
    model: Model,
    wild_type: str,
    variants: Sequence[str],
    *,
    method: str = "auto",
    aggregate: str = "sum",
    v_gene: int | None = None,
    j_gene: int | None = None,
    regions: Sequence[int] | np.ndarray | None = None,
    batch_size: int = 256,
) -> np.ndarray:
    """Zero-shot scores of substitution variants of ``wild_type`` (higher = fitter).

    ``method``: ``"wt_centred_ngl"`` (PRISM's binding score), ``"masked_marginal"``
    (``log p(mut) − log p(wt)`` at the masked position, marginal over case for
    PRISM — the score every baseline uses), or ``"auto"`` (the first for PRISM, the
    second for PRISM-less). ``aggregate``: ``"sum"`` or ``"mean"`` over mutated positions.
    ``v_gene``, ``j_gene`` and ``regions`` (per residue of the wild type) condition a
    model trained with gene or region embeddings; every variant shares them.
    """
    _check_model(model)
    is_prism = isinstance(model, PrismModel)
    if method == "auto":
        method = "wt_centred_ngl" if is_prism else "masked_marginal"
    if method not in ("wt_centred_ngl", "masked_marginal"):
        raise ValueError(f"unknown method {method!r}")
    if method == "wt_centred_ngl" and not is_prism:
        raise ValueError("wt_centred_ngl needs a PRISM model (PRISM-less has no NGL channel)")
    if aggregate not in ("sum", "mean"):
        raise ValueError(f"aggregate must be 'sum' or 'mean', got {aggregate!r}")
    wild_type = wild_type.upper()
    residue_ids(wild_type, chain="wild type")
    muts = [_mutations(wild_type, v) for v in variants]
    # one masked context per (variant with position p masked); single mutants share the
    # wild type's context, so an L-position scan costs L forward passes
    contexts: dict[str, int] = {}
    ctx_seq, ctx_pos, items = [], [], []
    for vi, (v, ms) in enumerate(zip(variants, muts, strict=True)):
        vu = v.upper()
        for p in ms:
            key = vu[:p] + "#" + vu[p + 1 :]
            if key not in contexts:
                contexts[key] = len(ctx_seq)
                ctx_seq.append(vu)
                ctx_pos.append(p)
            items.append((vi, p, contexts[key], _AA_COL[vu[p]]))
    scores = np.zeros(len(variants))
    counts = np.array([max(len(m), 1) for m in muts], dtype=float)
    if not items:
        return scores
    enc = Tokenizer()(ctx_seq)

    def cond(n: int) -> Conditioning | None:
        return Conditioning.build(n, v_gene=v_gene, j_gene=j_gene, regions=regions)

    lp = residue_log_probs(
        model,
        enc.input_ids,
        enc.attention_mask,
        np.arange(len(ctx_seq)),
        np.asarray(ctx_pos) + 1,
        batch_size=batch_size,
        conditioning=cond(len(ctx_seq)),
    )
    wt_cols = _COL[residue_ids(wild_type)]
    if method == "wt_centred_ngl":
        wt_enc = Tokenizer()(wild_type)
        n = len(wild_type)
        ref = residue_log_probs(
            model,
            wt_enc.input_ids,
            wt_enc.attention_mask,
            np.zeros(n, dtype=int),
            np.arange(1, n + 1),
            mask=False,
            batch_size=batch_size,
            conditioning=cond(1),
        )
        wt_signal = ref["ngl"][np.arange(n), wt_cols]
        for vi, p, c, col in items:
            scores[vi] += lp["ngl"][c, col] - wt_signal[p]
    else:
        marg = np.logaddexp(lp["gl"], lp["ngl"]) if is_prism else lp["gl"]
        for vi, p, c, col in items:
            scores[vi] += marg[c, col] - marg[c, wt_cols[p]]
    return scores / counts if aggregate == "mean" else scores
