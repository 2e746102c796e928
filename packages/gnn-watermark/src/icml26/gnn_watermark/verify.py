"""Black-box ownership verification (the official ``count_matches``,
``get_natural_match_distribution``, ``collect_random_subgraphs.py``).

The verifier queries the suspect model for class probabilities on the T secret
subgraphs, computes β_t exactly as in training, binarises s_t = sign(β_t) and counts
the **matching indices** MI: features j with s_1j = … = s_Tj. Under the paper's null
(independent fair signs) a feature matches with probability p = 2·2^{-T}, so
MI ~ Binomial(F, p) and z = (MI − Fp)/√(Fp(1−p)).

The official statistic counts matches "with zeros": a feature absent from (constant
in) a subgraph has β_j = 0 exactly, and if it is absent from all T subgraphs its
zeros "match". Sparse bag-of-words graphs have many such features, so the official
count is inflated under the null while the binomial reference ignores it — clean
models then look watermarked. This module reports, side by side:

- ``official``: MI with zeros against Binomial(F, 2·2^{-T}) (the official numbers);
- ``analytic``: MI without zeros against Binomial(F_eff, 2·2^{-T}), F_eff the features
  that vary inside every secret subgraph (the only ones that can match);
- ``subgraph``: MI without zeros against the empirical null of the *suspect* model on
  random non-watermarked subgraphs of the same size (official
  ``collect_random_subgraphs.py``; one-sided normal p-value as in the official code);
- ``clean``: MI without zeros against the MI of independently trained clean models on
  the same secret subgraphs; with K such models the p-value uses the Student-t
  prediction interval, t = (MI − m)/(s·√(1 + 1/K)) with K − 1 degrees of freedom, and
  s is floored at the Poisson sd √m (few models often agree exactly).

Signs are correlated across subgraphs (a feature that pushes toward a common class
has the same sign everywhere), so the analytic null is optimistic; the empirical nulls
are the honest tests.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from scipy import stats
from torch import Tensor, nn
from torch_geometric.data import Data

from icml26.gnn_watermark.data import check_graph
from icml26.gnn_watermark.explain import RIDGE_LAMBDA, informative_features
from icml26.gnn_watermark.key import WatermarkKey
from icml26.gnn_watermark.model import check_model_fits
from icml26.gnn_watermark.subgraph import explain_subgraphs_eval, induced_subgraphs
from icml26.shared import numpy_rng

#: a null whose counts barely vary would give infinite z; its sd is floored at half a count
MIN_NULL_SD = 0.5
#: share of nonzero entries in the key's subgraph features above which verification warns
DENSE_FEATURES = 0.5


class DenseFeaturesWarning(UserWarning):
    """The key's features are dense: the match count MI has little power (README, Limitations)."""


def feature_density(x: Tensor) -> float:
    """Share of nonzero entries of a feature block."""
    return float((x != 0).float().mean()) if x.numel() else 0.0


def warn_if_dense(x: Tensor, *, stacklevel: int = 3) -> bool:
    """Warn (:class:`DenseFeaturesWarning`) when ``x`` is denser than :data:`DENSE_FEATURES`.

    Why: MI counts the features whose explanation signs agree on all T subgraphs, whatever
    their sign. With dense informative features a clean model's signs already agree on many
    features (on a dense SBM graph: 20 of 64, against 4 under the binomial null), and the
    ridge explanation is a joint regression, so pushing the M watermarked coefficients moves
    the others: the watermarked MI stays at the clean level although the alignment with w is
    high. ``Verification.mi_watermark`` (agreement *with w*) still separates the two there.
    """
    density = feature_density(x)
    if density > DENSE_FEATURES:
        warnings.warn(
            f"{density:.0%} of the key's feature entries are nonzero: on dense features the "
            "match count of explanation watermarking has little power (clean models already "
            "agree on many signs) and ownership may not verify; the method is made for sparse "
            "bag-of-words-like features. See Verification.mi_watermark.",
            DenseFeaturesWarning,
            stacklevel=stacklevel,
        )
        return True
    return False


def count_matches(signs: Tensor, *, ignore_zeros: bool = True) -> Tensor:
    """MI for sign tensors ``(..., T, F)`` -> ``(...)``: features whose T signs all agree.

    ``ignore_zeros=False`` is the official "with zeros" count.
    """
    if signs.dim() < 2:
        raise ValueError(f"signs must be (..., T, F), got {tuple(signs.shape)}")
    same = (signs == signs[..., :1, :]).all(dim=-2)
    if ignore_zeros:
        same &= signs[..., 0, :] != 0
    return same.sum(dim=-1)


def analytic_null(num_features: int, num_subgraphs: int) -> tuple[float, float]:
    """(μ, σ) of MI under independent fair signs: Binomial(F, 2·2^{-T})."""
    p = 2.0 * 0.5**num_subgraphs
    return num_features * p, math.sqrt(num_features * p * (1 - p))


@dataclass(frozen=True)
class NullDistribution:
    """Match counts MI observed without a watermark; ``kind`` is "subgraph" or "clean"."""

    counts: tuple[float, ...]
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in ("subgraph", "clean"):
            raise ValueError(f"kind must be 'subgraph' or 'clean', got {self.kind!r}")
        if len(self.counts) < 2:
            raise ValueError(f"an empirical null needs at least 2 counts, got {len(self.counts)}")

    @property
    def mean(self) -> float:
        return float(np.mean(self.counts))

    @property
    def sd(self) -> float:
        """Sample sd (ddof 1), floored. The clean-model null has few counts, often all
        equal (the natural matches are a property of the data more than of the model), so
        its sd is floored at the Poisson sd √mean — a conservative choice that keeps z
        finite and small unless MI clearly exceeds the natural count."""
        sd = float(np.std(self.counts, ddof=1))
        floor = math.sqrt(max(self.mean, 1.0)) if self.kind == "clean" else MIN_NULL_SD
        return max(sd, floor)

    def z(self, mi: float) -> float:
        return (mi - self.mean) / self.sd

    def p(self, mi: float) -> float:
        """One-sided p-value of MI: normal for the subgraph null (official), Student-t
        prediction for the clean-model null (few models)."""
        if self.kind == "subgraph":
            return float(stats.norm.sf(self.z(mi)))
        k = len(self.counts)
        t = (mi - self.mean) / (self.sd * math.sqrt(1 + 1 / k))
        return float(stats.t.sf(t, df=k - 1))


@dataclass(frozen=True)
class Verification:
    """Everything the ownership test computed for one suspect model and one key."""

    mi: int
    mi_with_zeros: int
    mi_watermark: int
    informative_features: int
    alignment: float
    z_official: float
    p_official: float
    z_analytic: float
    p_analytic: float
    z_subgraph: float | None = None
    p_subgraph: float | None = None
    z_clean: float | None = None
    p_clean: float | None = None

    def owned(self, alpha: float = 0.01) -> bool:
        """Ownership is claimed when every empirical null computed rejects at level ``alpha``
        (the analytic nulls are reported, not trusted)."""
        ps = [p for p in (self.p_subgraph, self.p_clean) if p is not None]
        if not ps:
            raise ValueError("no empirical null was computed; pass subgraph_null or clean_null")
        return max(ps) < alpha

    def as_dict(self) -> dict:
        return asdict(self)


def key_signs(model: nn.Module, data: Data, key: WatermarkKey, *, lam: float = RIDGE_LAMBDA):
    """sign(β_t) of the suspect on the secret subgraphs (T, F), with β and the batch."""
    _check_suspect(model, data, key)
    device = next(model.parameters()).device
    batch = induced_subgraphs(data, key.nodes).to(device)
    beta = explain_subgraphs_eval(model, batch, lam=lam)
    return torch.sign(beta), beta, batch


def _check_suspect(model: object, data: Data, key: WatermarkKey) -> None:
    if not isinstance(key, WatermarkKey):
        raise TypeError(f"key must be a WatermarkKey, got {type(key).__name__}")
    check_graph(data)
    check_model_fits(model, data)
    key.check(data)


def random_subgraph_null(
    model: nn.Module,
    data: Data,
    key: WatermarkKey,
    *,
    num_subgraphs: int = 60,
    num_tuples: int = 200,
    seed: int = 0,
    lam: float = RIDGE_LAMBDA,
) -> tuple[NullDistribution, NullDistribution]:
    """Empirical null of the suspect: MI over random T-tuples of random non-watermarked
    subgraphs of the key's size, drawn from the training nodes outside the key.

    Returns the nulls of the count without zeros and with zeros.
    """
    if num_subgraphs < key.num_subgraphs:
        raise ValueError(
            f"need at least T = {key.num_subgraphs} null subgraphs, got {num_subgraphs}"
        )
    if num_tuples < 2:
        raise ValueError(f"need at least 2 tuples, got {num_tuples}")
    _check_suspect(model, data, key)
    rng = numpy_rng(seed, "subgraph-null")
    pool = torch.nonzero(data.train_mask.cpu(), as_tuple=True)[0].numpy()
    pool = np.setdiff1d(pool, key.nodes.numpy().reshape(-1))
    n = key.subgraph_size
    if len(pool) < n:
        raise ValueError(f"only {len(pool)} training nodes outside the key; need {n}")
    nodes = np.stack([rng.choice(pool, size=n, replace=False) for _ in range(num_subgraphs)])
    device = next(model.parameters()).device
    batch = induced_subgraphs(data, torch.from_numpy(nodes)).to(device)
    signs = torch.sign(explain_subgraphs_eval(model, batch, lam=lam))  # (S, F)
    tuples = np.stack(
        [
            rng.choice(num_subgraphs, size=key.num_subgraphs, replace=False)
            for _ in range(num_tuples)
        ]
    )
    grouped = signs[torch.from_numpy(tuples).to(device)]  # (num_tuples, T, F)
    without = count_matches(grouped).float().cpu().tolist()
    with_zeros = count_matches(grouped, ignore_zeros=False).float().cpu().tolist()
    return NullDistribution(tuple(without), "subgraph"), NullDistribution(
        tuple(with_zeros), "subgraph"
    )


def match_count(
    model: nn.Module, data: Data, key: WatermarkKey, *, lam: float = RIDGE_LAMBDA
) -> int:
    """MI (without zeros) of ``model`` on the key's subgraphs."""
    signs, _, _ = key_signs(model, data, key, lam=lam)
    return int(count_matches(signs))


def clean_model_null(
    models: Sequence[nn.Module], data: Data, key: WatermarkKey, *, lam: float = RIDGE_LAMBDA
) -> NullDistribution:
    """Null from independently trained clean models: their MI on the same secret subgraphs."""
    if len(models) < 2:
        raise ValueError(f"a clean-model null needs at least 2 models, got {len(models)}")
    return NullDistribution(
        tuple(float(match_count(m, data, key, lam=lam)) for m in models), "clean"
    )


def verify_ownership(
    model: nn.Module,
    data: Data,
    key: WatermarkKey,
    *,
    subgraph_null: bool | NullDistribution = True,
    clean_null: NullDistribution | None = None,
    num_null_subgraphs: int = 60,
    num_null_tuples: int = 200,
    seed: int = 0,
    lam: float = RIDGE_LAMBDA,
) -> Verification:
    """Run the ownership test of ``key`` on a suspect ``model`` (output probabilities only).

    ``subgraph_null``: True draws the suspect's random-subgraph null, a
    :class:`NullDistribution` reuses one, False skips it. ``clean_null``: the null of
    independently trained clean models (:func:`clean_model_null`), if available.
    """
    if not isinstance(key, WatermarkKey):
        raise TypeError(f"key must be a WatermarkKey, got {type(key).__name__}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch module, got {type(model).__name__}")
    signs, _, batch = key_signs(model, data, key, lam=lam)
    warn_if_dense(batch.x)
    t = key.num_subgraphs
    mi = int(count_matches(signs))
    mi_zeros = int(count_matches(signs, ignore_zeros=False))
    f_eff = int(informative_features(batch.x).sum())
    w = key.w.to(signs.device)
    pos = w != 0
    alignment = float((signs[:, pos] == w[pos]).float().mean())
    mi_w = int((signs[:, pos] == w[pos]).all(dim=0).sum())

    mu, sigma = analytic_null(key.num_features, t)
    z_off = (mi_zeros - mu) / sigma
    mu_e, sigma_e = analytic_null(f_eff, t)
    z_an = (mi - mu_e) / sigma_e if sigma_e > 0 else 0.0
    result = {
        "mi": mi,
        "mi_with_zeros": mi_zeros,
        "mi_watermark": mi_w,
        "informative_features": f_eff,
        "alignment": alignment,
        "z_official": z_off,
        "p_official": float(stats.norm.sf(z_off)),
        "z_analytic": z_an,
        "p_analytic": float(stats.norm.sf(z_an)) if sigma_e > 0 else 1.0,
    }
    if subgraph_null is True:
        subgraph_null, _ = random_subgraph_null(
            model,
            data,
            key,
            num_subgraphs=num_null_subgraphs,
            num_tuples=num_null_tuples,
            seed=seed,
            lam=lam,
        )
    if isinstance(subgraph_null, NullDistribution):
        result.update(z_subgraph=subgraph_null.z(mi), p_subgraph=subgraph_null.p(mi))
    if clean_null is not None:
        if not isinstance(clean_null, NullDistribution):
            raise TypeError("clean_null must be a NullDistribution (see clean_model_null)")
        result.update(z_clean=clean_null.z(mi), p_clean=clean_null.p(mi))
    return Verification(**result)


def leave_one_out_p(counts: Sequence[float], kind: str = "clean") -> list[float]:
    """p-value of each count against a null made of the others (false-positive control)."""
    counts = list(counts)
    if len(counts) < 3:
        raise ValueError("leave-one-out needs at least 3 counts")
    return [
        NullDistribution(tuple(counts[:i] + counts[i + 1 :]), kind).p(c)
        for i, c in enumerate(counts)
    ]


def recommended_watermark_size(
    num_features: int, num_subgraphs: int, *, confidence: float = 0.999999
) -> int:
    """The official watermark-size rule (``find_min_n_uncertain``, printed by ``main.py``).

    With the analytic null (μ, σ): target t = ceil(μ + z_c σ), natural lower bound
    LB = max(μ − z_c σ, 0), and M = ceil((t − LB) / ((F − t)/F)) watermarked features
    (official default confidence 0.999999 for both bounds).
    """
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must lie in (0.5, 1), got {confidence}")
    mu, sigma = analytic_null(num_features, num_subgraphs)
    z = float(stats.norm.ppf(confidence))
    t = math.ceil(min(mu + z * sigma, num_features))
    lb = max(mu - z * sigma, 0.0)
    needed = max(0.0, min(t - lb, num_features))
    if t >= num_features:
        raise ValueError(
            f"{num_subgraphs} subgraphs cannot reach confidence {confidence} "
            f"with {num_features} features"
        )
    return math.ceil(needed / ((num_features - t) / num_features))
