"""Scores of generated token sequences and property checks of the forward processes.

Scores: concept accuracy (any synonym is correct), exact token accuracy, corpus BLEU-4 on
token ids, distinct-token rate (collapse detector), self-BLEU between samples, and the
generative perplexity of samples under an autoregressive model trained on the same data.

Properties (the brief's, thresholds ours): token recovery at small t, entropy of the
noise-free latent against log V, monotonicity in t, the synonym-mass ratio at an
intermediate t, and the simplex at matched token recovery. The information profile of a
space: how much of a token's group (its concept) the NETWORK INPUT still shows at t, and the
time at which half of it is gone (:func:`half_information_time`, used to re-fit Smoothie's
``coef_d`` to a table, :func:`icml26.smoothie.data.fit_coef_d`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor

from icml26.smoothie.sample import cut_at_eos, sentence_bleu
from icml26.smoothie.space import DiffusionSpace

if TYPE_CHECKING:
    from icml26.smoothie.baselines import Autoregressive

__all__ = [
    "concept_accuracy",
    "corpus_bleu",
    "distinct_rate",
    "generative_perplexity",
    "half_information_time",
    "input_information",
    "latent_entropy",
    "library_scores",
    "matched_time",
    "self_bleu",
    "synonym_mass_ratio",
    "token_accuracy",
    "token_recovery",
]


def _check_pair(out: Tensor, ref: Tensor) -> None:
    if out.shape != ref.shape:
        raise ValueError(f"outputs {tuple(out.shape)} and references {tuple(ref.shape)} differ")


def concept_accuracy(out: Tensor, ref: Tensor, concept_of: Tensor, pad_id: int) -> float:
    """Share of reference positions (content + EOS, not PAD) whose generated token has the
    reference token's concept (any synonym counts; EOS must be EOS)."""
    _check_pair(out, ref)
    keep = ref != pad_id
    return float((concept_of[out] == concept_of[ref])[keep].float().mean())


def token_accuracy(out: Tensor, ref: Tensor, pad_id: int) -> float:
    _check_pair(out, ref)
    keep = ref != pad_id
    return float((out == ref)[keep].float().mean())


def _concepts(rows: list[list[int]], concept_of: Tensor | None) -> list[list[int]]:
    if concept_of is None:
        return rows
    return [[int(concept_of[i]) for i in r] for r in rows]


def corpus_bleu(
    out: Tensor,
    ref: Tensor,
    end_ids: Sequence[int],
    concept_of: Tensor | None = None,
    max_n: int = 4,
) -> float:
    """Corpus BLEU-4 (×100, brevity penalty, no smoothing) on sequences cut at EOS; on
    concept ids when ``concept_of`` is given."""
    hyps = _concepts(cut_at_eos(out, end_ids), concept_of)
    refs = _concepts(cut_at_eos(ref, end_ids), concept_of)
    match, total = [0] * max_n, [0] * max_n
    hl = sum(len(h) for h in hyps)
    rl = sum(len(r) for r in refs)
    for h, r in zip(hyps, refs, strict=True):
        for n in range(1, max_n + 1):
            hg = Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
            rg = Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            match[n - 1] += sum(min(c, rg[g]) for g, c in hg.items())
            total[n - 1] += max(len(h) - n + 1, 0)
    if hl == 0 or min(match) == 0:
        return 0.0
    logp = sum(math.log(m / t) for m, t in zip(match, total, strict=True)) / max_n
    bp = 1.0 if hl > rl else math.exp(1 - rl / hl)
    return 100 * bp * math.exp(logp)


def library_scores(
    out: Tensor,
    ref: Tensor,
    end_ids: Sequence[int],
    concept_of: Tensor | None = None,
) -> dict[str, float]:
    """sacreBLEU (corpus, ``tokenize="none"``) and ROUGE-L F1 (``rouge-score``, mean over
    sentences, ×100) on sequences cut at EOS, written as ``c<concept>`` words when
    ``concept_of`` is given (else ``t<token id>``). Empty when the optional ``metrics``
    extra (``sacrebleu``, ``rouge-score``) is not installed."""
    _check_pair(out, ref)
    try:
        import sacrebleu
        from rouge_score import rouge_scorer
    except ImportError:
        return {}
    prefix = "t" if concept_of is None else "c"

    def words(rows: list[list[int]]) -> list[str]:
        return [" ".join(f"{prefix}{i}" for i in r) for r in _concepts(rows, concept_of)]

    hyps, refs = words(cut_at_eos(out, end_ids)), words(cut_at_eos(ref, end_ids))
    bleu = sacrebleu.corpus_bleu(hyps, [refs], tokenize="none").score
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    rouge = [scorer.score(r, h)["rougeL"].fmeasure for h, r in zip(hyps, refs, strict=True)]
    return {"sacrebleu": float(bleu), "rouge_l": 100 * float(sum(rouge) / max(len(rouge), 1))}


def distinct_rate(out: Tensor, end_ids: Sequence[int]) -> float:
    """Mean over sequences of (distinct tokens)/(tokens), cut at EOS; empty sequences score 0."""
    rows = cut_at_eos(out, end_ids)
    return float(sum(len(set(r)) / len(r) if r else 0.0 for r in rows) / max(len(rows), 1))


def self_bleu(samples: Sequence[Tensor], end_ids: Sequence[int]) -> float:
    """Mean sentence BLEU between different samples for the same source (×100; lower = more
    diverse)."""
    if len(samples) < 2:
        raise ValueError("self-BLEU needs at least two samples per source")
    cut = [cut_at_eos(s, end_ids) for s in samples]
    scores = []
    for i in range(len(cut)):
        for j in range(len(cut)):
            if i != j:
                scores += [sentence_bleu(a, b) for a, b in zip(cut[i], cut[j], strict=True)]
    return 100 * sum(scores) / len(scores)


@torch.no_grad()
def generative_perplexity(
    scorer: Autoregressive,
    samples: Tensor,
    end_id: int,
    *,
    pad_id: int | None = None,
    src: Tensor | None = None,
    src_mask: Tensor | None = None,
    batch_size: int = 64,
) -> float:
    """Generative perplexity of ``samples (B, L)`` under an autoregressive ``scorer``.

    As the official ``compute_ppl`` does with GPT-2 large: each sample is cut at its first
    end token, empty samples are dropped, and the perplexity is ``exp`` of the summed token
    negative log-likelihood over the summed token count (a corpus-level mean, not a mean of
    per-sample perplexities). Our scorer is the package's small AR model trained on the
    same corpus (the brief's replacement for GPT-2, which is a download); it starts from its
    BOS row and also scores the end token, so a sample of n tokens contributes n + 1 terms.
    ``pad_id`` (optional) also ends a sample. ``src`` conditions a seq2seq scorer.
    """
    if not isinstance(samples, Tensor) or samples.ndim != 2 or samples.is_floating_point():
        raise TypeError("samples must be a 2-d tensor of token ids")
    if samples.shape[1] > scorer.model.net.config.max_len:
        raise ValueError(
            f"samples of length {samples.shape[1]} exceed the scorer's maximum length "
            f"{scorer.model.net.config.max_len}"
        )
    if src is not None and src.shape[0] != samples.shape[0]:
        raise ValueError(f"{src.shape[0]} sources for {samples.shape[0]} samples")
    ends = [end_id] if pad_id is None else [end_id, pad_id]
    rows = cut_at_eos(samples, ends)
    keep = [i for i, r in enumerate(rows) if r]
    if not keep:
        raise ValueError("every sample is empty: perplexity is undefined")
    length = samples.shape[1]
    if max(len(rows[i]) for i in keep) + 1 > length:  # no room for the end token: extend
        length += 1
    filler = end_id if pad_id is None else pad_id
    padded = torch.full((len(keep), length), filler, dtype=torch.long)
    counted = torch.zeros(len(keep), length, dtype=torch.bool)
    for k, i in enumerate(keep):
        n = len(rows[i])
        padded[k, :n] = torch.tensor(rows[i])
        padded[k, n] = end_id
        counted[k, : n + 1] = True
    if length > scorer.model.net.config.max_len:
        padded, counted = padded[:, :-1], counted[:, :-1]
    index = torch.tensor(keep)
    scorer.model.eval()
    device = scorer.embeddings.device
    nll, count = 0.0, 0
    for j in range(0, len(keep), batch_size):
        trg = padded[j : j + batch_size].to(device)
        rows_ = index[j : j + batch_size]
        s = None if src is None else src[rows_].to(device)
        m = None if src_mask is None else src_mask[rows_].to(device)
        logits = scorer.model(scorer._shift(trg), None, s, m)
        ce = F.cross_entropy(logits.transpose(1, 2).double(), trg, reduction="none")
        mask = counted[j : j + batch_size].to(device)
        nll += float(ce[mask].sum())
        count += int(mask.sum())
    return math.exp(nll / count)


# -- properties of the forward processes --------------------------------------------------
def _latent(
    space: DiffusionSpace,
    emb: Tensor,
    tokens: Tensor,
    t: float,
    noise: bool,
    generator: torch.Generator | None,
) -> Tensor:
    x0 = space.clean(tokens, emb)
    tt = torch.full((tokens.shape[0],), float(t))
    if noise:
        return space.noise(x0, tt, generator)
    mu, _ = space.params(tt)
    return mu * x0


def token_recovery(
    space: DiffusionSpace,
    emb: Tensor,
    tokens: Tensor,
    t: float,
    generator: torch.Generator | None = None,
) -> float:
    """Share of tokens ``(B, L)`` for which ``argmax softmax(X_t)`` is the token itself."""
    x = _latent(space, emb, tokens, t, True, generator)
    return float((x.argmax(-1) == tokens).float().mean())


def latent_entropy(
    space: DiffusionSpace,
    emb: Tensor,
    tokens: Tensor,
    t: float,
    *,
    noise: bool = False,
    generator: torch.Generator | None = None,
) -> float:
    """Mean entropy (nats) of ``softmax(X_t)``; of the noise-free mean latent by default."""
    p = torch.softmax(_latent(space, emb, tokens, t, noise, generator).double(), -1)
    return float((-(p * p.clamp_min(1e-300).log()).sum(-1)).mean())


def synonym_mass_ratio(
    space: DiffusionSpace,
    emb: Tensor,
    tokens: Tensor,
    concept_of: Tensor,
    t: float,
    *,
    generator: torch.Generator | None = None,
) -> float:
    """Mean per-token ``softmax(X_t)`` mass on the token's synonyms (its concept, itself
    excluded) divided by the mean per-token mass on one random other concept's tokens;
    content tokens only (concept ≥ 0)."""
    p = torch.softmax(_latent(space, emb, tokens, t, True, generator).double(), -1)
    p = p.reshape(-1, p.shape[-1])
    tok = tokens.reshape(-1)
    content = concept_of[tok] >= 0  # PAD/EOS have no synonyms
    p, tok = p[content], tok[content]
    conc = concept_of[tok]
    n_conc = int(concept_of.max()) + 1
    same = (concept_of[None, :] == conc[:, None]) & (
        torch.arange(len(concept_of))[None] != tok[:, None]
    )
    other = torch.randint(0, n_conc - 1, conc.shape, generator=generator)
    other = other + (other >= conc).long()  # a different concept
    rand = concept_of[None, :] == other[:, None]
    # per-token mass, so that groups of different sizes compare
    ms = (p * same).sum(1) / same.sum(1).clamp_min(1)
    mr = (p * rand).sum(1) / rand.sum(1).clamp_min(1)
    return float(ms.mean() / mr.mean())


def matched_time(
    space: DiffusionSpace, emb: Tensor, tokens: Tensor, target: float, generator_seed: int = 0
) -> float:
    """The t at which ``space``'s token recovery equals ``target`` (bisection; recovery
    decreases with t)."""
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        r = token_recovery(space, emb, tokens, mid, torch.Generator().manual_seed(generator_seed))
        lo, hi = (mid, hi) if r > target else (lo, mid)
    return (lo + hi) / 2


def _rows_and_groups(
    embeddings: Tensor, groups: Tensor | None, max_rows: int, seed: int
) -> tuple[Tensor, Tensor]:
    v = embeddings.shape[0]
    groups = torch.arange(v) if groups is None else torch.as_tensor(groups).long()
    if groups.shape != (v,):
        raise ValueError(f"groups must have one entry per embedding row ({v}), got {groups.shape}")
    rows = torch.nonzero(groups >= 0).flatten()  # negative groups (special tokens) left out
    if rows.numel() == 0:
        raise ValueError("no row has a group ≥ 0")
    if rows.numel() > max_rows:
        pick = torch.randperm(rows.numel(), generator=torch.Generator().manual_seed(seed))
        rows = rows[pick[:max_rows]].sort().values
    return rows, groups


@torch.no_grad()
def input_information(
    space: DiffusionSpace,
    embeddings: Tensor,
    t: float,
    groups: Tensor | None = None,
    *,
    draws: int = 4,
    max_rows: int = 2048,
    seed: int = 0,
) -> float:
    """Share of tokens whose NETWORK INPUT at time t still shows the token's group.

    For every row of the table with ``groups ≥ 0`` (default: every row its own group), with
    ``draws`` forward samples each, the input (``softmax(X_t) @ E`` or ``x_t``) is read out
    as the row of largest cosine similarity (the softmax input shrinks toward the table's
    mean, so the nearest row under-reads it); a hit when that row is in the same group.
    Chance is about 1 / (number of groups).
    """
    rows, groups = _rows_and_groups(embeddings, groups, max_rows, seed)
    gen = torch.Generator().manual_seed(seed)
    unit = embeddings / embeddings.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    hits = 0
    for chunk in rows.repeat(draws).split(256):
        tokens = chunk[:, None]
        x_t = space.noise(space.clean(tokens, embeddings), torch.full((len(chunk),), t), gen)
        read = (space.model_input(x_t, embeddings)[:, 0] @ unit.T).argmax(-1)
        hits += int((groups[read] == groups[chunk]).sum())
    return hits / (rows.numel() * draws)


def half_information_time(
    space: DiffusionSpace,
    embeddings: Tensor,
    groups: Tensor | None = None,
    *,
    draws: int = 4,
    max_rows: int = 2048,
    seed: int = 0,
    iterations: int = 14,
) -> float:
    """The t at which :func:`input_information` falls to 1/2 (bisection; the same noise
    draws at every t, so the curve is monotone up to sampling noise)."""
    lo, hi = 0.0, 1.0
    for _ in range(iterations):
        mid = (lo + hi) / 2
        info = input_information(
            space, embeddings, mid, groups, draws=draws, max_rows=max_rows, seed=seed
        )
        lo, hi = (mid, hi) if info > 0.5 else (lo, mid)
    return (lo + hi) / 2
