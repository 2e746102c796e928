"""Data: a mechanistic repertoire simulator, synthetic deep mutational scans, readers.

**Simulator (reconstructed; the paper trains on OAS).** Heavy-chain lineages evolve
in a germinal-centre model:

1. naive sequence = a human IGHV germline from ``anarci`` (up to IMGT 106) + an N/D
   addition of random length with a D-like composition + an IGHJ germline
   (IMGT 115–128); CDR3 = IMGT 105–117 (so 5 + N/D residues);
2. somatic hypermutation: each division adds Poisson(μ) amino-acid substitutions at
   sites drawn with region-specific rates (CDR1/2 and CDR3 high, FR low) times an
   S5F-like hotspot factor for residues encoded by WRC/AGY-rich codons (S, Y, N, T,
   G); replacements are drawn from a BLOSUM62-weighted kernel
   ``P(b | a) ∝ exp(β_B · BLOSUM62[a, b])``;
3. selection: of the 2K daughters of K cells, K survive by Gumbel-top-K on
   ``β · F(s)`` with a hidden paratope fitness
   ``F(s) = Σ_{p∈paratope} h_p(s_p) + Σ_{p<q} J_pq(s_p, s_q)``, whose optima at most
   paratope sites are deliberately *non-germline* residues.

The result is a germline-dominated repertoire whose NGL residues are enriched for
fitness-improving substitutions: the mechanism that makes plain masked LMs
anti-correlate with binding. GL/NGL labels are exact (a residue is NGL when it
differs from the naive ancestor). Synthetic DMS: every single mutant (plus random
doubles) of matured lineage tips held out of training, labelled by ``F`` plus noise;
and the paper's strongest kind of landscape, a germline-reversion scan
(:meth:`Simulation.reversion_scan`, after CR9114: the wild type's somatic mutations
reverted to germline singly and in combination).

**Readers.** AIRR TSV (``sequence_alignment_aa`` + ``germline_alignment_aa``, or the
nucleotide ``sequence_alignment`` + ``germline_alignment``, translated), OAS
unit CSV (a JSON metadata line, then AIRR columns; unpaired or paired
``*_heavy``/``*_light``), FASTA, and DMS CSV.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from icml26.prism.germline import (
    REGION_ID,
    GermlineSet,
    imgt_region,
    ngl_labels,
    regions_from_airr,
    translate_alignment,
)
from icml26.prism.vocab import AA_ORDER, residue_ids

_AA_INDEX = {a: i for i, a in enumerate(AA_ORDER)}
#: a D-gene/N-addition-like residue composition for untemplated CDR3 residues
_ND_COMPOSITION = {
    "G": 10,
    "Y": 10,
    "S": 8,
    "D": 7,
    "A": 5,
    "R": 5,
    "V": 4,
    "T": 4,
    "W": 4,
    "L": 4,
    "P": 3,
    "F": 3,
    "E": 3,
    "N": 3,
    "I": 3,
    "Q": 2,
    "K": 2,
    "H": 2,
    "M": 1,
    "C": 1,
}
#: residues whose codons are rich in the WRC/AGY hotspots of activation-induced deaminase
_HOTSPOT = "SYNTG"
#: site keys: IMGT position - 1 for templated residues (0..127), 128 + k for the k-th N/D residue
_ND_KEY = 128
_MAX_ND = 24


@cache
def blosum62() -> np.ndarray:
    """BLOSUM62 as a (20, 20) array in :data:`AA_ORDER` (from Biopython's bundled matrices)."""
    from Bio.Align import substitution_matrices

    m = substitution_matrices.load("BLOSUM62")
    return np.array([[m[a][b] for b in AA_ORDER] for a in AA_ORDER], dtype=float)


def substitution_kernel(beta: float = 0.5) -> np.ndarray:
    """Row-stochastic (20, 20) replacement kernel ``∝ exp(β·BLOSUM62)`` with a zero diagonal."""
    k = np.exp(beta * blosum62())
    np.fill_diagonal(k, 0.0)
    return k / k.sum(1, keepdims=True)


@dataclass(frozen=True)
class SimConfig:
    """Knobs of the repertoire simulator (defaults give a ≈ 5–8 % NGL repertoire)."""

    n_germlines: int = 10
    generations: int = 16
    cells: int = 8  # K cells kept per lineage per generation
    mutations_per_division: float = 0.7  # μ
    rate_fr: float = 0.3
    rate_cdr12: float = 3.0
    rate_cdr3: float = 2.0
    hotspot_factor: float = 2.0
    blosum_beta: float = 0.5
    selection: float = 3.0  # β of the survival weights exp(β F)
    nd_length: tuple[int, int] = (4, 10)  # N/D residues; CDR3 length = 5 + this
    paratope_cdr1: tuple[int, ...] = (29, 30, 35, 36, 37)  # IMGT positions
    paratope_cdr2: tuple[int, ...] = (56, 57, 58, 59, 64)
    paratope_cdr3: tuple[int, ...] = (0, 1, 2, 3)  # N/D offsets
    ngl_optimum_fraction: float = 0.8  # paratope V sites whose optimum is non-germline
    field_sd: float = 0.5
    optimum_gain: float = 1.5
    n_couplings: int = 6
    coupling_sd: float = 0.5

    def __post_init__(self) -> None:
        if self.n_germlines < 1 or self.generations < 1 or self.cells < 1:
            raise ValueError("n_germlines, generations and cells must be positive")
        lo, hi = self.nd_length
        if not 1 <= lo <= hi <= _MAX_ND:
            raise ValueError(
                f"nd_length must satisfy 1 <= lo <= hi <= {_MAX_ND}, got {self.nd_length}"
            )
        if max(self.paratope_cdr3, default=0) >= lo:
            raise ValueError("paratope_cdr3 offsets must be shorter than the shortest N/D addition")
        if self.mutations_per_division < 0 or self.selection < 0:
            raise ValueError("mutations_per_division and selection must be non-negative")


@dataclass(frozen=True)
class Fitness:
    """The hidden paratope fitness ``F(s) = Σ h_p(s_p) + Σ J_pq(s_p, s_q)`` over site keys."""

    sites: np.ndarray  # (P,) site keys
    fields: np.ndarray  # (P, 20)
    pairs: np.ndarray  # (C, 2) indices into sites
    couplings: np.ndarray  # (C, 20, 20)
    optimum_is_germline: np.ndarray  # (P,) bool (for V sites; CDR3 sites False)

    def __call__(self, residues: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """Fitness of residue-index arrays ``residues (..., L)`` whose sites are ``keys (L,)``."""
        residues = np.asarray(residues)
        col = _site_columns(keys, self.sites)
        present = col >= 0
        aa = np.take(residues, np.where(present, col, 0), axis=-1)  # (..., P)
        f = np.where(present, self.fields[np.arange(len(self.sites)), aa], 0.0).sum(-1)
        for c, (p, q) in enumerate(self.pairs):
            if present[p] and present[q]:
                f = f + self.couplings[c][aa[..., p], aa[..., q]]
        return f


def _site_columns(keys: np.ndarray, sites: np.ndarray) -> np.ndarray:
    """Column of each site in a sequence with site ``keys`` (-1 where absent)."""
    keys = np.asarray(keys)
    out = np.full(len(sites), -1, dtype=np.int64)
    for i, s in enumerate(sites):
        hit = np.flatnonzero(keys == s)
        if hit.size:
            out[i] = hit[0]
    return out


@dataclass
class Repertoire:
    """Simulated (or loaded) heavy chains with exact labels.

    ``sequences[i]`` is uppercase; ``ngl[i]`` marks its non-germline residues;
    ``regions[i]`` holds IMGT region ids; ``germline[i]`` is the naive ancestor;
    ``keys[i]`` the site keys used by the fitness.
    """

    sequences: list[str]
    ngl: list[np.ndarray]
    regions: list[np.ndarray]
    germline: list[str] = field(default_factory=list)
    keys: list[np.ndarray] = field(default_factory=list)
    v_gene: np.ndarray | None = None
    j_gene: np.ndarray | None = None
    lineage: np.ndarray | None = None
    fitness: np.ndarray | None = None
    v_names: tuple[str, ...] = ()
    j_names: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.sequences)

    def __post_init__(self) -> None:
        n = len(self.sequences)
        if len(self.ngl) != n or len(self.regions) != n:
            raise ValueError("sequences, ngl and regions must have the same length")
        for i, (s, g, r) in enumerate(zip(self.sequences, self.ngl, self.regions, strict=True)):
            if len(g) != len(s) or len(r) != len(s):
                raise ValueError(f"sequence {i}: labels or regions do not match its length")

    def subset(self, index: Sequence[int] | np.ndarray) -> Repertoire:
        idx = np.asarray(index, dtype=np.int64)

        def pick(xs):
            return [xs[i] for i in idx] if xs else []

        def arr(a):
            return None if a is None else np.asarray(a)[idx]

        return Repertoire(
            [self.sequences[i] for i in idx],
            pick(self.ngl),
            pick(self.regions),
            pick(self.germline),
            pick(self.keys),
            arr(self.v_gene),
            arr(self.j_gene),
            arr(self.lineage),
            arr(self.fitness),
            self.v_names,
            self.j_names,
        )

    def cased(self) -> list[str]:
        """Sequences with NGL residues in lowercase."""
        return [
            "".join(c.lower() if n else c for c, n in zip(s, g, strict=True))
            for s, g in zip(self.sequences, self.ngl, strict=True)
        ]

    @property
    def ngl_fraction(self) -> float:
        return float(np.concatenate(self.ngl).mean())


@dataclass(frozen=True)
class Simulation:
    """A simulated world: the germline pool, the hidden fitness and the kernel."""

    config: SimConfig
    v_genes: tuple  # of germline.Gene
    j_genes: tuple
    fitness: Fitness
    kernel: np.ndarray

    @classmethod
    def create(cls, config: SimConfig, rng: np.random.Generator) -> Simulation:
        """Draw the germline pool and the hidden fitness."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
        gs = GermlineSet("human", "H")
        vs, js = gs.functional_v(), gs.functional_j()
        if config.n_germlines > len(vs):
            raise ValueError(
                f"only {len(vs)} functional human IGHV genes, asked for {config.n_germlines}"
            )
        v_pick = tuple(
            vs[i] for i in sorted(rng.choice(len(vs), config.n_germlines, replace=False))
        )
        v_sites = [p - 1 for p in (*config.paratope_cdr1, *config.paratope_cdr2)]
        for g in v_pick:
            for s in v_sites:
                if g.gapped[s] in "-.":
                    raise ValueError(f"paratope IMGT position {s + 1} is a gap in {g.name}")
        sites = np.array([*v_sites, *(_ND_KEY + k for k in config.paratope_cdr3)])
        n_p = len(sites)
        fields = rng.normal(0.0, config.field_sd, size=(n_p, 20))
        opt_gl = np.zeros(n_p, dtype=bool)
        for i, s in enumerate(sites):
            if s < _ND_KEY:
                germ = {_AA_INDEX[g.gapped[s]] for g in v_pick}
                if rng.random() < config.ngl_optimum_fraction:
                    choices = [a for a in range(20) if a not in germ and AA_ORDER[a] != "C"]
                    best = int(rng.choice(choices))
                else:
                    best = int(rng.choice(sorted(germ)))
                    opt_gl[i] = True
            else:
                best = int(rng.choice([a for a in range(20) if AA_ORDER[a] != "C"]))
            fields[i, best] = fields[i].max() + config.optimum_gain
        pairs = np.array(
            [rng.choice(n_p, 2, replace=False) for _ in range(config.n_couplings)], dtype=np.int64
        ).reshape(-1, 2)
        couplings = rng.normal(0.0, config.coupling_sd, size=(len(pairs), 20, 20))
        fitness = Fitness(sites, fields, pairs, couplings, opt_gl)
        return cls(config, v_pick, tuple(js), fitness, substitution_kernel(config.blosum_beta))

    # -- lineages -----------------------------------------------------------------
    def naive(self, rng: np.random.Generator, n: int) -> list[dict]:
        """``n`` naive rearrangements: residues, site keys, regions, V/J indices."""
        comp = np.array([_ND_COMPOSITION[a] for a in AA_ORDER], dtype=float)
        comp /= comp.sum()
        lo, hi = self.config.nd_length
        out = []
        for _ in range(n):
            vi, ji = int(rng.integers(len(self.v_genes))), int(rng.integers(len(self.j_genes)))
            v, j = self.v_genes[vi], self.j_genes[ji]
            v_cols = [c for c in range(106) if v.gapped[c] not in "-."]
            j_cols = [c for c in range(114, 128) if j.gapped[c] not in "-."]
            nd = rng.choice(20, size=int(rng.integers(lo, hi + 1)), p=comp)
            res = [_AA_INDEX[v.gapped[c]] for c in v_cols] + nd.tolist()
            res += [_AA_INDEX[j.gapped[c]] for c in j_cols]
            keys = v_cols + [_ND_KEY + k for k in range(len(nd))] + j_cols
            regions = [imgt_region(c + 1) for c in v_cols] + [REGION_ID["CDR3"]] * len(nd)
            regions += [imgt_region(c + 1) for c in j_cols]
            out.append(
                {
                    "res": np.array(res),
                    "keys": np.array(keys),
                    "regions": np.array(regions),
                    "v": vi,
                    "j": ji,
                }
            )
        return out

    def evolve(
        self, rng: np.random.Generator, n_lineages: int, *, snapshots: Sequence[int] | None = None
    ) -> list[dict]:
        """Evolve ``n_lineages`` lineages; returns, per lineage, its naive record and
        the K cells at each snapshot generation (``cells[g]`` is (K, L))."""
        cfg = self.config
        snaps = sorted(set(snapshots or range(cfg.generations + 1)))
        naive = self.naive(rng, n_lineages)
        width = max(len(r["res"]) for r in naive)
        n, k = n_lineages, cfg.cells
        pad = np.zeros((n, width), dtype=bool)
        state = np.zeros((n, k, width), dtype=np.int64)
        base = np.zeros((n, width))
        for i, r in enumerate(naive):
            m = len(r["res"])
            pad[i, m:] = True
            state[i, :, :m] = r["res"]
            reg = r["regions"]
            rate = np.where(np.isin(reg, (1, 3)), cfg.rate_cdr12, cfg.rate_fr)
            rate = np.where(reg == REGION_ID["CDR3"], cfg.rate_cdr3, rate)
            base[i, :m] = rate
        hot = np.array([cfg.hotspot_factor if a in _HOTSPOT else 1.0 for a in AA_ORDER])
        fit_cols = np.stack(
            [
                _site_columns(
                    np.pad(r["keys"], (0, width - len(r["keys"])), constant_values=-1),
                    self.fitness.sites,
                )
                for r in naive
            ]
        )
        kernel_cum = np.cumsum(self.kernel, axis=1)
        history = {0: state.copy()} if 0 in snaps else {}
        max_mut = max(1, int(np.ceil(cfg.mutations_per_division * 4)) + 1)
        for g in range(1, cfg.generations + 1):
            kids = np.repeat(state, 2, axis=1)  # (n, 2K, W)
            n_mut = np.minimum(
                rng.poisson(cfg.mutations_per_division, size=kids.shape[:2]), max_mut
            )
            for step in range(max_mut):
                active = n_mut > step
                if not active.any():
                    break
                rates = base[:, None, :] * hot[kids]
                cum = np.cumsum(rates, axis=-1)
                u = rng.random(kids.shape[:2])[..., None] * cum[..., -1:]
                pos = np.minimum((cum < u).sum(-1), width - 1)  # (n, 2K)
                cur = np.take_along_axis(kids, pos[..., None], -1)[..., 0]
                v = rng.random(cur.shape)[..., None]
                new = np.minimum((kernel_cum[cur] < v).sum(-1), 19)
                new = np.where(active, new, cur)
                np.put_along_axis(kids, pos[..., None], new[..., None], -1)
            f = self._fitness_batch(kids, fit_cols)
            gumbel = -np.log(-np.log(rng.uniform(1e-12, 1 - 1e-12, size=f.shape)))
            keep = np.argsort(-(cfg.selection * f + gumbel), axis=1)[:, :k]
            state = np.take_along_axis(kids, keep[..., None], 1)
            if g in snaps:
                history[g] = state.copy()
        out = []
        for i, r in enumerate(naive):
            m = len(r["res"])
            out.append({**r, "cells": {g: h[i, :, :m] for g, h in history.items()}})
        return out

    def _fitness_batch(self, residues: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Fitness of (n, c, W) residues with per-lineage site columns (n, P)."""
        fit = self.fitness
        present = cols >= 0
        aa = np.take_along_axis(residues, np.where(present, cols, 0)[:, None, :], -1)  # (n,c,P)
        p_idx = np.arange(len(fit.sites))
        f = np.where(present[:, None, :], fit.fields[p_idx, aa], 0.0).sum(-1)
        for c, (p, q) in enumerate(fit.pairs):
            ok = (present[:, p] & present[:, q])[:, None]
            f = f + np.where(ok, fit.couplings[c][aa[..., p], aa[..., q]], 0.0)
        return f

    def repertoire(self, rng: np.random.Generator, n_lineages: int, per_lineage: int) -> Repertoire:
        """Sample ``per_lineage`` distinct-time cells from each of ``n_lineages`` lineages
        (generations uniform over 0..G), as a labelled :class:`Repertoire`."""
        lineages = self.evolve(rng, n_lineages)
        seqs, ngl, regs, germ, keys, vg, jg, lin, fit = [], [], [], [], [], [], [], [], []
        gens = np.arange(self.config.generations + 1)
        for li, r in enumerate(lineages):
            for g in rng.choice(gens, per_lineage, replace=True):
                cell = r["cells"][int(g)][rng.integers(self.config.cells)]
                seqs.append("".join(AA_ORDER[a] for a in cell))
                ngl.append(cell != r["res"])
                regs.append(r["regions"])
                germ.append("".join(AA_ORDER[a] for a in r["res"]))
                keys.append(r["keys"])
                vg.append(r["v"])
                jg.append(r["j"])
                lin.append(li)
                fit.append(float(self.fitness(cell, r["keys"])))
        return Repertoire(
            seqs,
            ngl,
            regs,
            germ,
            keys,
            np.array(vg),
            np.array(jg),
            np.array(lin),
            np.array(fit),
            tuple(g.name for g in self.v_genes),
            tuple(g.name for g in self.j_genes),
        )

    def mutational_scans(
        self, rng: np.random.Generator, n_scans: int, *, n_doubles: int = 0, noise_sd: float = 0.1
    ) -> list[MutationalScan]:
        """Deep mutational scans of ``n_scans`` matured lineage tips (held out of any
        repertoire): every single mutant plus ``n_doubles`` random double mutants,
        labelled ``F(variant) + N(0, noise_sd²)``."""
        lineages = self.evolve(rng, n_scans, snapshots=[self.config.generations])
        scans = []
        for r in lineages:
            cells = r["cells"][self.config.generations]
            f = np.array([self.fitness(c, r["keys"]) for c in cells])
            wt = cells[int(np.argmax(f))]
            scans.append(_scan(self, r, wt, rng, n_doubles, noise_sd))
        return scans

    def reversion_scan(
        self,
        scan: MutationalScan,
        rng: np.random.Generator,
        *,
        max_variants: int = 500,
        noise_sd: float = 0.1,
    ) -> MutationalScan:
        """A germline-reversion landscape of a scan's wild type (CR9114-style).

        The wild type's somatic mutations (residues that differ from its naive
        ancestor) are reverted to the germline residue, singly and in combination:
        every subset when ``2^k − 1 ≤ max_variants`` (k mutations), else all single
        reversions, the full reversion (the germline itself) and distinct random subsets
        of uniformly drawn sizes up to ``max_variants`` variants in all. Labels are the
        simulator's own fitness plus ``N(0, noise_sd²)``.
        """
        if scan.site_keys is None or len(scan.germline) != len(scan.wild_type):
            raise ValueError("a reversion scan needs a simulated scan (site keys and germline)")
        if max_variants < 1:
            raise ValueError(f"max_variants must be positive, got {max_variants}")
        somatic = np.flatnonzero(scan.ngl)
        k = len(somatic)
        if k == 0:
            raise ValueError("the wild type carries no somatic mutation to revert")
        if 2**k - 1 <= max_variants:
            subsets = [
                tuple(int(somatic[i]) for i in range(k) if (m >> i) & 1) for m in range(1, 2**k)
            ]
        else:
            chosen = {(int(p),) for p in somatic} | {tuple(int(p) for p in somatic)}
            budget = max(max_variants, len(chosen))
            while len(chosen) < budget:
                size = int(rng.integers(2, k))
                chosen.add(tuple(sorted(int(p) for p in rng.choice(somatic, size, replace=False))))
            subsets = sorted(chosen, key=lambda t: (len(t), t))
        variants = tuple(tuple((p, scan.germline[p]) for p in sub) for sub in subsets)
        wt = np.array([_AA_INDEX[a] for a in scan.wild_type])
        res = np.repeat(wt[None], len(variants), 0)
        for i, muts in enumerate(variants):
            for p, a in muts:
                res[i, p] = _AA_INDEX[a]
        true = self.fitness(res, scan.site_keys)
        return dataclasses.replace(
            scan,
            variants=variants,
            fitness=true + rng.normal(0.0, noise_sd, size=len(true)),
            true_fitness=true,
        )


@dataclass(frozen=True)
class MutationalScan:
    """A DMS of one antibody: ``variants[i]`` lists its (position, new residue) mutations."""

    wild_type: str
    germline: str
    regions: np.ndarray
    ngl: np.ndarray  # of the wild type
    keys: np.ndarray
    variants: tuple[tuple[tuple[int, str], ...], ...]
    fitness: np.ndarray  # noisy labels
    true_fitness: np.ndarray  # noiseless F(variant)
    wild_type_fitness: float
    v_gene: int = -1  # index into the simulation's V genes (-1: unknown)
    j_gene: int = -1
    site_keys: np.ndarray | None = None  # the site key of every position (simulated scans)

    def sequences(self) -> list[str]:
        out = []
        for muts in self.variants:
            s = list(self.wild_type)
            for p, a in muts:
                s[p] = a
            out.append("".join(s))
        return out

    @property
    def paratope(self) -> np.ndarray:
        """Positions of the wild type that carry a paratope site (empty when unknown)."""
        return np.flatnonzero(self.keys >= 0) if self.keys.size else np.array([], dtype=int)


def _scan(sim: Simulation, r: dict, wt: np.ndarray, rng, n_doubles: int, noise_sd: float):
    length = len(wt)
    singles = [((p, a),) for p in range(length) for a in range(20) if a != wt[p]]
    doubles = []
    for _ in range(n_doubles):
        p, q = sorted(rng.choice(length, 2, replace=False))
        a = int(rng.choice([x for x in range(20) if x != wt[p]]))
        b = int(rng.choice([x for x in range(20) if x != wt[q]]))
        doubles.append(((int(p), a), (int(q), b)))
    variants = singles + doubles
    res = np.repeat(wt[None], len(variants), 0)
    for i, muts in enumerate(variants):
        for p, a in muts:
            res[i, p] = a
    true = sim.fitness(res, r["keys"])
    site_cols = _site_columns(r["keys"], sim.fitness.sites)
    keys = np.full(length, -1, dtype=np.int64)
    keys[site_cols[site_cols >= 0]] = sim.fitness.sites[site_cols >= 0]
    return MutationalScan(
        wild_type="".join(AA_ORDER[a] for a in wt),
        germline="".join(AA_ORDER[a] for a in r["res"]),
        regions=r["regions"],
        ngl=wt != r["res"],
        keys=keys,
        variants=tuple(tuple((int(p), AA_ORDER[a]) for p, a in m) for m in variants),
        fitness=true + rng.normal(0.0, noise_sd, size=len(true)),
        true_fitness=true,
        wild_type_fitness=float(sim.fitness(wt, r["keys"])),
        v_gene=int(r["v"]),
        j_gene=int(r["j"]),
        site_keys=np.asarray(r["keys"]),
    )


def simulate_repertoire(
    rng: np.random.Generator,
    n_lineages: int = 200,
    per_lineage: int = 10,
    config: SimConfig | None = None,
) -> tuple[Simulation, Repertoire]:
    """Convenience: a new :class:`Simulation` and a repertoire drawn from it."""
    sim = Simulation.create(config or SimConfig(), rng)
    return sim, sim.repertoire(rng, n_lineages, per_lineage)


def germline_identity(sequence: str, germline: str, positions: np.ndarray | None = None) -> float:
    """Fraction of residues equal to the germline (optionally over ``positions`` only)."""
    if len(sequence) != len(germline):
        raise ValueError("sequence and germline differ in length")
    s = np.frombuffer(sequence.upper().encode(), dtype=np.uint8)
    g = np.frombuffer(germline.upper().encode(), dtype=np.uint8)
    eq = s == g
    return float(eq[positions].mean() if positions is not None else eq.mean())


# -- readers --------------------------------------------------------------------------


def _rows(path: Path, delimiter: str) -> Iterator[dict]:
    with open(path, newline="") as fh:
        first = fh.readline()
        # OAS unit files start with one line of JSON metadata
        if not first.lstrip().startswith(('"{', "{")):
            fh.seek(0)
        yield from csv.DictReader(fh, delimiter=delimiter)


def _frame(row: dict, suffix: str) -> int:
    """Reading frame of a nucleotide alignment: ``(v_germline_start − 1) mod 3`` (0 when
    absent)."""
    try:
        return (int(row.get(f"v_germline_start{suffix}") or 1) - 1) % 3
    except ValueError:
        return 0


def _airr_record(row: dict, suffix: str = "") -> dict:
    s_key, g_key = f"sequence_alignment_aa{suffix}", f"germline_alignment_aa{suffix}"
    nt_s, nt_g = f"sequence_alignment{suffix}", f"germline_alignment{suffix}"
    translated = False
    if row.get(s_key) and row.get(g_key):
        s_aa, g_aa = row[s_key], row[g_key]
    elif row.get(nt_s) and row.get(nt_g):
        # IgBLAST-style files with nucleotide alignments only: translate them
        s_aa, g_aa = translate_alignment(row[nt_s], row[nt_g], frame=_frame(row, suffix))
        translated = True
    else:
        raise ValueError(
            f"missing AIRR columns {s_key!r} / {g_key!r} (or the nucleotide {nt_s!r} / "
            f"{nt_g!r}); have {sorted(row)[:12]}..."
        )
    seq, ngl = ngl_labels(s_aa, g_aa)
    rec = {
        "sequence": seq,
        "ngl": ngl,
        "v_call": row.get(f"v_call{suffix}", ""),
        "j_call": row.get(f"j_call{suffix}", ""),
    }
    region_fields = {
        k[: -len(suffix)] if suffix else k: v
        for k, v in row.items()
        if k.endswith(suffix) and k.startswith(("fwr", "cdr"))
    }
    for name in ("fwr1", "cdr1", "fwr2", "cdr2", "fwr3", "cdr3", "fwr4"):
        nt = region_fields.get(name) or ""
        if not region_fields.get(f"{name}_aa") and nt and len(nt) % 3 == 0:
            try:  # nucleotide region fields only: translate them too
                region_fields[f"{name}_aa"] = translate_alignment(nt, nt)[0].replace("-", "")
            except ValueError:
                region_fields[f"{name}_aa"] = ""
    rec["translated"] = translated
    try:
        rseq, regions = regions_from_airr(region_fields)
        rec["regions"] = regions if rseq == seq else None
    except ValueError:
        rec["regions"] = None
    return rec


def read_airr(path: str | Path) -> list[dict]:
    """Records of an AIRR rearrangement TSV: ``sequence`` (uppercase residues), ``ngl``
    labels, ``v_call``, ``j_call`` and ``regions`` (when the FWR/CDR fields tile the
    sequence, else None)."""
    return [_airr_record(row) for row in _rows(Path(path), "\t")]


def read_oas_csv(path: str | Path) -> list[dict]:
    """Records of an OAS data-unit CSV (unpaired, or paired with ``_heavy``/``_light``
    suffixes: then each record has ``heavy`` and ``light`` sub-records)."""
    out = []
    for row in _rows(Path(path), ","):
        if "sequence_alignment_aa_heavy" in row:
            out.append({"heavy": _airr_record(row, "_heavy"), "light": _airr_record(row, "_light")})
        else:
            out.append(_airr_record(row))
    return out


def read_fasta(path: str | Path) -> list[tuple[str, str]]:
    """``(name, sequence)`` pairs of a FASTA file (sequences validated, case kept)."""
    out, name, chunks = [], None, []
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith(">"):
            if name is not None:
                out.append((name, "".join(chunks)))
            name, chunks = line[1:].strip(), []
        elif name is None:
            raise ValueError(f"{path}: sequence data before the first '>' header")
        else:
            chunks.append(line)
    if name is not None:
        out.append((name, "".join(chunks)))
    for n, s in out:
        residue_ids(s, preserve_case=True, chain=f"FASTA record {n!r}")
    return out


def read_dms_csv(
    path: str | Path, *, sequence_column: str = "sequence", fitness_column: str = "fitness"
) -> tuple[list[str], np.ndarray]:
    """Variant sequences and fitness values of a DMS CSV (rows with missing fitness dropped)."""
    seqs, fit = [], []
    for row in _rows(Path(path), ","):
        if sequence_column not in row or fitness_column not in row:
            raise ValueError(f"need columns {sequence_column!r} and {fitness_column!r}")
        try:
            f = float(row[fitness_column])
        except (TypeError, ValueError):
            continue
        if not np.isfinite(f):
            continue
        residue_ids(row[sequence_column], chain=f"row {len(seqs)}")
        seqs.append(row[sequence_column].upper())
        fit.append(f)
    return seqs, np.asarray(fit)


def write_airr(path: str | Path, repertoire: Repertoire) -> Path:
    """Write a repertoire as AIRR TSV (``sequence_alignment_aa``, ``germline_alignment_aa``)."""
    path = Path(path)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t")
        w.writerow(
            ["sequence_id", "sequence_alignment_aa", "germline_alignment_aa", "v_call", "j_call"]
        )
        for i, (s, g) in enumerate(zip(repertoire.sequences, repertoire.germline, strict=True)):
            v = repertoire.v_names[repertoire.v_gene[i]] if repertoire.v_gene is not None else ""
            j = repertoire.j_names[repertoire.j_gene[i]] if repertoire.j_gene is not None else ""
            w.writerow([f"seq{i}", s, g, v, j])
    return path
