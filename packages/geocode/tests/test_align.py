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
    from icml26.geocode.align import question_tokens

    q, qg = question_tokens(p), question_tokens(p, givens=True)
    assert q == ["<q>", *p.target] and not any(t.startswith("v") for t in q)  # no given
    assert qg[: len(q)] == q and qg[len(q) :] == [t for v, d in p.givens for t in (v, f"v{d}")]
    assert set(qg) <= set(Vocab.build([p]).tokens)


def test_training_stops_by_the_rule_and_decodes(problems):
    torch.set_num_threads(1)
    data = problems * 2
    cfg = AlignConfig(batch_size=4, cap=4, window=2, patience=1, d_model=32, channels=(8, 8, 8))
    res = train(data, "code", cfg, seed=0)
    assert res.stopping["reason"] in ("cap", "plateau") and res.stopping["steps"] <= 4
    scores = evaluate(res, problems[:3])
    assert 0.0 <= scores["accuracy"] <= 1.0 and "parse_rate" in scores and "f1_circle" in scores
    assert "correct_items" not in scores
    assert 0.0 <= scores["annotation_rate"] <= scores["givens_token_rate"] <= 1.0
    items = evaluate(res, problems[:3], per_item=True)["correct_items"]
    assert len(items) == 3 and sum(items) / 3 == scores["accuracy"]
    seen = []
    again = train(
        data, "code", cfg, seed=0, on_step=lambda k, r: seen.append((k, r.model.training))
    )
    assert again.losses == res.losses  # seeded, and the hook does not change training
    assert seen == [(k + 1, False) for k in range(len(res.losses))]


def test_vocab_and_small_input_errors(problems):
    v = Vocab.build(problems)
    assert v.decode(v.encode(["POINT", "A", "<eos>"])) == ["POINT", "A", "<eos>"]
    with pytest.raises(ValueError, match="batch_size"):
        train(problems[:2], "none", AlignConfig(batch_size=8), seed=0)


def test_probe_reports_which_images_it_reads(problems):
    from icml26.geocode.baselines import AnnotationProbe
    from icml26.shared import Plateau

    torch.set_num_threads(1)
    acc, stop = AnnotationProbe.fit_and_score(
        problems, problems[:4], seed=0, rule=Plateau(1, 1, 0.0, 2), batch_size=4, per_item=True
    )
    assert stop["steps"] <= 2 and len(stop["read_items"]) == 4
    assert acc == sum(stop["read_items"]) / 4


def test_baselines_on_the_same_data(problems):
    assert ir_oracle(problems) == 1.0  # the gold IR determines the answer
    assert 0.0 <= template_majority(problems, problems) <= 1.0
    assert question_majority(problems, problems) <= template_majority(problems, problems)


def test_grpo_rewards_are_format_and_answer(problems):
    from icml26.geocode.align import answer_token, rewards

    p = problems[0]
    gold = target_tokens(p, "code")
    assert rewards(gold, p, "code") == {"format": 1.0, "answer": 1.0, "ir": 0.0, "total": 2.0}
    wrong = [*gold[:-2], answer_token(p.answer_value + 5), "<eos>"]
    assert rewards(wrong, p, "code")["total"] == 1.0  # well formed, wrong answer
    assert rewards(gold[:-3], p, "code")["format"] == 0.0  # no answer at all
    broken = ["SEG", *gold[-3:]]  # an IR that does not parse: a format failure
    assert rewards(broken, p, "code")["format"] == 0.0
    r = rewards(gold, p, "code", ir_weight=0.5)  # the IR reward is an option
    assert r["ir"] == 1.0 and r["total"] == 2.5
    assert rewards(target_tokens(p, "none"), p, "none")["total"] == 2.0


@pytest.mark.slow
def test_grpo_after_sft_on_a_tiny_model(problems):
    from icml26.geocode.align import GRPOConfig, grpo

    torch.set_num_threads(1)
    data = problems * 2
    cfg = AlignConfig(batch_size=4, cap=4, window=2, patience=1, d_model=32, channels=(8, 8, 8))
    sft = train(data, "none", cfg, seed=0)
    before = [t.clone() for t in sft.model.parameters()]
    g = GRPOConfig(samples=4, batch_size=2, cap=3, window=1, patience=1)
    res = grpo(sft, data, g, seed=0)
    assert res.stopping["reason"] in ("cap", "plateau") and res.stopping["steps"] <= 3
    assert 0.0 <= res.stopping["reward_last"] <= 2.0
    # the SFT model is untouched, the policy moved
    assert all(torch.equal(a, b) for a, b in zip(before, sft.model.parameters(), strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(before, res.model.parameters(), strict=True))
    assert 0.0 <= evaluate(res, problems[:3])["accuracy"] <= 1.0
    again = grpo(sft, data, g, seed=0)
    assert again.losses == res.losses  # seeded
    with pytest.raises(ValueError, match="at least 2 samples"):
        grpo(sft, data, GRPOConfig(samples=1), seed=0)
