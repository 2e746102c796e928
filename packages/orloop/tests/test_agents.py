import numpy as np
import pytest

from icml26.orloop import (
    GreedyDropAgent,
    GRPOConfig,
    LearnedPolicy,
    MinimalRepairAgent,
    RandomAgent,
    RegenerateAgent,
    evaluate,
    generate,
    summarize,
    train_grpo,
)


@pytest.fixture(scope="module")
def instances():
    return list(generate(10, seed=11, milp_fraction=0.2))


def test_scripted_baselines(instances):
    droppable = [i for i in instances if i.iis.rows]
    bound_only = [i for i in instances if not i.iis.rows]
    assert bound_only and all(i.error_type == "H" for i in bound_only)  # the official type H
    greedy = summarize(evaluate(GreedyDropAgent(), droppable))
    regen = summarize(evaluate(RegenerateAgent(), droppable))
    minimal = summarize(evaluate(MinimalRepairAgent(), instances))
    assert greedy["RR"] == 1.0 and regen["RR"] == 1.0 and minimal["RR"] == 1.0
    assert regen["RR@1"] == 1.0 and regen["DA"] == 1.0  # it removes every IIS row at once
    # no row to drop: dropping agents cannot repair a bound-only IIS, minimal repair can
    assert summarize(evaluate(GreedyDropAgent(), bound_only))["RR"] == 0.0
    assert summarize(evaluate(MinimalRepairAgent(), bound_only))["OP"] == pytest.approx(1.0)
    assert minimal["FP"] == 1.0  # minimal repair moves bounds, it never drops rows
    rand = summarize(evaluate(RandomAgent(0), instances))
    assert rand["DA"] < regen["DA"]


def test_grpo_learns_and_the_policy_round_trips(instances, tmp_path):
    policy, history = train_grpo(
        instances[:6], GRPOConfig(iterations=6, group_size=4, problems_per_batch=3, seed=1)
    )
    assert len(history) == 6 and any(h["groups_used"] for h in history)
    assert np.any(policy.theta != 0) and np.any(policy.phi != 0)
    back = LearnedPolicy.load(policy.save(tmp_path / "policy.json"))
    np.testing.assert_array_equal(back.theta, policy.theta)
    res = summarize(evaluate(back, instances[6:]))
    assert res["RR"] == 1.0
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a policy JSON"):
        LearnedPolicy.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="entries"):
        LearnedPolicy(np.zeros(3))


def test_grpo_stops_on_a_training_reward_plateau(instances):
    cfg = GRPOConfig(
        iterations=40, group_size=4, problems_per_batch=3, seed=2, patience=2, min_delta=50.0
    )
    _, history = train_grpo(instances[:4], cfg)
    assert len(history) == 3  # no smoothed gain of 50 reward points: stop after patience 2
    assert all("smoothed" in h for h in history)
    with pytest.raises(ValueError, match="patience"):
        train_grpo(instances[:2], GRPOConfig(patience=0))
