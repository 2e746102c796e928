import numpy as np
import pytest

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
