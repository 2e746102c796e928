"""The 53-token GL/NGL vocabulary and the tokenizer (PRISM, "Vocabulary and labels").

The vocabulary is the 33-token ESM-2 alphabet, in ESM-2's order, followed by 20
lowercase amino acids. Uppercase residues are germline (GL) tokens, lowercase
residues are non-germline (NGL) tokens. The model input is always uppercase (the
model is never told which residues are somatic); only training labels carry case.

Input layouts (official ``PrismTokenizer``):

- unpaired: ``<cls> SEQ <eos>``
- paired:   ``<cls> VH <cls><cls> VL <eos>``

The vocabulary is written out here by hand: nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: ESM-2's 33 tokens, in ESM-2's order (ids 0..32).
ESM2_TOKENS: tuple[str, ...] = (
    "<cls>",
    "<pad>",
    "<eos>",
    "<unk>",
    "L",
    "A",
    "G",
    "V",
    "S",
    "E",
    "R",
    "T",
    "D",
    "Q",
    "I",
    "F",
    "K",
    "P",
    "N",
    "Y",
    "M",
    "H",
    "W",
    "C",
    "X",
    "B",
    "U",
    "Z",
    "O",
    ".",
    "-",
    "<null_1>",
    "<mask>",
)
#: The 20 standard amino acids in the column order used by every 20-way array here.
AA_ORDER = "ACDEFGHIKLMNPQRSTVWY"
#: ids 33..52: lowercase (non-germline) amino acids, alphabetical as in the official code.
NGL_TOKENS: tuple[str, ...] = tuple(AA_ORDER.lower())
TOKENS: tuple[str, ...] = ESM2_TOKENS + NGL_TOKENS
TOKEN_TO_ID: dict[str, int] = {t: i for i, t in enumerate(TOKENS)}

N_ESM2 = len(ESM2_TOKENS)  # 33
VOCAB_SIZE = len(TOKENS)  # 53
CLS, PAD, EOS, UNK, MASK = (TOKEN_TO_ID[t] for t in ("<cls>", "<pad>", "<eos>", "<unk>", "<mask>"))
#: ids of the uppercase (GL) and lowercase (NGL) residues, both in AA_ORDER.
GL_IDS = np.array([TOKEN_TO_ID[a] for a in AA_ORDER], dtype=np.int64)
NGL_IDS = np.array([TOKEN_TO_ID[a.lower()] for a in AA_ORDER], dtype=np.int64)
#: uppercase id -> lowercase id, for the 20 residues (the official ``lowercase_aa_token_ids``).
GL_TO_NGL: dict[int, int] = dict(zip(GL_IDS.tolist(), NGL_IDS.tolist(), strict=True))
NGL_TO_GL: dict[int, int] = {v: k for k, v in GL_TO_NGL.items()}

assert VOCAB_SIZE == 53 and N_ESM2 == 33

# A lookup table from byte value to token id (-1 = not a residue letter).
_LETTER_ID = np.full(256, -1, dtype=np.int64)
for _a in AA_ORDER:
    _LETTER_ID[ord(_a)] = TOKEN_TO_ID[_a]
    _LETTER_ID[ord(_a.lower())] = TOKEN_TO_ID[_a.lower()]
_UPPER_OF = np.arange(VOCAB_SIZE, dtype=np.int64)
for _u, _l in GL_TO_NGL.items():
    _UPPER_OF[_l] = _u


def residue_ids(
    sequence: str, *, preserve_case: bool = False, chain: str = "sequence"
) -> np.ndarray:
    """Token ids of the residues of ``sequence`` (no special tokens).

    Lowercase letters map to NGL tokens only with ``preserve_case=True``; otherwise the
    sequence is read uppercase, as the model's input always is. A letter that is not one
    of the 20 standard amino acids raises ``ValueError`` naming its (0-based) position.
    """
    if not isinstance(sequence, str):
        raise TypeError(f"{chain} must be a str, got {type(sequence).__name__}")
    if not sequence:
        raise ValueError(f"{chain} is empty")
    if not sequence.isascii():
        bad = next(i for i, c in enumerate(sequence) if not c.isascii())
        raise ValueError(
            f"{chain} has an invalid residue {sequence[bad]!r} at position {bad}; "
            f"expected one of {AA_ORDER} (lowercase = non-germline)"
        )
    ids = _LETTER_ID[np.frombuffer(sequence.encode("ascii"), dtype=np.uint8)]
    bad = np.flatnonzero(ids < 0)
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"{chain} has an invalid residue {sequence[i]!r} at position {i}; "
            f"expected one of {AA_ORDER} (lowercase = non-germline)"
        )
    return ids if preserve_case else _UPPER_OF[ids]


def to_uppercase_ids(ids: np.ndarray) -> np.ndarray:
    """Map NGL (lowercase) token ids to their GL (uppercase) ids; others unchanged."""
    return _UPPER_OF[np.asarray(ids, dtype=np.int64)]


def origin_labels(sequence: str) -> np.ndarray:
    """GL/NGL labels read from case: 1 where a residue is lowercase (NGL), else 0."""
    residue_ids(sequence, preserve_case=True)  # validates
    return np.frombuffer(sequence.encode("ascii"), dtype=np.uint8) >= ord("a")


@dataclass(frozen=True)
class Encoding:
    """A padded batch: ``input_ids`` and ``attention_mask`` are (B, T) int64 arrays;
    ``residue_mask`` marks residue tokens; ``chain`` is 0 for VH/unpaired, 1 for VL,
    -1 for special tokens. ``residue_index[b]`` lists the token positions of the
    residues of sequence ``b`` in reading order (VH then VL)."""

    input_ids: np.ndarray
    attention_mask: np.ndarray
    residue_mask: np.ndarray
    chain: np.ndarray

    @property
    def residue_index(self) -> list[np.ndarray]:
        return [np.flatnonzero(row) for row in self.residue_mask]

    def torch(self, device=None):
        """``(input_ids, attention_mask)`` as torch tensors on ``device``."""
        import torch

        return (
            torch.as_tensor(self.input_ids, device=device),
            torch.as_tensor(self.attention_mask, device=device),
        )


class Tokenizer:
    """Tokenizer for unpaired and paired (``<cls> VH <cls><cls> VL <eos>``) antibodies.

    ``Tokenizer()(heavy)`` encodes unpaired chains; ``Tokenizer()(heavy, light)``
    encodes pairs. ``preserve_case=True`` keeps lowercase letters as NGL tokens
    (for ``exact`` scoring); by default input is uppercased, as in training.
    """

    vocab_size = VOCAB_SIZE
    tokens = TOKENS
    cls_id, pad_id, eos_id, unk_id, mask_id = CLS, PAD, EOS, UNK, MASK
    gl_ids = GL_IDS
    ngl_ids = NGL_IDS

    def encode(
        self, heavy: str, light: str | None = None, *, preserve_case: bool = False
    ) -> np.ndarray:
        """Token ids of one (unpaired or paired) antibody."""
        name = "heavy chain" if light is not None else "sequence"
        vh = residue_ids(heavy, preserve_case=preserve_case, chain=name)
        if light is None:
            return np.concatenate([[CLS], vh, [EOS]]).astype(np.int64)
        vl = residue_ids(light, preserve_case=preserve_case, chain="light chain")
        return np.concatenate([[CLS], vh, [CLS, CLS], vl, [EOS]]).astype(np.int64)

    def __call__(
        self,
        heavy: str | Sequence[str],
        light: str | Sequence[str] | None = None,
        *,
        preserve_case: bool = False,
    ) -> Encoding:
        """Encode one or many antibodies into a right-padded :class:`Encoding`."""
        heavies = [heavy] if isinstance(heavy, str) else list(heavy)
        if light is None:
            lights: list[str | None] = [None] * len(heavies)
        else:
            lights = [light] if isinstance(light, str) else list(light)
            if len(lights) != len(heavies):
                raise ValueError(f"got {len(heavies)} heavy chains but {len(lights)} light chains")
        if not heavies:
            raise ValueError("no sequences to encode")
        rows, chains = [], []
        for h, lc in zip(heavies, lights, strict=True):
            ids = self.encode(h, lc, preserve_case=preserve_case)
            ch = np.full(ids.shape, -1, dtype=np.int64)
            ch[1 : 1 + len(h)] = 0
            if lc is not None:
                ch[len(h) + 3 : len(h) + 3 + len(lc)] = 1
            rows.append(ids)
            chains.append(ch)
        width = max(len(r) for r in rows)
        ids = np.full((len(rows), width), PAD, dtype=np.int64)
        chain = np.full((len(rows), width), -1, dtype=np.int64)
        for i, (r, c) in enumerate(zip(rows, chains, strict=True)):
            ids[i, : len(r)] = r
            chain[i, : len(c)] = c
        attn = (ids != PAD).astype(np.int64)
        return Encoding(ids, attn, chain >= 0, chain)

    def decode(self, ids: Sequence[int] | np.ndarray, *, keep_case: bool = True) -> str:
        """Residue letters of ``ids`` (special tokens dropped; ``keep_case`` keeps NGL lowercase).

        A paired input decodes to ``"VH/VL"``.
        """
        out, prev_cls = [], False
        arr = np.asarray(ids, dtype=np.int64).ravel()
        for pos, i in enumerate(arr.tolist()):
            if not 0 <= i < VOCAB_SIZE:
                raise ValueError(f"token id {i} at position {pos} is outside the vocabulary")
            tok = TOKENS[i]
            if tok == "<cls>" and prev_cls and out:
                out.append("/")
            prev_cls = tok == "<cls>"
            if len(tok) == 1 and tok in AA_ORDER + AA_ORDER.lower():
                out.append(tok if keep_case else tok.upper())
        return "".join(out)
