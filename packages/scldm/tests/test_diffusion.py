"""Flow matching, condition dropout, multi-conditional guidance and the ODE solvers."""

from __future__ import annotations

import math

import pytest
import torch

from icml26.scldm import DiT, DiTConfig, flow_matching_loss, guided_velocity, solve_ode

VOCAB = {"cell_type": 3, "perturbation": 2}


def _dit(strategy: str = "mutually_exclusive", cfg_dropout: float = 0.5) -> DiT:
    torch.manual_seed(0)
    net = DiT(
        4,
        6,
        VOCAB,
        DiTConfig(
            n_embed=32, n_layer=2, n_head=4, cfg_dropout=cfg_dropout, condition_strategy=strategy
        ),
    )
    # adaLN-Zero starts at v = 0; perturb the zero-initialised layers so outputs differ
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return net.eval()


def _inputs(b: int = 5):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(b, 4, 6, generator=gen)
    t = torch.rand(b, generator=gen)
    cond = {
        "cell_type": torch.tensor([0, 1, 2, 0, 1]),
        "perturbation": torch.tensor([1, 0, 1, 1, 0]),
    }
    return x, t, cond


@pytest.mark.parametrize("strategy", ["mutually_exclusive", "joint"])
def test_guidance_weight_zero_is_unconditional(strategy):
    net = _dit(strategy)
    x, t, cond = _inputs()
    with torch.no_grad():
        v_u = guided_velocity(net, x, t, None)
        v_0 = guided_velocity(net, x, t, cond, {"cell_type": 0.0, "perturbation": 0.0})
        v_1 = guided_velocity(net, x, t, cond, {"cell_type": 1.0, "perturbation": 1.0})
    torch.testing.assert_close(v_0, v_u, atol=1e-6, rtol=1e-6)
    assert (v_1 - v_u).abs().max() > 1e-3


def test_mutually_exclusive_guidance_combines_attribute_directions():
    net = _dit()
    x, t, cond = _inputs()
    with torch.no_grad():
        v_u = net(x, t, {})
        v_ct = net(x, t, {"cell_type": cond["cell_type"]})
        v_pt = net(x, t, {"perturbation": cond["perturbation"]})
        guided = guided_velocity(net, x, t, cond, {"cell_type": 2.0, "perturbation": 0.5})
    torch.testing.assert_close(
        guided, v_u + 2.0 * (v_ct - v_u) + 0.5 * (v_pt - v_u), atol=1e-5, rtol=1e-5
    )


def test_joint_guidance_uses_mean_weight():
    net = _dit("joint")
    x, t, cond = _inputs()
    with torch.no_grad():
        v_u, v_c = net(x, t, {}), net(x, t, cond)
        guided = guided_velocity(net, x, t, cond, {"cell_type": 1.0, "perturbation": 2.0})
    torch.testing.assert_close(guided, v_u + 1.5 * (v_c - v_u), atol=1e-5, rtol=1e-5)


def test_condition_dropout_strategies():
    gen = torch.Generator().manual_seed(0)
    _, _, cond = _inputs()
    me = _dit("mutually_exclusive", cfg_dropout=0.0).drop_conditions(cond, gen)
    kept = [k for k in VOCAB if torch.equal(me[k], cond[k])]
    nulled = [k for k in VOCAB if torch.all(me[k] == VOCAB[k])]
    assert len(kept) == 1 and len(nulled) == 1  # one attribute per batch
    joint = _dit("joint", cfg_dropout=1.0).drop_conditions(cond, gen)
    assert all(torch.all(joint[k] == VOCAB[k]) for k in VOCAB)
    joint = _dit("joint", cfg_dropout=0.5).drop_conditions(
        {k: v.repeat(40) for k, v in cond.items()}, gen
    )
    same = (joint["cell_type"] == VOCAB["cell_type"]) == (
        joint["perturbation"] == VOCAB["perturbation"]
    )
    assert same.all() and 0 < (joint["cell_type"] == 3).sum() < 200  # dropped together


def test_flow_matching_loss_trains():
    torch.manual_seed(0)
    net = DiT(4, 6, VOCAB, DiTConfig(n_embed=32, n_layer=1, n_head=4, cfg_dropout=0.2)).train()
    opt = torch.optim.AdamW(net.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    z1 = torch.randn(64, 4, 6, generator=gen) * 0.1 + 2.0  # a narrow cluster far from the noise
    cond = {
        "cell_type": torch.zeros(64, dtype=torch.long),
        "perturbation": torch.zeros(64, dtype=torch.long),
    }
    losses = []
    for _ in range(60):
        loss = flow_matching_loss(net, z1, cond, gen)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] > 3.0 and sum(losses[-10:]) / 10 < 0.5 * losses[0]


@pytest.mark.parametrize(
    ("solver", "steps", "tol"), [("euler", 200, 5e-3), ("heun", 20, 1e-3), ("dopri5", 1, 1e-4)]
)
def test_solvers_integrate_a_linear_field(solver, steps, tol):
    x0 = torch.tensor([[1.0, -2.0]], dtype=torch.float64)
    x1, nfe = solve_ode(lambda x, t: -x, x0, solver=solver, steps=steps)
    torch.testing.assert_close(x1, x0 * math.exp(-1.0), atol=tol, rtol=tol)
    assert nfe >= (steps if solver == "euler" else 2)


def test_solver_rejects_unknown_method():
    with pytest.raises(ValueError, match="solver"):
        solve_ode(lambda x, t: x, torch.zeros(1, 2), solver="rk4")
