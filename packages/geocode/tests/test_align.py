"""The alignment model: arms, tokens, training to the rule, greedy decoding."""

from __future__ import annotations

import pytest
import torch

from icml26.geocode.align import AlignConfig, Vocab, evaluate, target_tokens, train
from icml26.geocode.baselines import ir_oracle, question_majority, template_majority


def test_arms_decode_their_chain_then_the_answer(problems):
    p = problems[0]
    code, cap, none = (target_tokens(p, a) for a in ("code", "caption", "none"))
    assert none[-3:] == code[-3:] == cap[-3:]
    assert len(none) == 3 and len(code) > len(cap) > 3
    assert "POINT" in code and "ANGLE" in code
    with pytest.raises(ValueError, match="unknown arm"):
        target_tokens(p, "sketch")


def test_training_stops_by_the_rule_and_decodes(problems):
    torch.set_num_threads(1)
    data = problems * 2
    cfg = AlignConfig(batch_size=4, cap=4, window=2, patience=1, d_model=32, channels=(8, 8, 8))
    res = train(data, "code", cfg, seed=0)
    assert res.stopping["reason"] in ("cap", "plateau") and res.stopping["steps"] <= 4
    scores = evaluate(res, problems[:3])
    assert 0.0 <= scores["accuracy"] <= 1.0 and "parse_rate" in scores and "f1_circle" in scores
    again = train(data, "code", cfg, seed=0)
    assert again.losses == res.losses  # seeded


def test_vocab_and_small_input_errors(problems):
    v = Vocab.build(problems)
    assert v.decode(v.encode(["POINT", "A", "<eos>"])) == ["POINT", "A", "<eos>"]
    with pytest.raises(ValueError, match="batch_size"):
        train(problems[:2], "none", AlignConfig(batch_size=8), seed=0)


def test_baselines_on_the_same_data(problems):
    assert ir_oracle(problems) == 1.0  # the gold IR determines the answer
    assert 0.0 <= template_majority(problems, problems) <= 1.0
    assert question_majority(problems, problems) <= template_majority(problems, problems)
