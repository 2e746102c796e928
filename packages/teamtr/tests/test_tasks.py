"""Tasks, verifiers and the loaders (JSONL; the official multi_agent_turn Parquet)."""

import json

import pytest
import torch

from icml26.teamtr import (
    ModularChain,
    ProtocolGame,
    TextTask,
    exact_match,
    load_jsonl,
    load_multi_agent_turn,
)
from icml26.teamtr.tasks import FIRST


def _score_demos(task, noise, n=2000):
    d = task.demonstrations(n, torch.Generator().manual_seed(0), noise)
    prompts = d.tokens[:, 1 : 1 + task.prompt_len]
    if isinstance(task, ProtocolGame):
        answers = (FIRST + task.target(prompts - FIRST)).tolist()
    else:
        answers = (FIRST + (prompts - FIRST).sum(1) % task.base).tolist()
    rewards, errors = task.score(d.tokens, d.owner, answers)
    return rewards.mean().item(), errors


@pytest.mark.parametrize("task", [ProtocolGame(3), ProtocolGame(5), ModularChain(3)])
def test_demonstrations_follow_a_consistent_protocol(task):
    assert _score_demos(task, 0.0)[0] == 1.0
    chance = 1 / task.base
    assert abs(_score_demos(task, 1.0)[0] - chance) < 0.05  # random messages: chance


def test_protocol_game_hides_digits_after_the_first_turn():
    task = ProtocolGame(agents=3)
    assert task.visible_mask().tolist() == [[True, True], [False, False], [False, False]]
    prompts, answers = task.all_prompts()
    assert len(prompts) == 16 and sorted(set(answers)) == [4, 5, 6, 7]
    # the answer is uniform over the base: a listener that sees only a useless message
    # is at chance 1/4
    assert torch.bincount(torch.tensor(answers) - FIRST).tolist() == [4, 4, 4, 4]
    with pytest.raises(ValueError, match="2 agents"):
        ProtocolGame(agents=1)


def test_raising_verifier_scores_zero_and_is_counted():
    calls = []

    def flaky(row, answer):
        calls.append(row)
        if len(calls) % 2:
            raise RuntimeError("boom")
        return 1.0

    task = ProtocolGame(agents=2, verifier=flaky)
    d = task.demonstrations(10, torch.Generator().manual_seed(0), 0.0)
    rewards, errors = task.score(d.tokens, d.owner, [0] * 10)
    assert errors == 5 and rewards.tolist() == [0.0, 1.0] * 5


def test_text_task_needs_a_verifier(tmp_path):
    with pytest.raises(ValueError, match="needs a verifier"):
        TextTask(["p"], ["a"], None)
    with pytest.raises(TypeError, match="callable"):
        TextTask(["p"], ["a"], "exact")
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(json.dumps({"prompt": f"{i}+1=", "answer": i + 1}) for i in range(3)))
    task = load_jsonl(path, verifier=exact_match)
    assert len(task) == 3 and task.answers == [1, 2, 3]
    scores, errors = task.score_texts(["1", " 2 ", "x"], task.answers)
    assert scores == [1.0, 1.0, 0.0] and errors == 0
    with pytest.raises(ValueError, match="needs a verifier"):
        load_jsonl(path)
    (tmp_path / "bad.jsonl").write_text('{"prompt": "x"}\n')
    with pytest.raises(ValueError, match="'answer'"):
        load_jsonl(tmp_path / "bad.jsonl", verifier=exact_match)


def _write_fixture(path, drop=None, flat=False):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    cols = {
        "context": ["Q: 2+3?", "Q: 2+3?\nplan: add", "Q: 1+1?"],
        "response": ["plan: add", "5", "2"],
        "agent_id": ["planner", "solver", "solver"],
        "turn_id": [0, 1, 0],
        "conversation_id": ["c1", "c1", "c0"],
    }
    truth = ["5", "5", "2"]
    if flat:
        cols["reward_model.ground_truth"] = truth
    else:
        cols["reward_model"] = [{"style": "rule", "ground_truth": t} for t in truth]
    if drop:
        cols.pop(drop)
    pq.write_table(pa.table(cols), path)


@pytest.mark.parametrize("flat", [False, True])
def test_multi_agent_turn_parquet_loads(tmp_path, flat):
    path = tmp_path / "train.parquet"
    _write_fixture(path, flat=flat)
    recs = load_multi_agent_turn(path)
    assert [(r.conversation_id, r.turn_id, r.agent_id) for r in recs] == [
        ("c0", 0, "solver"), ("c1", 0, "planner"), ("c1", 1, "solver"),
    ]  # fmt: skip
    assert recs[2].context.endswith("plan: add") and recs[2].ground_truth == "5"


@pytest.mark.parametrize("drop", ["agent_id", "turn_id", "reward_model"])
def test_multi_agent_turn_missing_column_is_named(tmp_path, drop):
    path = tmp_path / "bad.parquet"
    _write_fixture(path, drop=drop)
    missing = "reward_model.ground_truth" if drop == "reward_model" else drop
    with pytest.raises(ValueError, match=f"missing column.*{missing}"):
        load_multi_agent_turn(path)
