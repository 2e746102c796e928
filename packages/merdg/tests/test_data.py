"""CoOcc-MMDG hides the code from each modality; loaders read the official split formats."""

from pathlib import Path

import numpy as np
import pytest
import torch

from icml26.merdg import (
    CoOccConfig,
    MultimodalData,
    load_epic_split,
    load_features,
    load_hac_split,
    load_split_features,
    lodo_split,
    simulate_cooccurrence,
)
from icml26.merdg.data import epic_key

FIXTURES = Path(__file__).parent / "fixtures"


def _code_accuracy(codes: np.ndarray, y: np.ndarray) -> float:
    """Accuracy of the best lookup table code → class (in-sample)."""
    keys = [tuple(c) for c in codes]
    table = {}
    for k, label in zip(keys, y, strict=True):
        table.setdefault(k, []).append(label)
    best = {k: np.bincount(v).argmax() for k, v in table.items()}
    return float(np.mean([best[k] == label for k, label in zip(keys, y, strict=True)]))


def test_code_is_invisible_to_each_modality_and_visible_to_the_pair():
    cfg = CoOccConfig(per_domain=3000)
    data = simulate_cooccurrence(cfg, target=3, rng=np.random.default_rng(0))
    codes, y, dom = data.meta["codes"], data.labels, data.domains
    src, tgt = dom != 3, dom == 3
    chance = np.bincount(y[src]).max() / src.sum()
    for m in range(2):  # each code alone: the class at chance
        assert _code_accuracy(codes[src, m], y[src]) < chance + 0.03
    product = codes[:, 0] * codes[:, 1]
    assert _code_accuracy(product[src], y[src]) > 0.93  # ρ = 0.95 (+ lucky draws)
    assert _code_accuracy(product[tgt], y[tgt]) < chance + 0.05  # gone in the target
    assert not data.meta["forced"][tgt].any()
    # the forced fraction in the sources is ρ
    assert abs(data.meta["forced"][src].mean() - 0.95) < 0.01


def test_one_modality_alone_is_informative_but_not_perfect():
    data = simulate_cooccurrence(CoOccConfig(), target=3, rng=np.random.default_rng(1))
    split = lodo_split(data, 3, rng=np.random.default_rng(2))
    for m in range(2):  # a nearest-class-mean rule on one modality, source train → source val
        x, y = split.train.features[m], split.train.labels
        means = np.stack([x[y == c].mean(0) for c in range(6)])
        xv = split.val.features[m]
        pred = np.argmin(((xv[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
        acc = float(np.mean(pred == split.val.labels))
        assert 0.45 < acc < 0.85, acc


def test_lodo_split_and_its_errors():
    data = simulate_cooccurrence(CoOccConfig(per_domain=50), target=0, rng=np.random.default_rng(0))
    split = lodo_split(data, 0, rng=np.random.default_rng(0))
    assert split.sources == (1, 2, 3)
    assert set(np.unique(split.test.domains)) == {0}
    assert len(split.train) + len(split.val) == 150 and len(split.val) == 30
    with pytest.raises(ValueError, match="among the sources"):
        lodo_split(data, 0, sources=[0, 1], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="not in the data"):
        lodo_split(data, 9, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="same length"):
        MultimodalData(
            features=(np.zeros((5, 2)), np.zeros((4, 2))),
            labels=np.zeros(5, int),
            domains=np.zeros(5, int),
        )
    with pytest.raises(ValueError, match="NaN"):
        MultimodalData(
            features=(np.full((2, 2), np.nan),), labels=np.zeros(2, int), domains=np.zeros(2, int)
        )


def test_official_split_files_and_keyed_features(tmp_path):
    hac = load_hac_split(FIXTURES / "HAC_train_only_animal.csv")
    assert hac.domain == "animal" and len(hac.keys) == 6 and hac.labels.tolist() == [0, 1, 2] * 2
    epic = load_epic_split(FIXTURES / "D1_train.csv")
    assert epic.domain == "D1" and epic.keys[0] == epic_key("P08_01", 7, 67)
    # feature files keyed by sample id, stored in another order than the split file
    rng = np.random.default_rng(0)
    paths = {}
    for dom in ("animal", "cartoon"):
        table = load_hac_split(FIXTURES / f"HAC_train_only_{dom}.csv")
        order = rng.permutation(len(table.keys))
        feats = np.arange(len(table.keys))[:, None] * np.ones((1, 3))
        rgb = tmp_path / f"rgb_{dom}.npz"
        np.savez(rgb, keys=np.array(table.keys)[order], features=feats[order])
        aud = tmp_path / f"audio_{dom}.pt"
        torch.save({"features": torch.as_tensor(feats[:, :2] + 10)}, aud)  # row-aligned
        paths[dom] = (rgb, aud)
    data = load_split_features(
        {d: FIXTURES / f"HAC_train_only_{d}.csv" for d in ("animal", "cartoon")},
        {"rgb": {d: p[0] for d, p in paths.items()}, "audio": {d: p[1] for d, p in paths.items()}},
    )
    assert data.dims == (3, 2) and data.domains.tolist() == [0] * 6 + [1] * 6
    np.testing.assert_array_equal(data.features[0][:6, 0], np.arange(6))  # keys re-aligned
    np.testing.assert_array_equal(data.features[1][:6, 0], np.arange(6) + 10)


def test_pickles_are_refused_with_the_conversion_named(tmp_path):
    pkl = tmp_path / "D1_train.pkl"
    pkl.write_bytes(b"not read")
    with pytest.raises(ValueError, match="to_csv"):
        load_epic_split(pkl)
    with pytest.raises(ValueError, match="unpickling"):
        load_features(pkl)


def test_features_roundtrip_npz(tmp_path):
    data = simulate_cooccurrence(CoOccConfig(per_domain=20), target=1, rng=np.random.default_rng(0))
    path = tmp_path / "f.npz"
    np.savez(
        path,
        labels=data.labels,
        domains=data.domains,
        video=data.features[0],
        audio=data.features[1],
    )
    back = load_features(path)
    assert back.modalities == ("video", "audio")
    np.testing.assert_array_equal(back.features[1], data.features[1])
    with pytest.raises(ValueError, match="lacks the array 'domains'"):
        np.savez(tmp_path / "g.npz", labels=data.labels, video=data.features[0])
        load_features(tmp_path / "g.npz")
