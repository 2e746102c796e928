"""A germline-aware site profile: the repertoire's residue statistics, counted.

Not a method of the paper: a *reference* for what the two zero-shot scores can reach on
a simulated repertoire when a model has learned its per-site statistics exactly. For
each site (V-gene sites per V gene, J sites per J gene, N/D sites by offset) it counts
residues and NGL residues over the training repertoire, then scores variants with

- ``masked_marginal``: ``log p(mut | site) − log p(wt | site)`` — what a perfectly
  trained plain masked LM (PRISM-less) reads;
- ``wt_centred_ngl``: ``log p(mut, NGL | site) − log p(NGL | site, wt)`` — PRISM's
  binding signal (:func:`~icml26.prism.score.score_variants`: the masked NGL log-prob
  of the mutant minus the NGL log-prob of the visible wild-type residue).

Both sum over the mutated positions. Needs the site keys of the simulator (or any
numbering that puts homologous residues on the same key).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from icml26.prism.data import MutationalScan, Repertoire
from icml26.prism.vocab import AA_ORDER

_IDX = {a: i for i, a in enumerate(AA_ORDER)}
_V_SITES, _J_SITES = range(0, 106), range(106, 128)  # IMGT position − 1


def _site(key: int, v_gene: int, j_gene: int) -> tuple[str, int, int]:
    if key in _V_SITES:
        return ("V", v_gene, key)
    if key in _J_SITES:
        return ("J", j_gene, key)
    return ("N", -1, key)


@dataclass(frozen=True)
class SiteProfile:
    """Residue counts ``total[site]`` and NGL counts ``ngl[site]`` (20 each)."""

    total: dict
    ngl: dict
    pseudocount: float = 0.1

    @classmethod
    def fit(cls, repertoire: Repertoire, *, pseudocount: float = 0.1) -> SiteProfile:
        if not repertoire.keys or repertoire.v_gene is None or repertoire.j_gene is None:
            raise ValueError(
                "the site profile needs site keys and V/J genes (a simulated repertoire)"
            )
        if pseudocount <= 0:
            raise ValueError(f"pseudocount must be positive, got {pseudocount}")
        total: dict = defaultdict(lambda: np.zeros(20))
        ngl: dict = defaultdict(lambda: np.zeros(20))
        for seq, lab, keys, v, j in zip(
            repertoire.sequences,
            repertoire.ngl,
            repertoire.keys,
            repertoire.v_gene,
            repertoire.j_gene,
            strict=True,
        ):
            res = np.array([_IDX[a] for a in seq])
            for k, a, is_ngl in zip(keys, res, lab, strict=True):
                site = _site(int(k), int(v), int(j))
                total[site][a] += 1
                if is_ngl:
                    ngl[site][a] += 1
        return cls(dict(total), dict(ngl), pseudocount)

    def scores(self, scan: MutationalScan, method: str = "wt_centred_ngl") -> np.ndarray:
        """Zero-shot scores of the scan's variants (higher = fitter)."""
        if method not in ("wt_centred_ngl", "masked_marginal"):
            raise ValueError(f"unknown method {method!r}")
        if scan.site_keys is None or scan.v_gene < 0 or scan.j_gene < 0:
            raise ValueError("the scan carries no site keys or V/J genes")
        eps = self.pseudocount
        zero = np.zeros(20)
        wt = [_IDX[a] for a in scan.wild_type]
        out = np.zeros(len(scan.variants))
        for i, muts in enumerate(scan.variants):
            for p, a in muts:
                site = _site(int(scan.site_keys[p]), scan.v_gene, scan.j_gene)
                t = self.total.get(site, zero) + eps
                n = self.ngl.get(site, zero) + eps
                m, w = _IDX[a], wt[p]
                if method == "masked_marginal":
                    out[i] += np.log(t[m]) - np.log(t[w])
                else:
                    out[i] += np.log(n[m] / t.sum()) - np.log(n[w] / t[w])
        return out
