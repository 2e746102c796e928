"""Generalized category discovery data: simulators, views and loaders.

Every dataset is a :class:`GCDData`: training samples ``x``, labels ``y`` renumbered so
that the old (known) classes are ``0 .. n_old-1`` and the new ones follow, and the
labelled mask. Labels of unlabelled samples are kept for evaluation only: no training
code reads them (``tests/test_stage2.py`` shuffles them and checks nothing changes).

- :func:`digits_split`: scikit-learn's bundled 8×8 digits, old = {0–4}, half labelled.
- :func:`hierarchical_mixture`: superclasses of close sibling subclasses (reconstructed
  simulator) and its well-separated control.
- :func:`load_features_npz` / :func:`save_features_npz`: precomputed features.
- :func:`load_cub` with :func:`load_ssb_splits`: the CUB-200-2011 layout that the
  Generalized Category Discovery code (Vaze et al., 2022) reads, with the SSB class
  splits as JSON in the keys of ``cub_osr_splits.pkl``. Pickles are refused.
- :func:`views`: the gentle augmentations (two views per sample).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

__all__ = [
    "GCDData",
    "digits_split",
    "hierarchical_mixture",
    "load_cub",
    "load_features_npz",
    "load_ssb_splits",
    "make_gcd_data",
    "save_features_npz",
    "views",
]

AUGMENTATIONS = ("digits", "features", "none")


@dataclass(frozen=True)
class GCDData:
    """One GCD training set.

    ``x`` (n, d) float32; ``y`` (n,) int64 with old classes ``0..n_old-1`` and new
    classes ``n_old..n_classes-1``; ``labelled`` (n,) bool (labelled samples are all of
    old classes); ``class_ids`` the original class id of each renumbered class;
    ``superclass`` (n_classes,) the parent of each class when known (for sibling
    statistics), else None; ``augment`` one of ``"digits"``, ``"features"``, ``"none"``.
    """

    x: np.ndarray
    y: np.ndarray
    labelled: np.ndarray
    n_old: int
    n_classes: int
    augment: str = "features"
    class_ids: tuple[int, ...] = ()
    superclass: np.ndarray | None = None
    name: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        x = np.asarray(self.x)
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(f"x must be a non-empty (n_samples, n_features) array, got {x.shape}")
        if not np.issubdtype(x.dtype, np.number):
            raise TypeError(f"x must be numeric, got dtype {x.dtype}")
        if not np.all(np.isfinite(x)):
            bad = int(np.sum(~np.all(np.isfinite(x), axis=1)))
            raise ValueError(f"x has NaN or infinite features in {bad} samples")
        y = np.asarray(self.y)
        mask = np.asarray(self.labelled)
        if y.shape != (x.shape[0],):
            raise ValueError(f"y must have one label per sample: {y.shape} vs {x.shape[0]}")
        if mask.shape != (x.shape[0],):
            raise ValueError(
                f"the labelled mask has length {mask.size}, but there are {x.shape[0]} samples"
            )
        if mask.dtype != bool:
            raise TypeError(f"the labelled mask must be boolean, got dtype {mask.dtype}")
        if not mask.any():
            raise ValueError("the labelled mask is empty: GCD needs labelled old-class samples")
        if mask.all():
            raise ValueError("every sample is labelled: there is nothing to discover")
        if not 1 <= self.n_old < self.n_classes:
            raise ValueError(f"need 1 <= n_old < n_classes, got {self.n_old}, {self.n_classes}")
        if y.min() < 0 or y.max() >= self.n_classes:
            raise ValueError(
                f"labels must lie in [0, {self.n_classes}), got [{y.min()}, {y.max()}]"
            )
        if np.any(y[mask] >= self.n_old):
            raise ValueError(
                f"{int(np.sum(y[mask] >= self.n_old))} labelled samples belong to new classes; "
                "only old classes may be labelled"
            )
        if self.augment not in AUGMENTATIONS:
            raise ValueError(f"augment must be one of {AUGMENTATIONS}, got {self.augment!r}")
        object.__setattr__(self, "x", x.astype(np.float32, copy=False))
        object.__setattr__(self, "y", y.astype(np.int64, copy=False))

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    @property
    def old_classes(self) -> list[int]:
        return list(range(self.n_old))

    @property
    def unlabelled(self) -> np.ndarray:
        return ~self.labelled

    def with_labels(self, y: np.ndarray) -> GCDData:
        """The same data with other labels (tests: shuffled unlabelled labels)."""
        return replace(self, y=np.asarray(y))


def make_gcd_data(
    x: np.ndarray,
    labels: np.ndarray,
    old_classes: Sequence[int],
    new_classes: Sequence[int],
    *,
    labelled: np.ndarray | None = None,
    prop_train_labels: float = 0.5,
    rng: np.random.Generator | None = None,
    augment: str = "features",
    name: str = "",
    superclass_of: dict[int, int] | None = None,
) -> GCDData:
    """Renumber original class ids (old first) and draw or check the labelled mask.

    Without ``labelled``, a fraction ``prop_train_labels`` of the old-class samples is
    labelled, drawn by ``rng`` over all old-class samples, as ``subsample_instances`` in
    the GCD code does.
    """
    labels = np.asarray(labels)
    old, new = [int(c) for c in old_classes], [int(c) for c in new_classes]
    if not old or not new:
        raise ValueError("need at least one old and one new class")
    if set(old) & set(new):
        raise ValueError(f"classes both old and new: {sorted(set(old) & set(new))}")
    order = old + new
    lookup = {c: i for i, c in enumerate(order)}
    keep = np.isin(labels, order)
    if not keep.all():
        raise ValueError(f"{int((~keep).sum())} samples have classes in neither list")
    y = np.array([lookup[int(c)] for c in labels], dtype=np.int64)
    if labelled is None:
        if not 0 < prop_train_labels < 1:
            raise ValueError(f"prop_train_labels must lie in (0, 1), got {prop_train_labels}")
        if rng is None:
            raise TypeError("drawing the labelled mask needs rng (a numpy Generator)")
        old_idx = np.flatnonzero(y < len(old))
        pick = rng.choice(old_idx, size=round(prop_train_labels * len(old_idx)), replace=False)
        labelled = np.zeros(len(y), dtype=bool)
        labelled[pick] = True
    sup = None
    if superclass_of is not None:
        sup = np.array([superclass_of[c] for c in order], dtype=np.int64)
    return GCDData(
        x=np.asarray(x),
        y=y,
        labelled=np.asarray(labelled),
        n_old=len(old),
        n_classes=len(order),
        augment=augment,
        class_ids=tuple(order),
        superclass=sup,
        name=name,
    )


# -- simulators ------------------------------------------------------------------------
def digits_split(
    rng: np.random.Generator, *, prop_train_labels: float = 0.5, old: Sequence[int] = range(5)
) -> GCDData:
    """scikit-learn's 1,797 digits as a GCD split: old = {0–4}, half of them labelled."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    old = [int(c) for c in old]
    new = [c for c in range(10) if c not in old]
    return make_gcd_data(
        x,
        digits.target,
        old,
        new,
        prop_train_labels=prop_train_labels,
        rng=rng,
        augment="digits",
        name="digits",
    )


def hierarchical_mixture(
    rng: np.random.Generator,
    *,
    n_super: int = 4,
    n_sub: int = 5,
    n_old_sub: int = 3,
    dim: int = 32,
    informative: int = 16,
    super_scale: float = 3.0,
    sibling_scale: float = 1.0,
    noise: float = 0.6,
    nuisance: float = 2.0,
    n_per_old: int = 250,
    n_per_new: int = 150,
    prop_train_labels: float = 0.5,
) -> GCDData:
    """Superclasses of close sibling subclasses (a reconstructed simulator).

    Superclass means ~ N(0, super_scale² I) and sibling offsets ~ N(0, sibling_scale² I)
    in the first ``informative`` dimensions, within-class noise ``noise``; the remaining
    dimensions are class-free nuisance noise of scale ``nuisance`` (they mislead raw
    k-means). ``n_old_sub`` subclasses of each superclass are old, the rest new; old
    classes have more samples (old-class bias). ``sibling_scale = super_scale`` gives
    the well-separated control in which siblings share nothing.
    """
    if informative > dim or informative < 1:
        raise ValueError(f"need 1 <= informative <= dim, got {informative}, {dim}")
    if not 1 <= n_old_sub < n_sub:
        raise ValueError(f"need 1 <= n_old_sub < n_sub, got {n_old_sub}, {n_sub}")
    supers = rng.normal(0.0, super_scale, size=(n_super, informative))
    xs, ys, parent = [], [], {}
    old, new = [], []
    for s in range(n_super):
        for j in range(n_sub):
            c = s * n_sub + j
            parent[c] = s
            (old if j < n_old_sub else new).append(c)
            mean = supers[s] + rng.normal(0.0, sibling_scale, size=informative)
            m = n_per_old if j < n_old_sub else n_per_new
            inf = mean + rng.normal(0.0, noise, size=(m, informative))
            nui = rng.normal(0.0, nuisance, size=(m, dim - informative))
            xs.append(np.concatenate([inf, nui], axis=1))
            ys.append(np.full(m, c))
    x = np.concatenate(xs).astype(np.float32)
    y = np.concatenate(ys)
    return make_gcd_data(
        x,
        y,
        old,
        new,
        prop_train_labels=prop_train_labels,
        rng=rng,
        augment="features",
        name="mixture",
        superclass_of=parent,
    )


# -- views -----------------------------------------------------------------------------
def views(x: torch.Tensor, kind: str, generator: torch.Generator) -> torch.Tensor:
    """One random view of each row of ``x`` (call twice for two views).

    ``digits``: 8×8 images, a random ±1-pixel shift and ±10° rotation (one affine map),
    Gaussian noise 0.05 · max and 10% pixel dropout. ``features``: jitter of 0.1 · the
    feature scale and 10% feature dropout. ``none``: the input itself.
    """
    if kind == "none":
        return x
    n, d = x.shape
    dev = x.device

    def rand(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=generator, device="cpu").to(dev)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, device="cpu").to(dev)

    if kind == "digits":
        side = round(d**0.5)
        if side * side != d:
            raise ValueError(f"digit views need square images, got {d} pixels")
        img = x.view(n, 1, side, side)
        angle = (rand(n) * 2 - 1) * (10.0 * np.pi / 180.0)
        shift = torch.randint(-1, 2, (n, 2), generator=generator).to(dev).float() * (2.0 / side)
        cos, sin = torch.cos(angle), torch.sin(angle)
        theta = torch.stack(
            [torch.stack([cos, -sin, shift[:, 0]], 1), torch.stack([sin, cos, shift[:, 1]], 1)], 1
        )
        grid = F.affine_grid(theta, list(img.shape), align_corners=False)
        out = F.grid_sample(img, grid, align_corners=False, padding_mode="zeros").view(n, d)
        out = out + 0.05 * randn(n, d)
        return out * (rand(n, d) > 0.1).float()
    if kind == "features":
        scale = x.std(dim=0, keepdim=True).clamp_min(1e-6) if n > 1 else torch.ones_like(x)
        return (x + 0.1 * scale * randn(n, d)) * (rand(n, d) > 0.1).float()
    raise ValueError(f"unknown augmentation {kind!r}; expected one of {AUGMENTATIONS}")


# -- loaders ---------------------------------------------------------------------------
NPZ_KEYS = ("features", "labels", "labelled_mask", "old_classes", "new_classes")


def save_features_npz(
    path: str | Path,
    features: np.ndarray,
    labels: np.ndarray,
    labelled_mask: np.ndarray,
    old_classes: Sequence[int],
    new_classes: Sequence[int],
) -> Path:
    """Write precomputed features in the format :func:`load_features_npz` reads."""
    path = Path(path)
    np.savez(
        path,
        features=np.asarray(features, dtype=np.float32),
        labels=np.asarray(labels),
        labelled_mask=np.asarray(labelled_mask, dtype=bool),
        old_classes=np.asarray(old_classes, dtype=np.int64),
        new_classes=np.asarray(new_classes, dtype=np.int64),
    )
    return path


def load_features_npz(path: str | Path, *, augment: str = "features") -> GCDData:
    """Precomputed features (``.npz`` with features, labels, labelled_mask, old_classes,
    new_classes), read with ``allow_pickle=False``."""
    path = Path(path)
    if path.suffix.lower() in (".pkl", ".pickle"):
        raise ValueError(f"{path.name} is a pickle; features are read from .npz only")
    with np.load(path, allow_pickle=False) as f:
        missing = [k for k in NPZ_KEYS if k not in f.files]
        if missing:
            raise ValueError(f"{path.name} lacks keys {missing}; it has {f.files}")
        arrays = {k: f[k] for k in NPZ_KEYS}
    return make_gcd_data(
        arrays["features"],
        arrays["labels"],
        arrays["old_classes"].tolist(),
        arrays["new_classes"].tolist(),
        labelled=arrays["labelled_mask"].astype(bool),
        augment=augment,
        name=path.stem,
    )


PICKLE_HINT = (
    "SSB split files ship as pickles, which this package never unpickles. Convert {name} "
    'once, yourself, on a copy you trust, e.g. python -c "import json, pickle as p; '
    "json.dump(p.load(open('{name}', 'rb')), open('{stem}.json', 'w'))\""
)


def load_ssb_splits(path: str | Path) -> tuple[list[int], list[int]]:
    """Known and unknown classes of an SSB split as JSON.

    The JSON holds the keys of the SSB ``*_osr_splits.pkl`` files:
    ``{"known_classes": [...], "unknown_classes": {"Easy": [...], "Medium": [...],
    "Hard": [...]}}`` (a flat list of unknown classes is accepted too). As in the GCD
    code, the unlabelled classes are Hard + Medium + Easy.
    """
    path = Path(path)
    if path.suffix.lower() in (".pkl", ".pickle"):
        raise ValueError(PICKLE_HINT.format(name=path.name, stem=path.stem))
    info = json.loads(path.read_text())
    if not isinstance(info, dict) or "known_classes" not in info or "unknown_classes" not in info:
        raise ValueError(f"{path.name} must hold 'known_classes' and 'unknown_classes'")
    unknown = info["unknown_classes"]
    if isinstance(unknown, dict):
        unknown = [c for key in ("Hard", "Medium", "Easy") for c in unknown.get(key, [])]
    return [int(c) for c in info["known_classes"]], [int(c) for c in unknown]


def _read_table(path: Path) -> dict[int, str]:
    if not path.exists():
        raise ValueError(f"the CUB layout needs {path.name} (not found in {path.parent.name}/)")
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            key, value = line.split(maxsplit=1)
            out[int(key)] = value.strip()
    return out


def load_cub(
    root: str | Path,
    splits: str | Path,
    rng: np.random.Generator,
    *,
    prop_train_labels: float = 0.5,
    image_size: int = 16,
) -> GCDData:
    """CUB-200-2011 as the GCD code reads it: the training images, labels − 1.

    ``root`` holds ``images.txt`` (id, path under ``images/``), ``image_class_labels.txt``
    (id, 1-based class) and ``train_test_split.txt`` (id, 1 = train). Images are read
    with Pillow, resized to ``image_size``² RGB and flattened to [0, 1] features (a
    stand-in for a frozen backbone's features: a real run encodes them first and
    uses :func:`load_features_npz`). ``splits`` is the SSB split JSON.
    """
    from PIL import Image

    root = Path(root)
    images = _read_table(root / "images.txt")
    labels = {k: int(v) - 1 for k, v in _read_table(root / "image_class_labels.txt").items()}
    train = {k: v == "1" for k, v in _read_table(root / "train_test_split.txt").items()}
    known, unknown = load_ssb_splits(splits)
    ids = [i for i in sorted(images) if train.get(i, False) and labels[i] in set(known + unknown)]
    if not ids:
        raise ValueError("no training images of the split's classes were found")
    rows = []
    for i in ids:
        with Image.open(root / "images" / images[i]) as im:
            arr = np.asarray(im.convert("RGB").resize((image_size, image_size)), dtype=np.float32)
        rows.append(arr.reshape(-1) / 255.0)
    return make_gcd_data(
        np.stack(rows),
        np.array([labels[i] for i in ids]),
        known,
        unknown,
        prop_train_labels=prop_train_labels,
        rng=rng,
        augment="features",
        name="cub",
    )
