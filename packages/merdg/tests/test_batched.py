"""Stacked training equals one-run-at-a-time training (the smoke grid relies on it)."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from icml26.merdg import CoOccConfig, ModelConfig, TrainConfig, lodo_split, simulate_cooccurrence
from icml26.merdg.batched import Job, StackedNet, train_batched, train_many
from icml26.merdg.mer import mer_penalty
from icml26.merdg.models import MultimodalNet, supcon_loss
from icml26.merdg.train import train_method

NO_DROPOUT = TrainConfig(
    epochs=6,
    batch_size=30,
    lr=1e-3,
    plateau_patience=1,
    plateau_min_delta=0.3,  # the runs stop at different epochs: snapshots are exercised
    model=ModelConfig(
        encoder_hidden=16,
        embed_dim=8,
        proj_hidden=16,
        proj_dim=8,
        fusion_hidden=16,
        trans_hidden=16,
        dropout=0.0,
    ),
)


@pytest.fixture(scope="module")
def splits():
    out = []
    for target in (0, 3):
        data = simulate_cooccurrence(
            CoOccConfig(per_domain=90), target=target, rng=np.random.default_rng(target)
        )
        out.append(lodo_split(data, target, rng=np.random.default_rng(10 + target)))
    return out


@pytest.mark.parametrize(
    "methods", [("fusion", "fusion+mer"), ("simmmdg", "simmmdg+mer"), ("unimodal",)]
)
def test_stacked_runs_equal_single_runs(splits, methods):
    jobs = [Job(m, s, seed=3 + i) for i, s in enumerate(splits) for m in methods]
    stacked = train_batched(jobs, NO_DROPOUT, device="cpu")
    epochs = set()
    for job, res in zip(jobs, stacked, strict=True):
        one = train_method(job.method, job.split, NO_DROPOUT, seed=job.seed, device="cpu")
        assert res.epochs == one.epochs
        assert res.stopping["reason"] == one.stopping["reason"]
        epochs.add((res.epochs, res.stopping["reason"]))
        np.testing.assert_allclose(res.train_loss, one.train_loss, rtol=1e-3)
        assert np.abs(np.subtract(res.test_acc, one.test_acc)).max() <= 0.01
        # Adam turns round-off on (near-)zero gradients, e.g. the shift-invariant output
        # bias under MER, into steps of size lr: a few lr of slack on the parameters
        for a, b in zip(res.model.parameters(), one.model.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-3, atol=5 * NO_DROPOUT.lr)
    assert all(e <= 6 for e, _ in epochs)


def test_mixed_methods_keep_their_own_objective(splits):
    # one stack with and without MER: the run without MER is unchanged by its neighbour
    cfg = replace(NO_DROPOUT, epochs=2, plateau_min_delta=0.0)
    alone = train_batched([Job("fusion", splits[0], seed=1)], cfg, device="cpu")[0]
    mixed = train_batched(
        [Job("fusion", splits[0], seed=1), Job("fusion+mer", splits[1], seed=2)], cfg, device="cpu"
    )[0]
    np.testing.assert_allclose(alone.train_loss, mixed.train_loss, rtol=1e-5)


def test_stacked_losses_are_per_copy():
    torch.manual_seed(0)
    z = torch.randn(3, 20, 5)
    per = mer_penalty([z, 2 * z])
    assert per.shape == (3,)
    for k in range(3):
        torch.testing.assert_close(per[k], mer_penalty([z[k], 2 * z[k]]))
    f = torch.nn.functional.normalize(torch.randn(3, 20, 2, 4), dim=-1)
    y = torch.randint(0, 4, (3, 20))
    sc = supcon_loss(f, y)
    for k in range(3):
        torch.testing.assert_close(sc[k], supcon_loss(f[k], y[k]))


def test_stacked_net_round_trip():
    torch.manual_seed(0)
    models = [MultimodalNet((4, 5), 3, "simmmdg", NO_DROPOUT.model) for _ in range(2)]
    net = StackedNet(models)
    xs = [torch.randn(2, 7, 4), torch.randn(2, 7, 5)]
    net.eval()
    out = net(xs)
    for k, m in enumerate(models):
        m.eval()
        torch.testing.assert_close(out[k], m([xs[0][k], xs[1][k]]), rtol=1e-5, atol=1e-5)


def test_clear_errors(splits):
    with pytest.raises(ValueError, match="one architecture"):
        train_batched([Job("fusion", splits[0]), Job("unimodal", splits[0])], NO_DROPOUT)
    with pytest.raises(ValueError, match="elementwise"):
        train_batched([Job("fusion", splits[0])], replace(NO_DROPOUT, optimizer="lars"))
    with pytest.raises(ValueError, match="unknown method"):
        train_many([Job("deepall", splits[0])], NO_DROPOUT)
    with pytest.raises(ValueError, match="same architecture"):
        StackedNet(
            [
                MultimodalNet((4, 5), 3, "fusion", NO_DROPOUT.model),
                MultimodalNet((4, 6), 3, "fusion", NO_DROPOUT.model),
            ]
        )


def test_a_run_does_not_depend_on_its_stack_mates_with_dropout_on(splits):
    # per-run dropout generators: the same job stacked with different neighbours
    cfg = replace(
        NO_DROPOUT,
        epochs=3,
        plateau_min_delta=0.0,
        model=ModelConfig(**{**NO_DROPOUT.model.__dict__, "dropout": 0.5}),
    )
    job = Job("simmmdg", splits[0], seed=5)
    a = train_batched([job, Job("simmmdg", splits[1], seed=6)], cfg, device="cpu")[0]
    b = train_batched([Job("simmmdg", splits[1], seed=7), job], cfg, device="cpu")[1]
    np.testing.assert_allclose(a.train_loss, b.train_loss, rtol=1e-5)
    assert a.test_acc == b.test_acc
    # and the dropout draws differ between runs of different seeds
    c = train_batched([Job("simmmdg", splits[0], seed=8)], cfg, device="cpu")[0]
    assert c.train_loss != a.train_loss


def test_flat_adam_is_torch_adam():
    from icml26.merdg.batched import FlatAdam

    def make():
        torch.manual_seed(0)
        return StackedNet([MultimodalNet((4, 5), 3, "fusion", NO_DROPOUT.model) for _ in range(2)])

    a, b = make(), make()
    ref = torch.optim.Adam(a.parameters(), lr=1e-2, weight_decay=1e-3, foreach=True)
    flat = FlatAdam(b.parameters(), lr=1e-2, weight_decay=1e-3)
    gen = torch.Generator().manual_seed(1)
    for _ in range(5):
        grads = [torch.randn(p.shape, generator=gen) for p in a.parameters()]
        for p, g in zip(a.parameters(), grads, strict=True):
            p.grad = g.clone()
        flat.zero_grad()
        for p, g in zip(b.parameters(), grads, strict=True):
            p.grad.add_(g)  # gradients land in the flat buffer
        ref.step()
        flat.step()
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-7)
    assert (
        float((flat.flat - torch.cat([p.detach().flatten() for p in b.parameters()])).abs().max())
        == 0
    )
