"""The connectivity score: |θ|, an all-ones float64 input, exact rescaling, both sign variants."""

import itertools
import math

import pytest
import torch

from icml26.samerging import (
    BertPath,
    ChainPath,
    connectivity_gradient,
    path_mass,
    path_score,
    sa_merge,
)


def _chain(seed=0, widths=(5, 7, 6, 3), bias=True):
    g = torch.Generator().manual_seed(seed)
    state = {}
    for i, (a, b) in enumerate(itertools.pairwise(widths)):
        state[f"l{i}.weight"] = torch.randn(b, a, generator=g)
        if bias:
            state[f"l{i}.bias"] = torch.randn(b, generator=g)
    layers = tuple((f"l{i}.weight", f"l{i}.bias" if bias else None) for i in range(len(widths) - 1))
    return state, layers


def test_path_mass_is_synflow_on_absolute_weights_and_ones_float64():
    state, layers = _chain(bias=False, widths=(4, 5, 3))
    w0, w1 = state["l0.weight"], state["l1.weight"]
    mass = path_mass(ChainPath(layers, rescale=False), state)
    # R = 1ᵀ|W1||W0|1:  ∂R/∂|W0|_ij = (1ᵀ|W1|)_i,  ∂R/∂|W1|_ij = (|W0| 1)_j
    want0 = w1.abs().sum(0).double()[:, None].expand(5, 4)
    want1 = w0.abs().sum(1).double()[None, :].expand(3, 5)
    assert mass["l0.weight"].dtype == torch.float64
    torch.testing.assert_close(mass["l0.weight"], want0)
    torch.testing.assert_close(mass["l1.weight"], want1)
    # signs of the weights do not matter: the score uses |θ|
    flipped = {k: -v for k, v in state.items()}
    torch.testing.assert_close(
        path_mass(ChainPath(layers, rescale=False), flipped)["l0.weight"], want0
    )
    r = float((w1.abs().double() @ w0.abs().double() @ torch.ones(4, dtype=torch.float64)).sum())
    assert path_score(ChainPath(layers), state) == pytest.approx(math.log(r), rel=1e-12)


def test_rescaling_scales_every_gradient_by_one_constant():
    state, layers = _chain(seed=1)
    plain = path_mass(ChainPath(layers, rescale=False), state)
    scaled = path_mass(ChainPath(layers, rescale=True), state)
    ratios = [float((plain[k] / scaled[k]).flatten()[0]) for k in plain]
    for k in plain:
        torch.testing.assert_close(plain[k], scaled[k] * ratios[0], rtol=1e-10, atol=0)
    assert path_score(ChainPath(layers, rescale=False), state) == pytest.approx(
        path_score(ChainPath(layers, rescale=True), state), rel=1e-12
    )
    assert not math.isclose(ratios[0], 1.0)  # the rescaling did act


def test_per_tensor_topk_unchanged_under_per_layer_rescaling():
    base, layers = _chain(seed=2, widths=(6, 8, 8, 4))
    g = torch.Generator().manual_seed(3)
    experts = [
        {k: v + 0.3 * torch.randn(v.shape, generator=g) for k, v in base.items()} for _ in range(3)
    ]
    masks = [
        sa_merge(base, experts, path=ChainPath(layers, rescale=r), iterations=4).masks
        for r in (True, False)
    ]
    for a, b in zip(*masks, strict=True):
        for k in a:
            assert torch.equal(a[k], b[k]), k


def test_sign_variants():
    base, layers = _chain(seed=4)
    tau = {k: 0.5 * torch.randn_like(v) for k, v in base.items()}
    path = ChainPath(layers)
    lit = connectivity_gradient(path, base, tau, saliency="literal")
    sa = connectivity_gradient(path, base, tau, saliency="sign_aware")
    for k in base:
        assert torch.equal(lit[k].abs(), sa[k].abs())
        torch.testing.assert_close(torch.sign(sa[k]), torch.sign(tau[k]).double())
        torch.testing.assert_close(torch.sign(lit[k]), torch.sign(base[k] + tau[k]).double())
    with pytest.raises(ValueError, match="saliency"):
        connectivity_gradient(path, base, tau, saliency="both")


def test_bert_path_is_finite_on_a_minilm_sized_block():
    g = torch.Generator().manual_seed(0)
    h, inter, layers = 384, 1536, 2
    path = BertPath(num_layers=layers)
    shapes = {"query": (h, h), "key": (h, h), "value": (h, h), "dense": (h, h)}
    state = {}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for mod in ("attention.self.query", "attention.self.key", "attention.self.value",
                    "attention.output.dense"):  # fmt: skip
            state[p + mod + ".weight"] = 0.05 * torch.randn(*shapes["query"], generator=g)
            state[p + mod + ".bias"] = 0.01 * torch.randn(h, generator=g)
        state[p + "intermediate.dense.weight"] = 0.05 * torch.randn(inter, h, generator=g)
        state[p + "intermediate.dense.bias"] = torch.zeros(inter)
        state[p + "output.dense.weight"] = 0.05 * torch.randn(h, inter, generator=g)
        state[p + "output.dense.bias"] = torch.zeros(h)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            state[p + ln + ".weight"] = torch.ones(h)
            state[p + ln + ".bias"] = torch.zeros(h)
    assert set(path.keys) == set(state)
    assert math.isfinite(path_score(path, state))
    mass = path_mass(path, state)
    for k, v in mass.items():
        assert torch.isfinite(v).all(), k
    assert all(float(mass[k].max()) > 0 for k in state if not k.endswith("output.dense.bias"))
