"""Tiny causal policies: causality, checkpoints in safetensors, bad specs."""

import pytest
import torch

from icml26.teamtr import PolicySpec, load_policy, make_policy, save_policy


def test_policy_is_causal_and_seeded():
    spec = PolicySpec(d_model=16, layers=1, heads=2, vocab=12)
    p = make_policy(spec, torch.Generator().manual_seed(0))
    q = make_policy(spec, torch.Generator().manual_seed(0))
    x = torch.randint(0, 12, (3, 7))
    y = x.clone()
    y[:, 5:] = (y[:, 5:] + 1) % 12
    assert torch.allclose(p(x)[:, :5], p(y)[:, :5], atol=1e-6)  # the future is not read
    assert not torch.allclose(p(x)[:, 5:], p(y)[:, 5:])
    assert torch.equal(p(x), q(x))


def test_checkpoint_roundtrip(tmp_path):
    p = make_policy(PolicySpec(d_model=16, layers=1, heads=2), torch.Generator().manual_seed(1))
    save_policy(p, tmp_path / "ck")
    names = sorted(f.name for f in (tmp_path / "ck").iterdir())
    assert names == ["config.json", "model.safetensors"]
    q = load_policy(tmp_path / "ck")
    x = torch.randint(0, 20, (2, 5))
    assert torch.equal(p(x), q(x))
    with pytest.raises(ValueError, match="safetensors"):
        load_policy(tmp_path)


def test_bad_specs_and_inputs():
    with pytest.raises(ValueError, match="divisible"):
        PolicySpec(d_model=10, heads=3)
    with pytest.raises(ValueError, match="positive integer"):
        PolicySpec(layers=0)
    p = make_policy(PolicySpec(d_model=16, layers=1, heads=2, max_len=4))
    with pytest.raises(ValueError, match="max_len"):
        p(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\[batch, time\]"):
        p(torch.zeros(5, dtype=torch.long))


@pytest.mark.slow  # importing transformers: ~10 s of CPU, minutes on a loaded machine
def test_hf_policy_behind_the_same_interface():
    pytest.importorskip("transformers")
    from icml26.shared import quiet_dependencies
    from icml26.teamtr import ProtocolGame, RoundRobinRouter, Team, rollout
    from icml26.teamtr.policies import HFPolicy

    with quiet_dependencies():
        torch.manual_seed(0)
        pols = [HFPolicy.from_config(vocab=20, d_model=16, layers=1, heads=2, max_len=16)
                for _ in range(2)]  # fmt: skip
        team = Team(["a", "b"], pols)
        task = ProtocolGame(agents=2)
        p, a = task.sample(4, torch.Generator().manual_seed(0))
        batch = rollout(team, task, p, a, group_size=2, router=RoundRobinRouter(team.names),
                        generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert batch.tokens.shape == (8, 7) and pols[0](batch.tokens).shape == (8, 7, 20)
    with pytest.raises(ValueError, match="kind"):
        HFPolicy.from_config(vocab=20, kind="bert")
