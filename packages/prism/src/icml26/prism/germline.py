"""Germline residues: GL/NGL labels, germline V/J genes, IMGT regions.

- :func:`ngl_labels` — the paper's labels: a residue is non-germline (NGL) where AIRR
  ``sequence_alignment_aa`` differs from ``germline_alignment_aa`` (OAS ships both,
  from IgBLAST).
- :class:`GermlineSet` — IMGT-gapped germline V and J genes read at run time from
  the PyPI package ``anarci`` (which ships them offline; they are not vendored here).
- :func:`assign_germline` — best V and J gene of a sequence by local alignment
  (BLOSUM62) to those germlines, with GL/NGL labels and IMGT regions transferred from
  the gapped germline (FR1 1–26, CDR1 27–38, FR2 39–55, CDR2 56–65, FR3 66–104,
  CDR3 105–117, FR4 118–128). This avoids the HMMER binary that ANARCI's numbering
  needs.
- :func:`assign_with_riot` — optional assignment through ``riot-na`` (extra ``riot``),
  which writes full AIRR records offline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from icml26.prism.vocab import AA_ORDER, residue_ids

REGION_NAMES: tuple[str, ...] = ("FR1", "CDR1", "FR2", "CDR2", "FR3", "CDR3", "FR4")
#: region ids (0..6 as in the official region-balanced loss); 7 = special/padding token.
REGION_ID = {name: i for i, name in enumerate(REGION_NAMES)}
SPECIAL_REGION = 7
N_REGIONS = 8
CDR_REGION_IDS = (1, 3, 5)
FR_REGION_IDS = (0, 2, 4, 6)
#: last IMGT position of each region
_IMGT_BOUNDS = (26, 38, 55, 65, 104, 117, 128)
_GAPS = frozenset("-.")


def imgt_region(position: int) -> int:
    """Region id of an IMGT position (1..128; insertions take their position's region)."""
    if not 1 <= position <= 128:
        raise ValueError(f"IMGT positions run from 1 to 128, got {position}")
    return int(np.searchsorted(_IMGT_BOUNDS, position))


def is_cdr(region_ids: np.ndarray) -> np.ndarray:
    """Boolean mask of CDR residues for an array of region ids."""
    return np.isin(np.asarray(region_ids), CDR_REGION_IDS)


# -- labels from AIRR alignments ------------------------------------------------------


def ngl_labels(
    sequence_alignment_aa: str, germline_alignment_aa: str, *, unknown: str = "gl"
) -> tuple[str, np.ndarray]:
    """The sequence's residues and their NGL labels (1 = non-germline) from an AIRR alignment.

    The two strings are aligned column by column. Columns where the sequence has a gap
    (``-`` or ``.``) are deletions and yield no residue. A residue whose germline column
    holds an amino acid is NGL when the two differ. Where the germline column is a gap
    or ``X``/``N``/``*`` (an N-addition or untemplated junction residue), its origin is
    unknown: ``unknown="gl"`` (default) counts it germline, ``"ngl"`` non-germline.
    """
    if not isinstance(sequence_alignment_aa, str) or not isinstance(germline_alignment_aa, str):
        raise TypeError("both alignments must be str")
    if len(sequence_alignment_aa) != len(germline_alignment_aa):
        raise ValueError(
            "sequence_alignment_aa and germline_alignment_aa differ in length: "
            f"{len(sequence_alignment_aa)} vs {len(germline_alignment_aa)}"
        )
    if unknown not in ("gl", "ngl"):
        raise ValueError(f"unknown must be 'gl' or 'ngl', got {unknown!r}")
    residues, labels = [], []
    for col, (s, g) in enumerate(zip(sequence_alignment_aa, germline_alignment_aa, strict=True)):
        if s in _GAPS:
            continue
        up = s.upper()
        if up not in AA_ORDER:
            raise ValueError(f"sequence_alignment_aa has an invalid residue {s!r} at column {col}")
        gu = g.upper()
        if gu in AA_ORDER:
            labels.append(up != gu)
        else:
            labels.append(unknown == "ngl")
        residues.append(up)
    if not residues:
        raise ValueError("the alignment holds no residues")
    return "".join(residues), np.asarray(labels, dtype=bool)


_NT_GAPS = frozenset("-.")


def translate_alignment(
    sequence_alignment: str, germline_alignment: str, *, frame: int = 0
) -> tuple[str, str]:
    """Amino-acid alignments from AIRR nucleotide alignments (``sequence_alignment`` /
    ``germline_alignment``, as IgBLAST writes them), codon by codon.

    The two strings are read column by column in codons starting at ``frame`` (0–2;
    AIRR's ``v_germline_start − 1`` modulo 3 when the alignment does not start on a
    codon). A codon of three gap columns (``-`` or ``.``) becomes a gap; a germline codon
    with a gap or an ambiguous base becomes ``X`` (an untemplated residue, see
    :func:`ngl_labels`). A sequence codon that is not three bases (a frameshift) or
    holds an ambiguous base or a stop is an error. A trailing partial codon is dropped.
    """
    if not isinstance(sequence_alignment, str) or not isinstance(germline_alignment, str):
        raise TypeError("both alignments must be str")
    if len(sequence_alignment) != len(germline_alignment):
        raise ValueError(
            "sequence_alignment and germline_alignment differ in length: "
            f"{len(sequence_alignment)} vs {len(germline_alignment)}"
        )
    if frame not in (0, 1, 2):
        raise ValueError(f"frame must be 0, 1 or 2, got {frame!r}")
    from Bio.Data.CodonTable import standard_dna_table

    table = standard_dna_table.forward_table
    stops = set(standard_dna_table.stop_codons)

    def codon_aa(codon: str, *, germline: bool, k: int) -> str:
        c = codon.upper().replace("U", "T")
        if all(x in _NT_GAPS for x in c):
            return "-"
        if c in table:
            return table[c]
        if germline:
            return "X"
        why = "a stop codon" if c in stops else "not a whole, unambiguous codon"
        raise ValueError(f"sequence_alignment codon {k} ({codon!r}) is {why}; cannot translate")

    seq_aa, germ_aa = [], []
    for k, i in enumerate(range(frame, len(sequence_alignment) - 2, 3)):
        seq_aa.append(codon_aa(sequence_alignment[i : i + 3], germline=False, k=k))
        germ_aa.append(codon_aa(germline_alignment[i : i + 3], germline=True, k=k))
    return "".join(seq_aa), "".join(germ_aa)


def cased(sequence: str, labels: Iterable[bool]) -> str:
    """The sequence with NGL residues in lowercase (the paper's label format)."""
    labels = np.asarray(list(labels), dtype=bool)
    residue_ids(sequence, preserve_case=True)
    if labels.shape != (len(sequence),):
        raise ValueError(
            f"labels must have one entry per residue ({len(sequence)}), got {labels.shape}"
        )
    return "".join(c.lower() if ngl else c.upper() for c, ngl in zip(sequence, labels, strict=True))


# -- germline genes from anarci -------------------------------------------------------


@dataclass(frozen=True)
class Gene:
    """One germline allele: its name and IMGT-gapped amino-acid sequence (128 columns)."""

    name: str
    gapped: str

    @property
    def sequence(self) -> str:
        return "".join(c for c in self.gapped if c not in _GAPS)

    @property
    def imgt_positions(self) -> np.ndarray:
        """IMGT position (1-based) of each residue of :attr:`sequence`."""
        return np.array([i + 1 for i, c in enumerate(self.gapped) if c not in _GAPS])


class GermlineSet:
    """The IMGT-gapped V and J genes of one species and chain, read from ``anarci``.

    ``chain`` is ``"H"`` (heavy), ``"K"`` (kappa) or ``"L"`` (lambda).
    """

    def __init__(self, species: str = "human", chain: str = "H"):
        table = _anarci_germlines()
        if chain not in table["V"]:
            raise ValueError(f"unknown chain {chain!r}; anarci has {sorted(table['V'])}")
        if species not in table["V"][chain]:
            raise ValueError(
                f"unknown species {species!r} for chain {chain}; "
                f"anarci has {sorted(table['V'][chain])}"
            )
        self.species, self.chain = species, chain
        self.v: dict[str, Gene] = _genes(table["V"][chain][species])
        self.j: dict[str, Gene] = _genes(table["J"][chain].get(species, {}))

    def functional_v(self, *, first_allele_only: bool = True) -> list[Gene]:
        """V genes whose germline has the conserved Cys23/Trp41/Cys104 and no stop or X."""
        out, seen = [], set()
        for name in sorted(self.v):
            g = self.v[name]
            gene = name.split("*")[0]
            if first_allele_only and gene in seen:
                continue
            ok = (
                len(g.gapped) >= 106
                and g.gapped[22] == "C"
                and g.gapped[40] == "W"
                and g.gapped[103] == "C"
                and all(c in AA_ORDER or c in _GAPS for c in g.gapped)
            )
            if ok:
                out.append(g)
                seen.add(gene)
        return out

    def functional_j(self, *, first_allele_only: bool = True) -> list[Gene]:
        """J genes carrying the FR4 motif W/F-G-x-G at IMGT 118–121."""
        out, seen = [], set()
        for name in sorted(self.j):
            g = self.j[name]
            gene = name.split("*")[0]
            if first_allele_only and gene in seen:
                continue
            if g.gapped[117] in "WF" and g.gapped[118] == "G" and g.gapped[120] == "G":
                out.append(g)
                seen.add(gene)
        return out


@cache
def _anarci_germlines() -> Mapping:
    try:
        from anarci.germlines import all_germlines
    except ImportError as err:  # pragma: no cover - anarci is a dependency
        raise ImportError("germline genes need the package 'anarci' (pip install anarci)") from err
    return all_germlines


def _genes(entries: Mapping[str, str]) -> dict[str, Gene]:
    return {name: Gene(name, seq) for name, seq in entries.items()}


# -- assignment by alignment ----------------------------------------------------------


@dataclass(frozen=True)
class Assignment:
    """A germline assignment of one sequence.

    ``germline_aa`` holds, per residue of the sequence, the germline residue it is
    aligned to (``-`` where untemplated: N/D additions, insertions); ``ngl`` marks
    residues that differ from their templated germline residue; ``regions`` holds IMGT
    region ids (0..6) per residue.

    ``v_call`` is None when no V allele reaches the identity floor (then nothing is
    labelled NGL, every residue takes region FR1, and ``note`` says why); ``j_call`` is
    None when no J allele aligns to the residues after the V gene (a partial chain, or
    no call), and ``note`` says so.
    """

    sequence: str
    v_call: str | None
    j_call: str | None
    v_identity: float
    germline_aa: str
    ngl: np.ndarray
    regions: np.ndarray
    j_identity: float = float("nan")
    note: str = ""

    @property
    def called(self) -> bool:
        """Whether a V gene was assigned (the labels and regions mean something)."""
        return self.v_call is not None

    @property
    def cased(self) -> str:
        return cased(self.sequence, self.ngl)


@lru_cache(maxsize=4)
def _aligner():
    from Bio import Align
    from Bio.Align import substitution_matrices

    al = Align.PairwiseAligner()
    al.mode = "local"
    al.substitution_matrix = substitution_matrices.load("BLOSUM62")
    al.open_gap_score = -10
    al.extend_gap_score = -1
    return al


@dataclass(frozen=True)
class _Hit:
    gene: Gene
    score: float
    identity: float  # identical residues / aligned residue pairs
    matches: int  # identical residues
    pairs: list[tuple[int, int]]


def _align(sequence: str, gene: Gene) -> _Hit | None:
    """Best local alignment of ``sequence`` to ``gene`` (None when nothing aligns)."""
    if not sequence:
        return None
    alignments = _aligner().align(sequence, gene.sequence)
    try:
        aln = alignments[0]
    except IndexError:  # no alignment with a positive score
        return None
    pairs = []
    for (s0, s1), (g0, g1) in zip(*aln.aligned, strict=True):
        pairs.extend(zip(range(s0, s1), range(g0, g1), strict=True))
    if not pairs:
        return None
    g = gene.sequence
    matches = sum(sequence[si] == g[gi] for si, gi in pairs)
    return _Hit(gene, float(aln.score), matches / len(pairs), matches, pairs)


def _best(sequence: str, genes: Iterable[Gene], *, min_score: float) -> _Hit | None:
    """The hit with the most identical residues, i.e. the highest identity over a common
    length (so that a short, perfect fragment cannot beat a full-length alignment, and a
    higher substitution score cannot beat more identical residues); ties go to the higher
    alignment score, then to the allele name."""
    hits = [h for h in (_align(sequence, g) for g in genes) if h is not None]
    hits = [h for h in hits if h.score >= min_score]
    if not hits:
        return None
    return min(hits, key=lambda h: (-h.matches, -h.score, h.gene.name))


def assign_germline(
    sequence: str,
    *,
    chain: str = "H",
    species: str = "human",
    germlines: GermlineSet | None = None,
    min_identity: float = 0.6,
    min_v_length: int = 20,
    functional_only: bool = True,
) -> Assignment:
    """Assign V and J genes by local BLOSUM62 alignment to the anarci germlines.

    Each gene is chosen by **identity**: the allele with the most residues identical to
    the sequence in its local alignment (identity over a common length), the alignment
    score breaking ties; only functional alleles take part by default
    (:meth:`GermlineSet.functional_v` / :meth:`~GermlineSet.functional_j`, every allele).
    When the best V allele's identity (identical / aligned residues) is below
    ``min_identity``, or fewer than ``min_v_length`` residues align to it, no call is made
    (a clear result, not a guess): :attr:`Assignment.called` is False and
    :attr:`Assignment.note` says why. Partial chains are fine: a chain that ends before
    the J gene gets ``j_call=None`` and a note.

    Residues aligned to the V gene take its IMGT region; residues from the J gene's
    IMGT 118 onward are FR4; residues between are CDR3 (N/D additions count as
    untemplated, hence germline, as in :func:`ngl_labels` with ``unknown="gl"``).
    """
    if not isinstance(sequence, str):
        raise TypeError(f"sequence must be a str, got {type(sequence).__name__}")
    if not 0.0 <= min_identity <= 1.0:
        raise ValueError(f"min_identity must lie in [0, 1], got {min_identity}")
    if min_v_length < 1:
        raise ValueError(f"min_v_length must be positive, got {min_v_length}")
    seq = sequence.upper()
    residue_ids(seq, chain="sequence")
    gs = germlines or GermlineSet(species, chain)
    if functional_only:
        v_genes = gs.functional_v(first_allele_only=False)
        j_genes = gs.functional_j(first_allele_only=False)
    else:
        v_genes, j_genes = list(gs.v.values()), list(gs.j.values())
    if not v_genes:
        raise ValueError(f"no V genes for {gs.species} {gs.chain}")
    n = len(seq)
    v_hit = _best(seq, v_genes, min_score=0.0)
    short = v_hit is not None and len(v_hit.pairs) < min_v_length
    if v_hit is None or short or v_hit.identity < min_identity:
        ident = 0.0 if v_hit is None else v_hit.identity
        if v_hit is None:
            why = "no V gene aligns"
        elif short:
            why = (
                f"only {len(v_hit.pairs)} residues align to a V gene "
                f"({v_hit.gene.name}; at least {min_v_length} needed)"
            )
        else:
            why = f"best V allele {v_hit.gene.name} at identity {ident:.2f} < {min_identity:.2f}"
        return Assignment(
            seq,
            None,
            None,
            ident,
            "-" * n,
            np.zeros(n, dtype=bool),
            np.full(n, REGION_ID["FR1"], dtype=np.int64),
            note=f"no call: {why}",
        )
    germ = ["-"] * n
    regions = np.full(n, -1, dtype=np.int64)
    v_imgt, v_seq = v_hit.gene.imgt_positions, v_hit.gene.sequence
    last_v = -1
    for si, gi in v_hit.pairs:
        pos = int(v_imgt[gi])
        germ[si] = v_seq[gi]
        # V-gene residues after Cys104 belong to CDR3
        regions[si] = REGION_ID["CDR3"] if pos > 104 else imgt_region(pos)
        last_v = max(last_v, si)
    # J: align the tail after the V segment
    j_call, j_identity, notes = None, float("nan"), []
    tail_start = last_v + 1
    tail = seq[tail_start:]
    j_hit = None
    if j_genes and len(tail) >= 4:
        j_hit = _best(tail, j_genes, min_score=10.0)
        if j_hit is not None and j_hit.identity < min_identity:
            notes.append(
                f"J allele {j_hit.gene.name} at identity {j_hit.identity:.2f} < "
                f"{min_identity:.2f}: no J call"
            )
            j_hit = None
    if j_hit is not None:
        j_call, j_identity = j_hit.gene.name, j_hit.identity
        j_imgt, j_seq = j_hit.gene.imgt_positions, j_hit.gene.sequence
        for si, gi in j_hit.pairs:
            k = tail_start + si
            germ[k] = j_seq[gi]
            regions[k] = REGION_ID["FR4"] if j_imgt[gi] >= 118 else REGION_ID["CDR3"]
    elif not notes:
        notes.append(
            f"no J gene: {len(tail)} residues after the V gene"
            + (" (a partial chain?)" if len(tail) < 10 else "")
        )
    # fill unaligned residues: before the V alignment -> FR1, else carry the left region
    for i in range(n):
        if regions[i] < 0:
            regions[i] = regions[i - 1] if i > 0 else REGION_ID["FR1"]
            # untemplated residues after Cys104 are CDR3 until FR4 begins
            if i > 0 and regions[i - 1] == REGION_ID["FR3"] and i > last_v:
                regions[i] = REGION_ID["CDR3"]
    ngl = np.array([g != "-" and g != s for s, g in zip(seq, germ, strict=True)], dtype=bool)
    return Assignment(
        seq,
        v_hit.gene.name,
        j_call,
        v_hit.identity,
        "".join(germ),
        ngl,
        regions,
        j_identity=j_identity,
        note="; ".join(notes),
    )


def assign_with_riot(sequences: Iterable[str]) -> list[dict]:
    """AIRR records from ``riot-na`` (IMGT scheme, human): needs the extra ``riot``.

    Each record carries ``v_call``, ``j_call``, ``sequence_alignment_aa``,
    ``germline_alignment_aa`` and the region fields ``fwr1_aa`` … ``fwr4_aa``; feed the
    alignments to :func:`ngl_labels`.
    """
    try:
        from riot_na import Scheme, create_riot_aa
    except ImportError as err:
        raise ImportError(
            "assign_with_riot needs riot-na: pip install 'icml26-prism[riot]'"
        ) from err
    riot = create_riot_aa()
    out = []
    for i, seq in enumerate(sequences):
        rec = riot.run_on_sequence(f"seq{i}", seq, scheme=Scheme.IMGT)
        out.append({k: v for k, v in vars(rec).items() if not k.startswith("_")})
    return out


def regions_from_airr(record: Mapping[str, str]) -> tuple[str, np.ndarray]:
    """Residues and region ids from AIRR region fields (``fwr1_aa``, ``cdr1_aa`` … ``fwr4_aa``)."""
    keys = ("fwr1_aa", "cdr1_aa", "fwr2_aa", "cdr2_aa", "fwr3_aa", "cdr3_aa", "fwr4_aa")
    parts, regions = [], []
    for rid, key in enumerate(keys):
        val = record.get(key) or ""
        if not isinstance(val, str):
            val = ""
        parts.append(val)
        regions.extend([rid] * len(val))
    seq = "".join(parts)
    if not seq:
        raise ValueError("the record has no region fields (fwr1_aa … fwr4_aa)")
    return seq, np.asarray(regions, dtype=np.int64)
