"""The Meta-World episode cache: fixtures written in its format, and (slow, extra) the
generator and evaluation on one V3 task."""

import numpy as np
import pytest

from icml26.paws import make_preferences
from icml26.paws.metaworld_data import (
    load_metaworld_episodes,
    metaworld_episodes,
    metaworld_success,
    save_metaworld_episodes,
)


def _fixture(path, **override):
    rng = np.random.default_rng(0)
    e, h = 3, 30
    fields = {
        "obs": rng.normal(size=(e, h, 39)).astype(np.float32),
        "act": rng.uniform(-1, 1, size=(e, h, 4)).astype(np.float32),
        "reward": rng.uniform(0, 10, size=(e, h)).astype(np.float32),
        "success": np.zeros((e, h), bool),
        "kind": np.array([0, 1, 3]),
        "task": np.str_("button-press-topdown-v3"),
        "horizon": np.int64(h),
    }
    fields["success"][0, 20:] = True
    fields.update(override)
    np.savez(path, **fields)
    return path


def test_cache_fixture_loads_and_cuts_into_pairs(tmp_path):
    data = load_metaworld_episodes(_fixture(tmp_path / "mw.npz"))
    assert data.task == "button-press-topdown-v3"
    assert data.episodes.obs.shape == (3, 30, 39) and data.success_rate == pytest.approx(1 / 3)
    again = load_metaworld_episodes(save_metaworld_episodes(data, tmp_path / "again.npz"))
    np.testing.assert_array_equal(again.episodes.act, data.episodes.act)
    pairs = make_preferences(data.episodes, 8, 10, np.random.default_rng(1))
    assert pairs.obs.shape == (8, 2, 10, 39)


def test_cache_rejects_bad_files(tmp_path):
    with pytest.raises(ValueError, match="missing"):
        load_metaworld_episodes(_drop(tmp_path / "a.npz", "success"))
    bad = np.zeros((3, 30, 39), np.float32)
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        load_metaworld_episodes(_fixture(tmp_path / "b.npz", obs=bad))
    objects = np.array([{"x": 1}] * 3, dtype=object)
    with pytest.raises(ValueError, match="pickle"):
        load_metaworld_episodes(_fixture(tmp_path / "c.npz", kind=objects))


def _drop(path, name):
    _fixture(path)
    with np.load(path) as z:
        kept = {k: z[k] for k in z.files if k != name}
    np.savez(path, **kept)
    return path


@pytest.mark.slow
def test_scripted_experts_generate_and_evaluate():
    pytest.importorskip("metaworld")
    data = metaworld_episodes("button-press-topdown-v3", 4, 0, horizon=100,
                              mix=(1.0, 0.0, 0.0, 0.0))  # fmt: skip
    assert data.episodes.obs.shape == (4, 100, 39) and data.success_rate == 1.0
    assert np.all(np.abs(data.episodes.act) <= 1.0)

    def broken(obs):
        raise RuntimeError("boom")

    success, errors = metaworld_success(broken, "button-press-topdown-v3", 2, 0, horizon=10)
    assert np.isnan(success).all() and len(errors) == 2
    with pytest.raises(ValueError, match="unknown Meta-World"):
        metaworld_episodes("no-such-task-v3", 1, 0)
