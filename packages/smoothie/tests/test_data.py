"""The synonym task, vocabularies, normalisation and the loaders on fixtures in their formats."""

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from icml26.smoothie import (
    SynonymTask,
    Vocabulary,
    fit_sigmas,
    load_embeddings,
    normalize_embeddings,
    read_delimited_pairs,
    read_jsonl_pairs,
    read_jsonl_splits,
    synonym_task,
)


def test_synonym_task_structure():
    task = SynonymTask(concepts=10, synonyms=3, dim=8, max_len=6, min_len=2, n_train=50, n_test=5)
    d = synonym_task(task, np.random.default_rng(0))
    assert len(d.vocab) == 2 + 30 and d.embeddings.shape == (32, 8)
    assert d.train_src.shape == d.train_trg.shape == (50, 6)
    # every target has exactly one EOS, right after its content, then padding
    for row in d.train_trg.tolist():
        k = row.index(d.vocab.eos_id)
        assert all(x >= 2 for x in row[:k]) and all(x == d.vocab.pad_id for x in row[k + 1 :])
    # the target's concepts are a fixed map of the source's, position by position
    c = d.concept_of
    content = d.train_trg >= 2
    pairs = {
        (int(a), int(b))
        for a, b in zip(c[d.train_src][content], c[d.train_trg][content], strict=True)
    }
    assert len({a for a, _ in pairs}) == len(pairs)  # a function
    # the surface form is free: several synonyms appear for one concept
    assert len(set(d.train_trg[content].tolist())) > 10
    # normalised without the specials: content rows have mean 0 and sd 1 over all entries
    body = d.embeddings[2:]
    assert abs(body.mean().item()) < 1e-5 and abs(body.std().item() - 1) < 1e-4


def test_synonym_task_is_seeded():
    t = SynonymTask(n_train=20, n_test=4)
    a, b = synonym_task(t, np.random.default_rng(3)), synonym_task(t, np.random.default_rng(3))
    assert torch.equal(a.train_trg, b.train_trg) and torch.equal(a.embeddings, b.embeddings)


def test_fit_sigmas_recovers_and_flattens():
    d = synonym_task(SynonymTask(dim=16, n_train=2, n_test=2), np.random.default_rng(0))
    smin, smax = fit_sigmas(d.embeddings)
    assert 0 < smin < smax
    e = d.embeddings.double()
    d2 = torch.cdist(e, e) ** 2
    assert torch.softmax(-d2 / (2 * smin**2), -1).diagonal().mean() >= 0.995 - 1e-9  # rounding


def test_vocabulary_errors():
    v = Vocabulary(["[PAD]", "[SEP]", "a", "b"])
    assert v.encode("a b", 4) == [2, 3, 1, 0]
    assert v.decode([2, 3, 1, 2]) == "a b"
    with pytest.raises(ValueError, match="unknown token 'c'"):
        v.encode("a c", 4)
    with pytest.raises(ValueError, match="longer than the maximum length 3"):
        v.encode("a b a", 3)
    with pytest.raises(ValueError, match="special token"):
        Vocabulary(["a", "b"])


def test_jsonl_splits_in_the_diffuseq_format(tmp_path):
    rows = [{"src": "a b", "trg": "b a"}, {"src": "b", "trg": "a"}]
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    splits = read_jsonl_splits(tmp_path)
    assert set(splits) == {"train", "valid", "test"}
    assert splits["train"] == [("a b", "b a"), ("b", "a")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"src": "a"}\n')
    with pytest.raises(ValueError, match="needs the keys 'src' and 'trg'"):
        read_jsonl_pairs(bad)
    with pytest.raises(ValueError, match="no train/valid/test"):
        read_jsonl_splits(tmp_path / "nowhere")


def test_csv_and_tsv_pairs(tmp_path):
    (tmp_path / "p.tsv").write_text("src\ttrg\na b\tb a\n")
    (tmp_path / "p.csv").write_text("trg,src\nx,y\n")
    assert read_delimited_pairs(tmp_path / "p.tsv") == [("a b", "b a")]
    assert read_delimited_pairs(tmp_path / "p.csv") == [("y", "x")]
    (tmp_path / "q.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="header must name"):
        read_delimited_pairs(tmp_path / "q.csv")


def test_npy_embeddings_without_pickle(tmp_path):
    v = Vocabulary(["[PAD]", "[SEP]", "a", "b"])
    rng = np.random.default_rng(0)
    np.save(tmp_path / "e.npy", rng.standard_normal((4, 3)).astype(np.float32))
    e = load_embeddings(tmp_path / "e.npy", v)
    assert e.shape == (4, 3)
    assert abs(e[2:].mean().item()) < 1e-6
    np.save(tmp_path / "short.npy", rng.standard_normal((3, 3)))
    with pytest.raises(ValueError, match="3 rows but the vocabulary has 4"):
        load_embeddings(tmp_path / "short.npy", v)
    nan = rng.standard_normal((4, 3))
    nan[1, 1] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    with pytest.raises(ValueError, match="NaN"):
        load_embeddings(tmp_path / "nan.npy", v)
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}] * 4, dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        load_embeddings(tmp_path / "obj.npy", v)


def test_normalize_rejects_constant():
    with pytest.raises(ValueError, match="constant"):
        normalize_embeddings(torch.ones(4, 3), [0])


def test_context_maps_make_the_target_depend_on_the_previous_source_concept():
    task = SynonymTask(
        concepts=12, synonyms=2, dim=8, max_len=8, min_len=3, n_train=400, n_test=4, context_maps=3
    )
    d = synonym_task(task, np.random.default_rng(1))
    c = d.concept_of
    src_c, trg_c = c[d.train_src], c[d.train_trg]
    by_context: dict[tuple[int, int], set[int]] = {}
    plain: dict[int, set[int]] = {}
    for s_row, t_row in zip(src_c.tolist(), trg_c.tolist(), strict=True):
        n = next(i for i, x in enumerate(t_row) if x == -1)
        for i in range(1, n):
            k = s_row[i - 1] % 3
            by_context.setdefault((k, s_row[i]), set()).add(t_row[i])
            plain.setdefault(s_row[i], set()).add(t_row[i])
    # a function of (context, concept), but not of the concept alone
    assert all(len(v) == 1 for v in by_context.values())
    assert max(len(v) for v in plain.values()) > 1
    # K = 1 is the plain map, drawn from the same random stream as before
    one = synonym_task(replace(task, context_maps=1), np.random.default_rng(1))
    plain_task = SynonymTask(
        concepts=12, synonyms=2, dim=8, max_len=8, min_len=3, n_train=400, n_test=4
    )
    assert torch.equal(one.train_trg, synonym_task(plain_task, np.random.default_rng(1)).train_trg)
    with pytest.raises(ValueError, match="context_maps"):
        SynonymTask(concepts=4, context_maps=5)
    with pytest.raises(ValueError, match="n_train"):
        SynonymTask(n_train=0)
