import numpy as np
import pytest

from icml26.paws import (
    SegmentPairs,
    cut_segments,
    load_cpl_npz,
    make_preferences,
    oracle_labels,
    save_cpl_npz,
)


def test_oracle_labels_match_true_segment_returns(episodes):
    rng = np.random.default_rng(3)
    p = make_preferences(episodes, 200, 20, rng)
    ret = np.array([[episodes.reward[e, s : s + 20].sum() for e, s in zip(ep, st, strict=True)]
                    for ep, st in zip(p.episode, p.start, strict=True)])  # fmt: skip
    want = np.where(ret[:, 0] > ret[:, 1], 1.0, np.where(ret[:, 0] < ret[:, 1], 0.0, 0.5))
    np.testing.assert_array_equal(p.label, want)
    assert np.all(p.start % 20 == 0) and p.alignment == 20
    # the segments are the episodes' own steps
    e, s = p.episode[0, 1], p.start[0, 1]
    np.testing.assert_array_equal(p.obs[0, 1], episodes.obs[e, s : s + 20])
    assert oracle_labels(np.array([1.0]), np.array([1.0]))[0] == 0.5


def test_segment_longer_than_episode(episodes):
    with pytest.raises(ValueError, match="longer than the episode"):
        cut_segments(episodes, 101)
    with pytest.raises(ValueError, match="longer than the episode"):
        make_preferences(episodes, 5, 200, np.random.default_rng(0))


def test_empty_preference_set(episodes):
    with pytest.raises(ValueError, match="empty"):
        make_preferences(episodes, 0, 20, np.random.default_rng(0))
    with pytest.raises(ValueError, match="empty"):
        SegmentPairs(
            obs=np.zeros((0, 2, 5, 3)), act=np.zeros((0, 2, 5, 2)), label=np.zeros(0),
            start=np.zeros((0, 2)), episode=np.zeros((0, 2)),
        )  # fmt: skip


def test_nan_actions_are_refused(pairs):
    act = pairs.act.copy()
    act[0, 0, 3, 1] = np.nan
    with pytest.raises(ValueError, match="act contains 1 non-finite"):
        SegmentPairs(obs=pairs.obs, act=act, label=pairs.label, start=pairs.start,
                     episode=pairs.episode)  # fmt: skip


def test_npz_roundtrip_and_pickle_refused(pairs, tmp_path):
    path = pairs.save(tmp_path / "prefs.npz")
    back = SegmentPairs.load(path)
    np.testing.assert_array_equal(back.obs, pairs.obs)
    np.testing.assert_array_equal(back.label, pairs.label)
    assert back.alignment == 20 and back.teacher == "oracle"
    bad = tmp_path / "pickled.npz"
    np.savez(bad, obs=np.array([{"a": 1}], dtype=object), act=np.zeros(1))
    with pytest.raises(ValueError, match="pickle"):
        SegmentPairs.load(bad)
    with pytest.raises(ValueError, match="pickle"):
        load_cpl_npz(bad)


def _cpl_fixture(n=6, s=8, d=4, a=2, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, s, d)).astype(np.float32),
            rng.normal(size=(n, s, d)).astype(np.float32),
            rng.uniform(-1, 1, (n, s, a)).astype(np.float32),
            rng.uniform(-1, 1, (n, s, a)).astype(np.float32))  # fmt: skip


def test_cpl_paired_layout(tmp_path):
    o1, o2, a1, a2 = _cpl_fixture()
    y = np.array([1, 0, 1, 1, 0, 0.5], np.float32)  # CPL: 1 = the second is preferred
    path = tmp_path / "paired.npz"
    np.savez(
        path,
        obs_1=o1,
        obs_2=o2,
        action_1=a1,
        action_2=a2,
        label=y,
        reward_1=np.full((6, 8), 1e9, np.float32),
        reward_2=np.zeros((6, 8), np.float32),
    )
    p = load_cpl_npz(path)
    np.testing.assert_array_equal(p.label, [0, 1, 0, 0, 1, 0.5])
    np.testing.assert_array_equal(p.obs[:, 0], o1)
    np.testing.assert_array_equal(p.obs[:, 1], o2)
    assert p.length == 8 and p.teacher == "cpl-file"
    assert load_cpl_npz(path, length=4).length == 4


def test_cpl_stacked_layout(tmp_path):
    o1, o2, a1, a2 = _cpl_fixture()
    score = np.array([3, 1, 2, 2, 0, 5, 1, 4, 2, 2, 1, 0], np.float32)  # segment i vs i + 6
    path = tmp_path / "stacked.npz"
    np.savez(
        path,
        obs=np.concatenate([o1, o2]),
        action=np.concatenate([a1, a2]),
        label=score,
        reward=np.zeros((12, 8), np.float32),
    )
    p = load_cpl_npz(path)
    np.testing.assert_array_equal(p.label, [1, 0, 0.5, 0.5, 0, 1])
    np.testing.assert_array_equal(p.act[:, 1], np.clip(a2, -1 + 1e-5, 1 - 1e-5))


def test_cpl_roundtrip_through_both_layouts(pairs, tmp_path):
    for layout in ("paired", "stacked"):
        path = save_cpl_npz(pairs, tmp_path / f"{layout}.npz", layout=layout)
        back = load_cpl_npz(path)
        np.testing.assert_array_equal(back.label, pairs.label)
        np.testing.assert_allclose(back.obs, pairs.obs)


def test_cpl_pair_members_of_unequal_length(tmp_path):
    o1, o2, a1, a2 = _cpl_fixture()
    path = tmp_path / "ragged.npz"
    np.savez(
        path,
        obs_1=o1,
        obs_2=o2[:, :5],
        action_1=a1,
        action_2=a2[:, :5],
        label=np.zeros(6, np.float32),
    )
    with pytest.raises(ValueError, match="differ in length"):
        load_cpl_npz(path)
    with pytest.raises(ValueError, match="neither CPL layout"):
        np.savez(tmp_path / "other.npz", x=np.zeros(3))
        load_cpl_npz(tmp_path / "other.npz")
