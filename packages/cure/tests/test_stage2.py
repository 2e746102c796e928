import numpy as np
import pytest
import torch

from icml26.cure import CURE, CUREConfig, TrainConfig, hierarchical_mixture, initialise_prototypes
from icml26.cure.cure import NetConfig


def _tiny():
    return hierarchical_mixture(
        np.random.default_rng(3), n_super=2, n_sub=3, n_old_sub=2, n_per_old=40, n_per_new=30
    )


TINY = CUREConfig(
    train1=TrainConfig(cap_epochs=4, batch_size=64),
    train2=TrainConfig(cap_epochs=4, batch_size=64, warmup_teacher_epochs=2),
    net=NetConfig(hidden=32, dim=16, proj_hidden=32, proj_dim=8),
)


def _toy_init(**kw):
    rng = np.random.default_rng(0)
    centres = np.eye(6)[:, :6] * 5
    z = np.concatenate([c + rng.normal(0, 0.1, size=(20, 6)) for c in centres])
    y = np.repeat(np.arange(6), 20)
    lab = (y < 3) & (np.arange(120) % 2 == 0)
    old = np.eye(6)[:3] + 0.01
    return z, y, lab, old, initialise_prototypes(z, lab, y[lab], old, 6, seed=0, **kw)


def _unit(a):
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_unmatched_clusters_become_the_novel_prototypes():
    _, y, lab, _, init = _toy_init()
    assert sorted(init.matched.values()) == [0, 1, 2]
    assert len(init.novel_clusters) == 3
    cent = init.centroids[list(init.novel_clusters)]
    np.testing.assert_allclose(init.prototypes[3:], _unit(cent), rtol=1e-5)
    # each matched cluster holds its old class's labelled samples
    for cl, cls in init.matched.items():
        assert np.all(init.clusters[lab & (y == cls)] == cl)
    # default: an old class's slot starts at its matched cluster's centroid
    for cl, cls in init.matched.items():
        np.testing.assert_allclose(init.prototypes[cls], _unit(init.centroids[[cl]])[0], rtol=1e-5)


def test_centroid_start_reproduces_the_kmeans_partition():
    z, _, _, _, init = _toy_init()
    slot = dict(init.matched)
    slot.update({cl: 3 + i for i, cl in enumerate(init.novel_clusters)})
    pred = (_unit(z) @ init.prototypes.T).argmax(1)
    np.testing.assert_array_equal(pred, [slot[c] for c in init.clusters])


def test_prototype_start_keeps_the_stage1_prototypes():
    z, y, lab, old, init = _toy_init(old_init="prototype")
    np.testing.assert_allclose(init.prototypes[:3], _unit(old), rtol=1e-6)
    with pytest.raises(ValueError, match="old_init"):
        initialise_prototypes(z, lab, y[lab], old, 6, old_init="mean")


def test_initialisation_errors():
    z = np.random.default_rng(0).normal(size=(20, 3))
    lab = np.arange(20) < 6
    t = np.arange(6) % 3
    with pytest.raises(ValueError, match="below the number of old classes"):
        initialise_prototypes(z, lab, t, np.eye(3), 2)
    with pytest.raises(ValueError, match="empty"):
        initialise_prototypes(z, np.zeros(20, bool), t[:0], np.eye(3), 4)
    bad = z.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        initialise_prototypes(bad, lab, t, np.eye(3), 4)


def test_stage2_is_unchanged_when_unlabelled_labels_are_shuffled():
    data = _tiny()
    y = data.y.copy()
    u = np.flatnonzero(data.unlabelled)
    y[u] = np.random.default_rng(9).permutation(y[u])
    assert np.any(y != data.y)
    a = CURE(TINY, seed=0, device="cpu").fit(data)
    b = CURE(TINY, seed=0, device="cpu").fit(data.with_labels(y))
    np.testing.assert_array_equal(a.stage1_kmeans(), b.stage1_kmeans())
    np.testing.assert_array_equal(a.prototypes(), b.prototypes())
    np.testing.assert_array_equal(a.predict(data.x), b.predict(data.x))


def test_fit_rejects_k_below_old_and_reports_stopping():
    data = _tiny()
    with pytest.raises(ValueError, match="below the number of old classes"):
        CURE(TINY, device="cpu").fit(data, n_clusters=2)
    model = CURE(TINY, seed=1, device="cpu").fit(data)
    assert model.stopping["stage2"]["reason"] in ("plateau", "cap")
    assert model.prototypes().shape == (data.n_classes, 16)
    with pytest.raises(TypeError):
        CURE(TINY).fit(data.x)


def test_same_seed_same_numbers():
    data = _tiny()
    a = CURE(TINY, seed=2, device="cpu").fit(data).prototypes()
    b = CURE(TINY, seed=2, device="cpu").fit(data).prototypes()
    np.testing.assert_array_equal(a, b)
    assert torch.get_num_threads() == 1
