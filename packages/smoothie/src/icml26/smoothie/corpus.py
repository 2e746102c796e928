"""An offline text corpus, a locally trained tokenizer and PPMI+SVD token embeddings.

The paper trains on downloaded corpora with ``bert-base-cased`` and its frozen word
embeddings. Neither is reachable offline, so the ``paper`` preset's text is built here
(reconstructed, the brief's plan):

- :func:`docstring_corpus` — sentences from the docstrings of a fixed list of standard
  library modules (``inspect.getdoc``), in a deterministic order. The text depends on the
  Python version; :func:`corpus_fingerprint` records which text was used.
- :func:`faker_corpus` — seeded sentences, addresses, catch phrases and job titles from
  ``faker`` (the ``corpus`` extra).
- :func:`sentence_pairs` — consecutive sentences of one paragraph as ``(src, trg)`` pairs,
  a seq2seq task on that text (reconstructed; not one of the paper's tasks).
- :func:`train_tokenizer` — a cased WordPiece tokenizer (the BERT family's scheme) trained
  locally with Hugging Face ``tokenizers``, with ``[PAD]``, ``[UNK]`` and ``[SEP]`` (not
  bit-reproducible across trainings: save it);
  :meth:`Vocabulary.from_tokenizer <icml26.smoothie.data.Vocabulary.from_tokenizer>` wraps
  it.
- :class:`CorpusTask`, :func:`corpus_task` — the ``paper`` preset's text task: next-sentence
  pairs, tokenised, split, with PPMI+SVD embeddings of the training side.
- :func:`ppmi_svd_embeddings` — count-based embeddings: positive PMI with context-distribution
  smoothing (α = 0.75) over a symmetric window, truncated SVD, ``U·√S`` (Levy, Goldberg and
  Dagan, 2015), then normalised as the official code normalises BERT's table, with
  statistics over the non-special rows only.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from icml26.smoothie.data import EOS, PAD, Seq2Seq, Vocabulary, normalize_embeddings

__all__ = [
    "DOCSTRING_MODULES",
    "UNK",
    "CorpusTask",
    "corpus_fingerprint",
    "corpus_task",
    "docstring_corpus",
    "faker_corpus",
    "faker_paragraphs",
    "ppmi_svd_embeddings",
    "sentence_pairs",
    "train_tokenizer",
]

UNK = "[UNK]"

DOCSTRING_MODULES: tuple[str, ...] = (
    "abc", "argparse", "array", "ast", "asyncio", "base64", "bisect", "calendar", "cmath",
    "codecs", "collections", "concurrent.futures", "configparser", "contextlib", "copy",
    "csv", "dataclasses", "datetime", "decimal", "difflib", "email", "email.message",
    "enum", "fnmatch", "fractions", "ftplib", "functools", "getopt", "gettext", "glob",
    "gzip", "hashlib", "heapq", "hmac", "html", "html.parser", "http.client",
    "http.cookies", "http.server", "imaplib", "importlib", "inspect", "io", "ipaddress",
    "itertools", "json", "locale", "logging", "logging.handlers", "lzma", "mailbox",
    "math", "mimetypes", "multiprocessing", "numbers", "operator", "optparse", "os",
    "pathlib", "pdb", "pickle", "platform", "plistlib", "poplib", "pprint", "queue",
    "random", "re", "sched", "secrets", "selectors", "shelve", "shlex", "shutil",
    "signal", "smtplib", "socket", "socketserver", "sqlite3", "ssl", "statistics",
    "string", "struct", "subprocess", "tarfile", "tempfile", "textwrap", "threading",
    "timeit", "tokenize", "traceback", "types", "typing", "unittest", "urllib.parse",
    "urllib.request", "uuid", "warnings", "wave", "weakref", "xml.dom.minidom",
    "xml.etree.ElementTree", "zipfile", "zlib",
)  # fmt: skip

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'`])")
_CODE_LIKE = re.compile(r">>>|\.\.\.|::|^\s*[-=*~^]{3,}|[{}]|\w+\(.*\)\s*->")


def _docstrings(module_names: Iterable[str]) -> Iterable[str]:
    for name in module_names:
        try:
            module = importlib.import_module(name)
        except ImportError:  # optional stdlib parts (e.g. sqlite3 built without it)
            continue
        doc = inspect.getdoc(module)
        if doc:
            yield doc
        for attr in sorted(vars(module)):
            if attr.startswith("_"):
                continue
            obj = getattr(module, attr, None)
            if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
                continue
            if getattr(obj, "__module__", None) != module.__name__:
                continue  # re-exports are read once, in their own module
            doc = inspect.getdoc(obj)
            if doc:
                yield doc
            if inspect.isclass(obj):
                for meth in sorted(vars(obj)):
                    if meth.startswith("_"):
                        continue
                    member = vars(obj)[meth]
                    if inspect.isfunction(member) or inspect.ismethoddescriptor(member):
                        doc = inspect.getdoc(member)
                        if doc:
                            yield doc


def _paragraph_sentences(doc: str, min_words: int, max_words: int) -> list[list[str]]:
    """Prose paragraphs of one docstring, each as a list of clean sentences."""
    out = []
    for para in re.split(r"\n\s*\n", doc):
        lines = para.splitlines()
        # drop indented blocks, doctests, tables and signature lines
        if not lines or any(line.startswith((" ", "\t")) for line in lines):
            continue
        if any(_CODE_LIKE.search(line) for line in lines):
            continue
        text = " ".join(line.strip() for line in lines)
        sents = []
        for s in _SENTENCE_END.split(text):
            words = s.split()
            if min_words <= len(words) <= max_words and s[-1:] in ".!?":
                sents.append(" ".join(words))
        if sents:
            out.append(sents)
    return out


def docstring_corpus(
    modules: Sequence[str] = DOCSTRING_MODULES,
    *,
    min_words: int = 4,
    max_words: int = 60,
    paragraphs: bool = False,
) -> list[str] | list[list[str]]:
    """Prose sentences from the docstrings of standard-library ``modules``, de-duplicated in
    first-seen order (modules in the given order, members sorted by name).

    Args:
        paragraphs: return the sentences grouped by paragraph (for :func:`sentence_pairs`).
    """
    if isinstance(modules, str):
        raise TypeError("modules must be a sequence of module names, not one string")
    if min_words < 1 or max_words < min_words:
        raise ValueError(f"need 1 ≤ min_words ≤ max_words, got {min_words}, {max_words}")
    seen: set[str] = set()
    groups: list[list[str]] = []
    for doc in _docstrings(modules):
        for para in _paragraph_sentences(doc, min_words, max_words):
            fresh = [s for s in para if s not in seen]
            seen.update(fresh)
            if fresh:
                groups.append(fresh)
    return groups if paragraphs else [s for g in groups for s in g]


def faker_corpus(n: int, *, seed: int, locale: str = "en_US") -> list[str]:
    """``n`` seeded lines from ``faker``: sentences, paragraphs, addresses, catch phrases,
    company slogans and job titles, in a seeded mix (needs the ``corpus`` extra)."""
    try:
        from faker import Faker
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "faker_corpus needs `faker`: pip install 'icml26-smoothie[corpus]'"
        ) from err
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    fake = Faker(locale)
    fake.seed_instance(seed)
    rng = np.random.default_rng(seed)
    makers = (
        lambda: fake.sentence(nb_words=int(rng.integers(6, 16))),
        lambda: fake.paragraph(nb_sentences=2),
        lambda: fake.address().replace("\n", ", ") + ".",
        lambda: fake.catch_phrase() + ".",
        lambda: fake.bs().capitalize() + ".",
        lambda: f"{fake.name()} works as {fake.job().lower()} in {fake.city()}.",
    )
    return [makers[int(rng.integers(len(makers)))]() for _ in range(n)]


def faker_paragraphs(n: int, *, seed: int, sentences: int = 4) -> list[list[str]]:
    """``n`` seeded ``faker`` paragraphs of ``sentences`` sentences each (for
    :func:`sentence_pairs`; needs the ``corpus`` extra)."""
    try:
        from faker import Faker
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "faker_paragraphs needs `faker`: pip install 'icml26-smoothie[corpus]'"
        ) from err
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    fake = Faker("en_US")
    fake.seed_instance(seed)
    return [fake.sentences(nb=sentences) for _ in range(n)]


def sentence_pairs(paragraphs: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """``(sentence_i, sentence_{i+1})`` within each paragraph (reconstructed seq2seq task)."""
    return [(p[i], p[i + 1]) for p in paragraphs for i in range(len(p) - 1)]


def corpus_fingerprint(texts: Sequence[str]) -> str:
    """SHA-256 of the corpus (one line per text): which text a run was trained on."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8") + b"\n")
    return h.hexdigest()


def train_tokenizer(
    texts: Iterable[str],
    vocab_size: int = 8000,
    *,
    min_frequency: int = 2,
    lowercase: bool = False,
):
    """A WordPiece tokenizer trained locally with ``tokenizers`` (``bert-base-cased``'s
    scheme: BERT normaliser and pre-tokeniser, ``##`` continuations), special tokens
    ``[PAD]`` (id 0), ``[UNK]`` (1) and ``[SEP]`` (2, the end token). No download.

    Training runs single-threaded (``TOKENIZERS_PARALLELISM=false`` unless set), which also
    keeps the library's fork warning out of later multi-process runs. Ids are canonical (the
    specials, then the pieces sorted), but the trainer breaks pair-count ties in hash-map
    order, so two trainings on the same text can differ in a few pieces (up to 64 of 4,000
    measured on :func:`docstring_corpus`): save the result (``tok.save(path)``) and reload
    it with ``tokenizers.Tokenizer.from_file`` to reuse exactly the same tokenizer.
    """
    try:
        from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "train_tokenizer needs `tokenizers`: pip install 'icml26-smoothie[corpus]'"
        ) from err
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 3:
        raise ValueError(f"vocab_size must be an integer ≥ 3, got {vocab_size!r}")
    if isinstance(texts, str):
        raise TypeError("texts must be an iterable of strings, not one string")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    tok = Tokenizer(models.WordPiece(unk_token=UNK))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[PAD, UNK, EOS],
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    # canonical ids: the specials, then the pieces in code-point order (WordPiece encodes by
    # greedy longest match, so ids are labels only and the encoding is unchanged)
    vocab = tok.get_vocab()
    pieces = [PAD, UNK, EOS, *sorted(set(vocab) - {PAD, UNK, EOS})]
    tok.model = models.WordPiece(
        {p: i for i, p in enumerate(pieces)}, unk_token=UNK, continuing_subword_prefix="##"
    )
    return tok


def ppmi_svd_embeddings(
    sequences: Sequence[Sequence[int]],
    vocab_size: int,
    dim: int = 256,
    *,
    window: int = 5,
    smoothing: float = 0.75,
    special_ids: Sequence[int] = (),
    seed: int = 0,
    normalize: bool = True,
) -> Tensor:
    """Token embeddings ``(vocab_size, dim)`` from a tokenised corpus.

    Co-occurrence counts ``c(w, c)`` of tokens at most ``window`` positions apart (both
    sides, special tokens excluded); ``PPMI(w, c) = max(0, log c(w,c)·Σc^α / (c(w)·c(c)^α))``
    with context smoothing α = ``smoothing``; the randomised truncated SVD of the sparse
    PPMI matrix (``torch.svd_lowrank``, seeded) gives ``U·√S``. Tokens with no counts and
    the special tokens get seeded Gaussian rows of the table's typical norm, so every row is
    distinct. With ``normalize``, ``E ← (E − mean)/std`` with statistics over the
    non-special rows (official recipe).
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2:
        raise ValueError(f"vocab_size must be an integer ≥ 2, got {vocab_size!r}")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim < vocab_size:
        raise ValueError(f"dim must be an integer in [1, vocab_size), got {dim!r}")
    if window < 1:
        raise ValueError(f"window must be ≥ 1, got {window}")
    specials = np.zeros(vocab_size, dtype=bool)
    specials[list(special_ids)] = True
    rows, cols = [], []
    for seq in sequences:
        ids = np.asarray(seq, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
            raise ValueError(f"token id out of range [0, {vocab_size}) in the corpus")
        ids = ids[~specials[ids]]
        for k in range(1, window + 1):
            if ids.size > k:
                rows += [ids[:-k], ids[k:]]
                cols += [ids[k:], ids[:-k]]
    if not rows:
        raise ValueError("the corpus has no co-occurring tokens")
    r, c = np.concatenate(rows), np.concatenate(cols)
    keys, counts = np.unique(r * vocab_size + c, return_counts=True)
    r, c = keys // vocab_size, keys % vocab_size
    counts = counts.astype(np.float64)
    row_sum = np.bincount(r, weights=counts, minlength=vocab_size)
    col_sum = np.bincount(c, weights=counts, minlength=vocab_size) ** smoothing
    pmi = np.log(counts * col_sum.sum() / (row_sum[r] * col_sum[c]))
    keep = pmi > 0
    ppmi = torch.sparse_coo_tensor(
        torch.from_numpy(np.stack([r[keep], c[keep]])),
        torch.from_numpy(pmi[keep]),
        (vocab_size, vocab_size),
        check_invariants=True,
    ).coalesce()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        u, s, _ = torch.svd_lowrank(ppmi, q=dim, niter=4)
    emb = (u * s.sqrt()).float()
    empty = torch.from_numpy(specials | (row_sum == 0))
    if (~empty).sum() < 2:
        raise ValueError("fewer than two non-special tokens occur in the corpus")
    scale = emb[~empty].norm(dim=1).mean() / dim**0.5
    gen = torch.Generator().manual_seed(seed + 1)
    emb[empty] = scale * torch.randn(int(empty.sum()), dim, generator=gen)
    return normalize_embeddings(emb, list(special_ids)) if normalize else emb


# -- a seq2seq task on the corpus ------------------------------------------------------------
@dataclass(frozen=True)
class CorpusTask:
    """Next-sentence pairs from the docstring corpus (+ ``faker`` paragraphs), tokenised by a
    locally trained WordPiece tokenizer, with PPMI+SVD embeddings of dimension ``dim``
    (reconstructed text task for the ``paper`` preset; the paper's datasets are downloads)."""

    modules: tuple[str, ...] = DOCSTRING_MODULES
    faker_paragraphs: int = 0
    vocab_size: int = 8000
    dim: int = 256
    max_len: int = 64
    n_test: int = 256
    window: int = 5
    min_frequency: int = 2

    def __post_init__(self) -> None:
        if self.max_len < 2 or self.n_test < 1 or self.faker_paragraphs < 0:
            raise ValueError("need max_len ≥ 2, n_test ≥ 1 and faker_paragraphs ≥ 0")
        if not 1 <= self.dim < self.vocab_size:
            raise ValueError(f"need 1 ≤ dim < vocab_size, got {self.dim}, {self.vocab_size}")


def corpus_task(task: CorpusTask, rng: np.random.Generator) -> Seq2Seq:
    """Build :class:`~icml26.smoothie.data.Seq2Seq` from the corpus: ``(sentence, next
    sentence)`` pairs whose tokens (+ EOS) fit ``max_len``, a seeded train/test split, the
    tokenizer and PPMI+SVD embeddings fitted on the training side only. Every token is its
    own concept (``concept_of`` is the identity, ``-2`` PAD, ``-1`` EOS), so concept accuracy
    is token accuracy."""
    paras = [list(p) for p in docstring_corpus(task.modules, paragraphs=True)]
    if task.faker_paragraphs:
        paras += faker_paragraphs(task.faker_paragraphs, seed=int(rng.integers(2**31)))
    pairs = sentence_pairs(paras)
    order = rng.permutation(len(pairs))
    if len(pairs) <= task.n_test:
        raise ValueError(f"only {len(pairs)} sentence pairs for n_test = {task.n_test}")
    test_idx, train_idx = order[: task.n_test], order[task.n_test :]
    train_text = [s for i in train_idx for s in pairs[i]]
    tok = train_tokenizer(train_text, task.vocab_size, min_frequency=task.min_frequency)
    vocab = Vocabulary.from_tokenizer(tok)

    def encode(idx: np.ndarray) -> tuple[Tensor, Tensor]:
        src, trg = [], []
        for i in idx:
            a, b = (vocab.tokenize(s) for s in pairs[i])
            if len(a) < task.max_len and len(b) < task.max_len:
                src.append(vocab.encode(a, task.max_len))
                trg.append(vocab.encode(b, task.max_len))
        if not src:
            raise ValueError(f"no sentence pair fits max_len = {task.max_len}")
        return torch.tensor(src), torch.tensor(trg)

    tr_src, tr_trg = encode(train_idx)
    te_src, te_trg = encode(test_idx)
    specials = [vocab.index[t] for t in (PAD, UNK, EOS)]
    seqs = [row[row != vocab.pad_id].tolist() for row in torch.cat([tr_src, tr_trg])]
    emb = ppmi_svd_embeddings(
        seqs, len(vocab), task.dim, window=task.window, special_ids=specials,
        seed=int(rng.integers(2**31)),
    )  # fmt: skip
    concept_of = torch.arange(len(vocab))
    concept_of[vocab.pad_id], concept_of[vocab.eos_id] = -2, -1
    # the tokenizer is kept: a run saves it (its training is not bit-reproducible)
    return Seq2Seq(vocab, emb, concept_of, tr_src, tr_trg, te_src, te_trg, tokenizer=tok)
