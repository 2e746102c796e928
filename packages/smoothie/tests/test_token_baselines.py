"""D3PM and Diffusion-LM: posteriors against explicit matrices, losses, sampling."""

import numpy as np
import pytest
import torch

from icml26.smoothie import D3PM, DenoiserConfig, SynonymTask, TrainConfig, synonym_task

CFG = DenoiserConfig(
    embed_dim=16, hidden=16, heads=2, layers=2, encoder_layers=1, max_len=6, max_src_len=6,
    mlp_ratio=2.0,
)  # fmt: skip


@pytest.fixture(scope="module")
def data():
    task = SynonymTask(concepts=8, synonyms=2, dim=16, max_len=6, min_len=2, n_train=256, n_test=16)
    return synonym_task(task, np.random.default_rng(0))


def _matrices(model: D3PM, s: float, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Q̄_s (rows x_0) and Q_{t|s} (rows x_s) built as explicit K × K matrices."""
    k = model.states
    m = model._stationary(torch.device("cpu")).numpy()
    ab_s = float(model.alpha_bar(torch.tensor(s)))
    ab_t = float(model.alpha_bar(torch.tensor(t)))
    q_bar_s = ab_s * np.eye(k) + (1 - ab_s) * m[None, :]
    a = ab_t / ab_s
    q_ts = a * np.eye(k) + (1 - a) * m[None, :]
    return q_bar_s, q_ts


@pytest.mark.parametrize("kind", ["uniform", "absorbing"])
def test_posterior_equals_bayes_with_explicit_matrices(data, kind):
    model = D3PM(CFG, data.embeddings, kind=kind)
    k = model.states
    s, t = 0.3, 0.45
    q_bar_s, q_ts = _matrices(model, s, t)
    rng = np.random.default_rng(1)
    x0 = rng.dirichlet(np.ones(k), size=(1, 3))
    if kind == "absorbing":
        x0[..., -1] = 0.0
        x0 /= x0.sum(-1, keepdims=True)
    xt = np.array([[0, 3, k - 1]])
    got = model._reverse(
        torch.tensor(x0), torch.tensor(xt), torch.tensor([s]), torch.tensor([t])
    ).numpy()
    for j in range(3):
        want = q_ts[:, xt[0, j]] * (x0[0, j] @ q_bar_s)
        np.testing.assert_allclose(got[0, j], want / want.sum(), atol=1e-12)


@pytest.mark.parametrize("kind", ["uniform", "absorbing"])
def test_corruption_keeps_tokens_at_rate_alpha_bar(data, kind):
    model = D3PM(CFG, data.embeddings, kind=kind)
    x0 = torch.full((4000, 6), 2)
    t = torch.full((4000,), 0.5, dtype=torch.float64)
    xt = model.corrupt(x0, t, torch.Generator().manual_seed(0))
    ab = float(model.alpha_bar(torch.tensor(0.5)))
    kept = float((xt == 2).double().mean())
    # uniform noise lands on token 2 with probability 1/V as well
    want = ab + (1 - ab) / model.vocab if kind == "uniform" else ab
    assert kept == pytest.approx(want, abs=0.01)
    if kind == "absorbing":
        assert set(xt.unique().tolist()) <= {2, model.vocab}


def test_a_perfect_prediction_has_zero_kl(data):
    model = D3PM(CFG, data.embeddings, kind="uniform")
    x0 = torch.tensor([[1, 4, 2]])
    onehot = torch.nn.functional.one_hot(x0, model.states).double()
    xt = torch.tensor([[1, 0, 5]])
    s, t = torch.tensor([0.2]), torch.tensor([0.25])
    q = model._reverse(onehot, xt, s, t)
    p = model._reverse(onehot.clone(), xt, s, t)
    assert torch.allclose(q, p)
    assert torch.allclose(q.sum(-1), torch.ones(1, 3, dtype=torch.float64))


@pytest.mark.parametrize("kind", ["uniform", "absorbing"])
def test_trains_and_samples_real_tokens(data, kind):
    cfg = TrainConfig(
        lr=3e-3, warmup=5, batch_size=32, ema=0.0, window=5, patience=1, min_delta=0.0, cap=8
    )
    src, mask = data.train_src, data.mask(data.train_src)
    model = D3PM(CFG, data.embeddings, kind=kind)
    loss = model.loss(data.train_trg[:16], src[:16], mask[:16], torch.Generator().manual_seed(0))
    loss.backward()
    assert torch.isfinite(loss)
    grads = [p.grad for p in model.model.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)
    res = model.fit(data.train_trg, src, mask, cfg, seed=0)
    assert res.stopping["steps"] <= 8
    out = model.sample(
        length=6, src=data.test_src[:4], src_mask=data.mask(data.test_src[:4]), steps=5,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert out.shape == (4, 6)
    assert ((out >= 0) & (out < model.vocab)).all()  # no [MASK] left, ids in range


def test_bad_arguments_get_clear_errors(data):
    with pytest.raises(ValueError, match="kind must be one of"):
        D3PM(CFG, data.embeddings, kind="gaussian")
    with pytest.raises(ValueError, match="T must be"):
        D3PM(CFG, data.embeddings, train_steps=0)
    with pytest.raises(TypeError, match="train_steps"):
        D3PM(CFG, data.embeddings, train_steps=2.5)
    model = D3PM(CFG, data.embeddings)
    with pytest.raises(ValueError, match="N must be"):
        model.sample(length=6, src=data.test_src[:2], steps=0)


def test_diffusion_lm_learns_its_table_and_rounds(data):
    from icml26.smoothie import DiffusionLM
    from icml26.smoothie.diffusion_lm import sqrt_alpha_bar

    ab = sqrt_alpha_bar(torch.linspace(0, 1, 11))
    assert float(ab[0]) == pytest.approx(0.99) and float(ab[-1]) == 0.0
    assert bool((ab[1:] <= ab[:-1]).all())
    cfg = TrainConfig(
        lr=3e-3, warmup=5, batch_size=32, ema=0.0, window=5, patience=1, min_delta=0.0, cap=8
    )
    src, mask = data.train_src, data.mask(data.train_src)
    model = DiffusionLM(CFG, data.embeddings)
    before = model.model.table.detach().clone()
    model.fit(data.train_trg, src, mask, cfg, seed=0)
    assert not torch.equal(before, model.model.table.detach())  # the embeddings are learned
    assert torch.equal(data.embeddings, before)  # the task's table is untouched
    out = model.sample(length=6, src=data.test_src[:4], src_mask=data.mask(data.test_src[:4]),
                       steps=3, generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert out.shape == (4, 6) and ((out >= 0) & (out < len(data.vocab))).all()
    with pytest.raises(ValueError, match="embed_dim"):
        DiffusionLM(DenoiserConfig(embed_dim=8, hidden=16, heads=2, layers=2), data.embeddings)


def test_retrieval_returns_the_target_of_the_closest_training_source(data):
    from icml26.smoothie.baselines import retrieve_target

    c = data.concept_of
    out = retrieve_target(data.train_src[:5], data.train_src, data.train_trg)
    # exact sources retrieve their own targets (or a duplicate source's: same concepts)
    assert torch.equal(c[out], c[data.train_trg[:5]])
    # on concepts: a synonym-swapped source still finds its pair
    swapped = data.train_src[:5].clone()
    content = swapped >= 2
    swapped[content] = 2 + (swapped[content] - 2) // 2 * 2 + (1 - (swapped[content] - 2) % 2)
    assert not torch.equal(swapped, data.train_src[:5])
    got = retrieve_target(swapped, data.train_src, data.train_trg, concept_of=data.concept_of)
    assert torch.equal(c[got], c[data.train_trg[:5]])
    with pytest.raises(ValueError, match="shapes"):
        retrieve_target(data.test_src[:, :3], data.train_src, data.train_trg)
    with pytest.raises(TypeError, match="token ids"):
        retrieve_target(data.test_src.float(), data.train_src, data.train_trg)
