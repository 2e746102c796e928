"""The offline corpus, the locally trained tokenizer, PPMI+SVD embeddings and generative
perplexity."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from icml26.smoothie import (
    Autoregressive,
    DenoiserConfig,
    Vocabulary,
    docstring_corpus,
    generative_perplexity,
    ppmi_svd_embeddings,
    sentence_pairs,
    train_tokenizer,
)
from icml26.smoothie.corpus import corpus_fingerprint

MODULES = ("json", "csv", "textwrap", "heapq", "bisect", "string", "queue", "shlex")


@pytest.fixture(scope="module")
def docs():
    return docstring_corpus(MODULES)


def test_docstring_corpus_is_prose_and_deterministic(docs):
    assert len(docs) > 100
    assert docs == docstring_corpus(MODULES)
    assert len(set(docs)) == len(docs)
    for s in docs:
        assert 4 <= len(s.split()) <= 60 and s[-1] in ".!?" and ">>>" not in s
    assert corpus_fingerprint(docs) == corpus_fingerprint(list(docs))
    assert corpus_fingerprint(docs) != corpus_fingerprint(docs[1:])
    paras = docstring_corpus(MODULES, paragraphs=True)
    assert [s for p in paras for s in p] == docs
    pairs = sentence_pairs(paras)
    assert len(pairs) == sum(len(p) - 1 for p in paras) > 10
    with pytest.raises(TypeError, match="sequence of module names"):
        docstring_corpus("json")
    with pytest.raises(ValueError, match="min_words"):
        docstring_corpus(MODULES, min_words=5, max_words=4)


def test_faker_corpus_is_seeded():
    pytest.importorskip("faker")
    from icml26.smoothie import faker_corpus

    a, b, c = faker_corpus(50, seed=3), faker_corpus(50, seed=3), faker_corpus(50, seed=4)
    assert a == b and a != c and len(a) == 50
    assert all(isinstance(s, str) and len(s.split()) >= 2 for s in a)
    with pytest.raises(ValueError, match="non-negative"):
        faker_corpus(-1, seed=0)
    from icml26.smoothie.corpus import faker_paragraphs

    paras = faker_paragraphs(5, seed=1)
    assert paras == faker_paragraphs(5, seed=1) and len(sentence_pairs(paras)) == 15


def test_tokenizer_trains_locally_and_round_trips(docs, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    Tokenizer = tokenizers.Tokenizer

    tok = train_tokenizer(docs, 600)
    assert tok.get_vocab_size() <= 600
    assert [tok.token_to_id(t) for t in ("[PAD]", "[UNK]", "[SEP]")] == [0, 1, 2]
    again = train_tokenizer(docs, 600)  # ties may change a few pieces, never many
    assert len(set(tok.get_vocab()) & set(again.get_vocab())) >= 0.9 * tok.get_vocab_size()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    loaded = Tokenizer.from_file(str(path))
    assert loaded.get_vocab() == tok.get_vocab()
    assert [loaded.encode(d).ids for d in docs[:20]] == [tok.encode(d).ids for d in docs[:20]]
    pieces = sorted(tok.get_vocab(), key=tok.get_vocab().__getitem__)
    assert pieces[3:] == sorted(pieces[3:])  # canonical ids
    vocab = Vocabulary.from_tokenizer(tok)
    assert len(vocab) == tok.get_vocab_size() and vocab.pad_id == 0 and vocab.eos_id == 2
    text = docs[3]
    ids = vocab.encode(text, 96)
    assert ids[-1] == vocab.pad_id and vocab.eos_id in ids
    # BERT-style detokenisation is lossy only in spaces around punctuation
    assert vocab.decode(ids) == tok.decode(tok.encode(text).ids)
    assert "".join(vocab.decode(ids).split()) == "".join(text.split())
    with pytest.raises(ValueError, match="longer than the maximum length"):
        vocab.encode(text, 3)
    with pytest.raises(TypeError, match=r"tokenizers\.Tokenizer"):
        Vocabulary.from_tokenizer(object())
    with pytest.raises(ValueError, match="vocab_size"):
        train_tokenizer(docs, 2)


def test_training_turns_tokenizer_parallelism_off(monkeypatch):
    pytest.importorskip("tokenizers")
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    train_tokenizer(["a b c d"] * 20, 10, min_frequency=1)
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")  # a user's choice is kept
    train_tokenizer(["a b c d"] * 20, 10, min_frequency=1)
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"


@pytest.mark.slow
def test_no_fork_warning_after_training():
    pytest.importorskip("tokenizers")
    code = (
        "import os, sys\n"
        "from icml26.smoothie.corpus import train_tokenizer\n"
        "tok = train_tokenizer(['a b c d e f g'] * 50 + ['h i j k'] * 50, 40, min_frequency=1)\n"
        "tok.encode_batch(['a b c', 'h i j'])\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    tok.encode('a b')\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "tokenizers" not in out.stderr and "fork" not in out.stderr


def _planted_corpus(rng, n=400):
    """Tokens 3..7 occur beside context tokens 13..17, tokens 8..12 beside 18..22."""
    seqs = []
    for _ in range(n):
        g = int(rng.integers(2))
        words = rng.integers(3, 8, 4) + 5 * g
        ctx = rng.integers(13, 18, 4) + 5 * g
        seq = np.empty(8, dtype=np.int64)
        seq[0::2], seq[1::2] = words, ctx
        seqs.append([*seq.tolist(), 2])  # EOS (special) at the end
    return seqs


def test_ppmi_svd_groups_tokens_by_context_and_normalises_without_specials():
    seqs = _planted_corpus(np.random.default_rng(0))
    emb = ppmi_svd_embeddings(seqs, 24, 6, window=1, special_ids=[0, 1, 2], seed=0)
    assert emb.shape == (24, 6) and torch.isfinite(emb).all()
    body = emb[3:]
    assert abs(float(body.mean())) < 1e-5 and abs(float(body.std()) - 1) < 1e-5
    assert torch.equal(emb, ppmi_svd_embeddings(seqs, 24, 6, window=1, special_ids=[0, 1, 2]))
    unit = torch.nn.functional.normalize(emb, dim=1)
    cos = unit @ unit.T
    a, b = list(range(3, 8)), list(range(8, 13))
    within = (cos[a][:, a].sum() - 5) / 20
    between = cos[a][:, b].mean()
    assert within > 0.9 and between < 0.1
    # unseen tokens (23) and specials get distinct rows
    assert len({tuple(r.tolist()) for r in emb[[0, 1, 2, 23]]}) == 4
    with pytest.raises(ValueError, match="dim"):
        ppmi_svd_embeddings(seqs, 24, 24)
    with pytest.raises(ValueError, match="out of range"):
        ppmi_svd_embeddings([[1, 30]], 24, 4)


def _scorer(v=9, length=6):
    torch.manual_seed(0)
    cfg = DenoiserConfig(
        embed_dim=8, hidden=16, heads=2, layers=2, encoder_layers=1, max_len=length,
        conditional=False,
    )  # fmt: skip
    return Autoregressive(cfg, torch.randn(v, 8))


def test_generative_perplexity_of_a_uniform_scorer_is_the_vocabulary_size():
    ar = _scorer()
    torch.nn.init.zeros_(ar.model.net.out.weight)
    torch.nn.init.zeros_(ar.model.net.out.bias)
    samples = torch.tensor([[3, 4, 1, 0, 0, 0], [5, 5, 5, 5, 5, 5], [1, 0, 0, 0, 0, 0]])
    assert generative_perplexity(ar, samples, 1, pad_id=0) == pytest.approx(9, rel=1e-6)
    with pytest.raises(ValueError, match="every sample is empty"):
        generative_perplexity(ar, torch.tensor([[1, 0, 0, 0, 0, 0]]), 1, pad_id=0)
    with pytest.raises(ValueError, match="maximum length"):
        generative_perplexity(ar, torch.zeros(1, 7, dtype=torch.long) + 3, 1)


def test_generative_perplexity_is_the_token_weighted_mean():
    ar = _scorer()
    samples = torch.tensor([[3, 4, 1, 0, 0, 0], [5, 6, 7, 8, 1, 0]])
    ppl = generative_perplexity(ar, samples, 1, pad_id=0)
    with torch.no_grad():
        logits = ar.model(ar._shift(samples), None, None, None).log_softmax(-1)
    lp = logits.gather(-1, samples[..., None])[..., 0]
    terms = torch.cat([lp[0, :3], lp[1, :5]])  # content + end token
    assert ppl == pytest.approx(math.exp(-float(terms.mean())), rel=1e-5)
    # a scorer that puts mass on the samples scores them lower than on shuffled ones
    assert ppl > 1


def test_corpus_task_runs_through_the_reproduction(tmp_path):
    pytest.importorskip("tokenizers")
    from icml26.smoothie.corpus import CorpusTask, corpus_task
    from icml26.smoothie.model import TrainConfig
    from icml26.smoothie.reproduce import Config, run

    task = CorpusTask(modules=MODULES, vocab_size=300, dim=16, max_len=40, n_test=30)
    data = corpus_task(task, np.random.default_rng(0))
    v = len(data.vocab)
    assert data.embeddings.shape == (v, 16) and data.tokenizer is not None
    assert data.train_src.shape[1] == 40 and 0 < data.test_trg.shape[0] <= 30
    assert int(data.concept_of[data.vocab.eos_id]) == -1
    assert int(data.concept_of[data.vocab.pad_id]) == -2
    assert (data.train_trg == data.vocab.eos_id).sum(1).eq(1).all()  # one EOS per target
    base = Config()
    config = Config(
        corpus=task,
        model=base.model.__class__(
            embed_dim=16, hidden=16, heads=2, layers=2, encoder_layers=1, max_len=40,
            max_src_len=40, mlp_ratio=2.0,
        ),
        train=TrainConfig(batch_size=16, warmup=2, window=4, patience=1, cap=8),
        methods=("smoothie", "ar", "copy", "retrieval"),
        steps=3, mbr=0, perplexity=True, control_synonyms=1,
    )  # fmt: skip
    rep = run(config, 0, tmp_path)
    assert (tmp_path / "tokenizer-seed0.json").exists()
    groups = {r.group for r in rep.rows}
    assert groups == {"properties", "corpus"}  # no S = 1 control on text
    for method in ("Smoothie", "autoregressive", "copy source"):
        ppl = rep.stat(method, "gen_perplexity", "corpus").mean
        assert 1 < ppl < 10 * v


def test_unconditional_path_on_the_corpus():
    """No source (``conditional=False``): Smoothie and the AR model train on the sentences
    alone, Smoothie samples from a batch size, the AR model scores generative perplexity."""
    pytest.importorskip("tokenizers")
    from dataclasses import replace

    from icml26.smoothie.corpus import CorpusTask
    from icml26.smoothie.model import TrainConfig
    from icml26.smoothie.reproduce import UNCONDITIONAL_TINY, Config, run_unconditional

    assert UNCONDITIONAL_TINY.model.conditional is False
    assert UNCONDITIONAL_TINY.corpus.max_len == 64
    task = CorpusTask(modules=MODULES, vocab_size=300, dim=16, max_len=40, n_test=8)
    config = replace(
        UNCONDITIONAL_TINY,
        corpus=task,
        model=replace(
            UNCONDITIONAL_TINY.model, embed_dim=16, hidden=16, layers=2, max_len=40, max_src_len=40
        ),
        train=TrainConfig(batch_size=16, warmup=2, window=4, patience=1, cap=6),
        steps=3,
    )
    rec = run_unconditional(config, 100)
    assert set(rec["rows"]) == {"Smoothie", "autoregressive (greedy)", "held-out sentences"}
    for row in rec["rows"].values():
        assert 1 < row["gen_perplexity"] < 10 * rec["vocab"]
        assert 0 < row["distinct"] <= 1 and 0 <= row["mean_length"] <= 40
    assert rec["rows"]["Smoothie"]["stopping"]["steps"] == 6
    with pytest.raises(ValueError, match="unconditional model"):
        run_unconditional(replace(config, model=replace(config.model, conditional=True)), 100)
    with pytest.raises(ValueError, match="corpus"):
        run_unconditional(Config(), 100)
