import re

import pytest

from icml26.charperturb.tasks import (
    CLOZE_FACTS,
    TASKS,
    Item,
    make_items,
    perturb_item,
    read_jsonl,
    sentences,
    write_jsonl,
)


def test_generators_are_seeded():
    assert sentences(5, 3) == sentences(5, 3) != sentences(5, 4)
    for task in TASKS:
        a, b = make_items(task, 4, 0), make_items(task, 4, 0)
        assert [x.prompt for x in a] == [x.prompt for x in b]


def test_cloze_items_have_four_options_with_the_answer():
    items = make_items("cloze", len(CLOZE_FACTS), 0)
    assert all(len(it.options) == 4 and it.answer in it.options for it in items)


def test_arithmetic_answers_are_correct():
    for it in make_items("arithmetic", 20, 1):
        a, b = map(int, re.findall(r"\d+", it.prompt)[:2])
        assert int(it.answer) == a + b


@pytest.mark.parametrize(
    ("op", "kw"),
    [
        ("ucc_inj", {"charset": "tags", "k": 2}),
        ("visible_noise", {"k": 1}),
        ("typos", {"p": 1.0}),
        ("shuffle", {"q": 1.0}),
    ],
)
def test_jsonl_round_trip_with_metadata(tmp_path, op, kw):
    items = [
        perturb_item(it, op, rng=i, **kw) for i, it in enumerate(make_items("arithmetic", 5, 0))
    ]
    path = write_jsonl(items, tmp_path / "items.jsonl")
    back = list(read_jsonl(path))
    assert [b.prompt for b in back] == [i.prompt for i in items]
    assert all(b.perturbation["operator"] == op for b in back)
    if op in ("ucc_inj", "visible_noise"):
        assert back[0].perturbation["n_inserted"] == kw["k"] * len(back[0].clean_prompt)
    else:  # digits (the answer's operands) survive the word operators
        for b in back:
            assert re.findall(r"\d+", b.prompt) == re.findall(r"\d+", b.clean_prompt)


def test_options_are_protected():
    it = make_items("cloze", 1, 0)[0]
    it = Item(it.id, "cloze", it.prompt + " " + " or ".join(it.options), it.answer, it.options)
    p = perturb_item(it, "shuffle", q=1.0, rng=0)
    assert all(o in p.prompt for o in it.options)


def test_bad_items_and_files(tmp_path):
    with pytest.raises(ValueError, match="unknown task"):
        make_items("poetry", 1, 0)
    with pytest.raises(ValueError, match="not among"):
        Item("x", "cloze", "p", "a", ["b", "c"])
    with pytest.raises(ValueError, match="unknown operator"):
        perturb_item(make_items("cloze", 1, 0)[0], "rot13", rng=0)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(ValueError, match="line 1"):
        list(read_jsonl(bad))
