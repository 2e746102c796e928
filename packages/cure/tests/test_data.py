import json

import numpy as np
import pytest
import torch

from icml26.cure import (
    GCDData,
    digits_split,
    hierarchical_mixture,
    load_cub,
    load_features_npz,
    load_ssb_splits,
    make_gcd_data,
    save_features_npz,
    views,
)


def _arrays(n=12):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 4)).astype(np.float32), np.arange(n) % 4


def test_digits_split_is_the_gcd_split():
    data = digits_split(np.random.default_rng(0))
    assert data.n == 1797 and data.n_old == 5 and data.n_classes == 10
    assert data.class_ids == tuple(range(10))
    old = data.y < 5
    assert data.labelled.sum() == round(0.5 * old.sum())
    assert not np.any(data.labelled & ~old)


def test_mixture_has_siblings_and_old_class_bias():
    data = hierarchical_mixture(np.random.default_rng(0))
    assert data.n_classes == 20 and data.n_old == 12 and data.x.shape == (4200, 32)
    assert np.bincount(data.superclass).tolist() == [5, 5, 5, 5]
    counts = np.bincount(data.y)
    assert counts[:12].min() > counts[12:].max()


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ("empty", ValueError, "labelled mask is empty"),
        ("length", ValueError, "labelled mask has length"),
        ("new", ValueError, "belong to new classes"),
        ("nan", ValueError, "NaN"),
        ("dtype", TypeError, "boolean"),
    ],
)
def test_bad_inputs_raise_clear_errors(change, error, match):
    x, y = _arrays()
    lab = np.zeros(len(y), dtype=bool)
    lab[[0, 1]] = True  # classes 0 and 1 are old
    if change == "empty":
        lab[:] = False
    if change == "length":
        lab = lab[:-1]
    if change == "new":
        lab[2] = True  # class 2 is new
    if change == "nan":
        x[3, 1] = np.nan
    if change == "dtype":
        lab = lab.astype(int)
    with pytest.raises(error, match=match):
        GCDData(x=x, y=y, labelled=lab, n_old=2, n_classes=4)


def test_views_are_gentle_and_seeded():
    data = digits_split(np.random.default_rng(0))
    x = torch.as_tensor(data.x[:50])
    a = views(x, "digits", torch.Generator().manual_seed(1))
    b = views(x, "digits", torch.Generator().manual_seed(1))
    assert torch.equal(a, b) and a.shape == x.shape
    assert float((a - x).abs().mean()) < 0.25
    f = views(x, "features", torch.Generator().manual_seed(1))
    assert not torch.equal(f, x)
    with pytest.raises(ValueError, match="unknown augmentation"):
        views(x, "crop", torch.Generator())


def test_npz_roundtrip(tmp_path):
    x, y = _arrays()
    lab = (y < 2) & (np.arange(12) < 6)
    path = save_features_npz(tmp_path / "feats.npz", x, y + 10, lab, [10, 11], [12, 13])
    data = load_features_npz(path)
    assert data.n_old == 2 and data.class_ids == (10, 11, 12, 13)
    np.testing.assert_array_equal(data.y, y)
    np.testing.assert_array_equal(data.labelled, lab)


def test_npz_with_objects_is_not_unpickled(tmp_path):
    path = tmp_path / "obj.npz"
    np.savez(
        path,
        features=np.array([{"a": 1}], dtype=object),
        labels=np.zeros(1),
        labelled_mask=np.zeros(1, bool),
        old_classes=np.zeros(1),
        new_classes=np.ones(1),
    )
    with pytest.raises(ValueError, match="pickle"):
        load_features_npz(path)


def test_pkl_split_files_are_refused_with_the_conversion(tmp_path):
    with pytest.raises(ValueError, match=r"json\.dump"):
        load_ssb_splits(tmp_path / "cub_osr_splits.pkl")
    with pytest.raises(ValueError, match="pickle"):
        load_features_npz(tmp_path / "feats.pkl")


def _cub_fixture(root):
    """A 4-class CUB-200-2011 tree in the official layout, 4 images a class."""
    from PIL import Image

    rng = np.random.default_rng(0)
    images, labels, split = [], [], []
    i = 1
    for c in range(1, 5):
        (root / "images" / f"{c:03d}.Bird").mkdir(parents=True)
        for j in range(4):
            rel = f"{c:03d}.Bird/Bird_{j}.jpg"
            arr = (rng.uniform(0, 1, (10, 12, 3)) * 60 * c).astype(np.uint8)
            Image.fromarray(arr).save(root / "images" / rel)
            images.append(f"{i} {rel}")
            labels.append(f"{i} {c}")
            split.append(f"{i} {1 if j < 3 else 0}")
            i += 1
    for name, lines in (
        ("images.txt", images),
        ("image_class_labels.txt", labels),
        ("train_test_split.txt", split),
    ):
        (root / name).write_text("\n".join(lines) + "\n")
    splits = root / "cub_osr_splits.json"
    splits.write_text(
        json.dumps(
            {"known_classes": [0, 1], "unknown_classes": {"Easy": [3], "Medium": [], "Hard": [2]}}
        )
    )
    return splits


def test_cub_layout_and_ssb_json(tmp_path):
    splits = _cub_fixture(tmp_path)
    assert load_ssb_splits(splits) == ([0, 1], [2, 3])
    data = load_cub(tmp_path, splits, np.random.default_rng(0), image_size=4)
    assert data.n == 12 and data.x.shape == (12, 48)  # 3 training images of 4 classes
    assert data.class_ids == (0, 1, 2, 3) and data.n_old == 2
    assert data.labelled.sum() == 3 and not np.any(data.labelled & (data.y >= 2))
    assert data.x.min() >= 0 and data.x.max() <= 1


def test_make_gcd_data_rejects_overlapping_class_lists():
    x, y = _arrays()
    with pytest.raises(ValueError, match="both old and new"):
        make_gcd_data(x, y, [0, 1], [1, 2, 3], rng=np.random.default_rng(0))
