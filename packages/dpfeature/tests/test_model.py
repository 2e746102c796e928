import pytest
import torch

from icml26.dpfeature import TwoLayerCNN, forward, init_weights, make_multipatch
from icml26.dpfeature.model import check_q


def test_functional_and_module_forward_agree_and_second_layer_is_fixed():
    g = torch.Generator().manual_seed(1)
    data = make_multipatch(12, 50, 3.0, generator=g)
    w = init_weights(4, 50, 0.5, generator=g)
    net = TwoLayerCNN.from_weights(w)
    assert torch.allclose(net(data.x), forward(w, data.x), atol=1e-5)
    # only the filters are trainable; an optimiser step leaves ±1/m untouched
    assert [n for n, _ in net.named_parameters()] == ["filters.weight"]
    signs = net.signs.clone()
    torch.nn.functional.softplus(-data.y * net(data.x)).mean().backward()
    with torch.no_grad():
        for p in net.parameters():
            p -= 0.1 * p.grad
    assert torch.equal(net.signs, signs)
    assert torch.allclose(signs, torch.tensor([0.25] * 4 + [-0.25] * 4))


def test_forward_is_f_plus_minus_f_minus_by_hand():
    w = torch.zeros(2, 1, 3)
    w[0, 0, 0], w[1, 0, 1] = 2.0, 1.0
    x = torch.tensor([[[1.0, 0.0, 0.0], [0.0, -3.0, 5.0]]])
    # F₊ = relu(2)³ + relu(0)³ = 8, F₋ = relu(0)³ + relu(−3)³ = 0
    assert forward(w, x).item() == pytest.approx(8.0)
    x[0, 1, 1] = 2.0
    assert forward(w, x).item() == pytest.approx(0.0)  # F₋ = 2³ = 8


@pytest.mark.parametrize("q", [2, 1.5, -1])
def test_q_must_exceed_two(q):
    with pytest.raises(ValueError, match="q must be > 2"):
        check_q(q)
