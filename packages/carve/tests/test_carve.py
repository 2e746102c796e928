from dataclasses import replace

import numpy as np
import pytest
import torch

from icml26.carve import CARVE, ContinualRouter, with_strategy
from icml26.carve.batching import DomainBatchSampler


def test_carve_learns_a_stream_and_fills_the_accuracy_matrix(tiny_hub, tiny_features, fast_train):
    _, xs_train, xs_test = tiny_features
    learner = ContinualRouter(tiny_hub, xs_train[0].shape[1], train=fast_train, strategy=CARVE,
                              seed=0, device="cpu")  # fmt: skip
    acc = learner.fit_stream(xs_train, xs_test)
    n_dom = len(tiny_hub.domains)
    d = acc.values["domain"]
    assert np.all(np.isfinite(np.tril(d))) and np.all(np.isnan(d[np.triu_indices(3, 1)]))
    assert d[0, 0] > 3 / n_dom  # well above chance after the first experience
    assert acc.average("domain") >= acc.average("family") >= acc.average("model")
    # the coreset buffer holds ~10 % of each past experience
    sizes = [len(e.train) for e in tiny_hub.experiences]
    assert 0 < learner.buffer_size <= sum(int(0.1 * s) for s in sizes)
    assert learner.router.num_models == tiny_hub.n_registered(2)


def test_experiences_must_arrive_in_order(tiny_hub, tiny_features, fast_train):
    _, xs_train, _ = tiny_features
    learner = ContinualRouter(
        tiny_hub,
        xs_train[0].shape[1],
        train=fast_train,
        strategy=with_strategy(CARVE, replay=None),
        device="cpu",
    )
    with pytest.raises(ValueError, match="in order"):
        learner.learn(1, xs_train[1])
    with pytest.raises(ValueError, match="rows"):
        learner.learn(0, xs_train[0][:5])


def test_semantic_batches_mix_few_domains_and_cover_every_example():
    domains = np.repeat(np.arange(6), [40, 30, 20, 10, 5, 5])
    sampler = DomainBatchSampler(domains, 16, domains_per_batch=2, seed=0)
    batches = list(sampler)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(domains)))
    assert np.mean([len(np.unique(domains[b])) <= 3 for b in batches]) > 0.8
    assert list(sampler) != batches  # a new epoch reshuffles


def test_hard_negatives_fill_their_slots_after_training(tiny_hub, tiny_features, fast_train):
    """Mined over the whole training set, hard negatives take most of their k_hard slots
    once mining has run (not a pre-filled cache)."""
    _, xs_train, _ = tiny_features
    learner = ContinualRouter(tiny_hub, xs_train[0].shape[1], train=fast_train, strategy=CARVE,
                              seed=0, device="cpu")  # fmt: skip
    learner.learn(0, xs_train[0])
    h = learner.history[0]
    spec = fast_train.candidates
    share_if_full = spec.k_hard / (spec.k_total - 1)
    steps = h["steps"]
    mined_steps = steps - fast_train.mine_every  # steps after the first mining
    assert mined_steps > 0
    # every gold model of the experience has a mined list
    assert h["mined_models"] == len(np.unique(tiny_hub.experiences[0].train.model))
    assert h["hard_share"] >= 0.8 * share_if_full * mined_steps / steps
    assert h["hard_share"] <= share_if_full + 1e-9


def test_convergence_rule_stops_on_a_training_loss_plateau(tiny_hub, tiny_features, fast_train):
    _, xs_train, _ = tiny_features
    rule = replace(fast_train, epochs=2, max_epochs=40, patience=2, tol=0.05)
    learner = ContinualRouter(tiny_hub, xs_train[0].shape[1], train=rule,
                              strategy=with_strategy(CARVE, replay=None), seed=0,
                              device="cpu")  # fmt: skip
    learner.learn(0, xs_train[0])
    h = learner.history[0]
    assert 2 <= h["epochs"] < 40  # stopped by the plateau, not the cap
    losses = h["losses"]
    assert len(losses) == h["epochs"]
    best = min(losses[:-2])
    assert all(v >= best * (1 - 0.05) for v in losses[-2:])  # the last 2 did not improve
    with pytest.raises(ValueError, match="max_epochs"):
        replace(fast_train, epochs=5, max_epochs=3)


def test_each_phase_stops_on_its_own_plateau(tiny_hub, tiny_features, fast_train):
    """Experience 2 under the rule: phase 1 (anchored objective) ends on its plateau or
    at 40 % of max_epochs, then phase 2 runs to its own rule; the training error over
    every registered model is recorded per epoch."""
    _, xs_train, _ = tiny_features
    rule = replace(fast_train, epochs=2, max_epochs=20, patience=2, tol=0.05,
                   lr_schedule="constant")  # fmt: skip
    learner = ContinualRouter(tiny_hub, xs_train[0].shape[1], train=rule, strategy=CARVE,
                              seed=0, device="cpu")  # fmt: skip
    learner.learn(0, xs_train[0])
    learner.learn(1, xs_train[1])
    h0, h1 = learner.history
    assert h0["phase1_stopping"] is None and h0["phase1_losses"] == []
    p1 = h1["phase1_stopping"]
    assert p1["reason"] in ("plateau", "cap") and 1 <= p1["steps"] <= 8  # 40 % of 20
    assert len(h1["phase1_losses"]) == p1["steps"]
    assert h1["epochs"] == p1["steps"] + len(h1["losses"])  # phase 2 follows phase 1
    assert h1["stopping"]["reason"] in ("plateau", "cap") and h1["epochs"] <= 20
    errs = h1["train_errors"]
    assert len(errs) == h1["epochs"] and all(0 <= e <= 1 for e in errs)
    assert errs[-1] < errs[0]  # phase 2 learns the new models
    with pytest.raises(ValueError, match="lr_schedule"):
        replace(fast_train, lr_schedule="cosine")


def test_bad_training_rows_are_rejected_before_training(tiny_hub, tiny_features, fast_train):
    _, xs_train, _ = tiny_features
    learner = ContinualRouter(tiny_hub, xs_train[0].shape[1], train=fast_train, device="cpu")
    x = xs_train[0].copy()
    x[3, 0] = np.nan
    with pytest.raises(ValueError, match=r"experience 0.*NaN"):
        learner.learn(0, x)
    x[3] = 0.0
    with pytest.raises(ValueError, match="all-zero"):
        learner.learn(0, x)
    with pytest.raises(TypeError, match="backbone"):
        learner.learn(0, np.ones_like(xs_train[0], dtype=np.int64))
    assert learner.experiences_seen == 0
    assert np.isfinite(learner.router.model_embeddings.weight.detach().numpy()).all()


def test_rule_does_not_stop_on_a_loss_at_the_uniform_guess(tiny_hub, tiny_features, fast_train):
    """A router that cannot learn (every learning rate 0) keeps a loss above log K: the
    rule skips such epochs and runs to the cap instead of calling it a plateau."""
    _, xs_train, _ = tiny_features
    frozen = replace(fast_train, epochs=2, max_epochs=6, lr_scale=0.0, lr_schedule="constant")
    learner = ContinualRouter(tiny_hub, xs_train[0].shape[1], train=frozen,
                              strategy=with_strategy(CARVE, replay=None), seed=0,
                              device="cpu")  # fmt: skip
    learner.learn(0, xs_train[0])
    h = learner.history[0]
    k = min(fast_train.candidates.k_total, tiny_hub.n_registered(0))
    assert min(h["losses"]) >= np.log(k)  # the precondition: never below the uniform guess
    assert h["epochs"] == 6 and h["stopping"]["reason"] == "cap"
    assert h["epochs_above_chance"] == 6


def test_ewc_fisher_uses_small_batches_and_the_penalty_bites(tiny_hub, tiny_features, fast_train):
    """The official Fisher averages squared gradients of batches of 4: with the training
    batch instead, disagreeing per-example gradients cancel and the penalty shrinks."""
    from icml26.carve.baselines import EWC

    _, xs_train, _ = tiny_features
    learner = ContinualRouter(tiny_hub, xs_train[0].shape[1], train=fast_train, strategy=EWC,
                              seed=0, device="cpu")  # fmt: skip
    learner.learn(0, xs_train[0])
    split = tiny_hub.experiences[0].train
    n = tiny_hub.n_registered(0)
    small = learner._fisher(xs_train[0], split.model, split.domain, n)
    learner.strategy = with_strategy(EWC, ewc_fisher_batch=fast_train.batch_size)
    large = learner._fisher(xs_train[0], split.model, split.domain, n)
    total_small = sum(float(f.sum()) for f in small.values())
    total_large = sum(float(f.sum()) for f in large.values())
    assert total_small > 2 * total_large > 0
    with torch.no_grad():
        assert float(learner.ewc.penalty(learner.router)) == 0.0  # at the consolidated point
        learner.router.projection.weight.add_(0.01)
        assert float(learner.ewc.penalty(learner.router)) > 0.0
    with pytest.raises(ValueError, match="ewc_fisher_batch"):
        with_strategy(EWC, ewc_fisher_batch=0)


def test_recorded_training_error_scores_the_current_rows(tiny_hub, tiny_features, fast_train):
    """The per-epoch training error is computed against the rows as they are after the
    epoch: the fused optimizer writes them without bumping their version counter, so the
    trainer must drop the cached normalised registry after every step (0.6.0 did not,
    and its recorded errors scored stale rows)."""
    _, xs_train, _ = tiny_features
    rule = replace(fast_train, epochs=2, max_epochs=6, lr_schedule="constant")
    strategy = with_strategy(CARVE, replay=None)  # the fit's training set = E_t's queries
    learner = ContinualRouter(tiny_hub, xs_train[0].shape[1], train=rule, strategy=strategy,
                              seed=0, device="cpu")  # fmt: skip
    learner.learn(0, xs_train[0])
    learner.learn(1, xs_train[1])
    gold = tiny_hub.experiences[1].train.model
    fresh = float(np.mean(learner.predict(xs_train[1], tiny_hub.n_registered(1)) != gold))
    errs = learner.history[-1]["train_errors"]
    assert errs[-1] == pytest.approx(fresh, abs=1e-9)
    assert len(set(errs)) > 1  # phase 1 moves only the rows: a stale table froze the error
