"""Multimodal domain-generalisation data: the CoOcc-MMDG simulator and real-format loaders.

:class:`MultimodalData` holds one float array per modality (N × D_m), class labels and
domain ids. :func:`lodo_split` makes the leave-one-domain-out split (sources with a held-
out source-validation part, the target) the paper's protocol uses.

**CoOcc-MMDG** (this package's simulator; not from the paper). Each modality sees a
class signal ``tanh(A_m u_y) + σ ε`` through a domain style (per-domain, per-modality
scale and offset), and the *trap*: per sample a code ``c_a ∈ {±1}^r`` is written into
modality 1 and ``c_b`` into modality 2 along fixed directions with amplitude ``κ σ``. In
a source domain ``c_a ⊙ c_b = h(y)`` with probability ρ (else ``c_b`` is drawn afresh);
``c_a`` is uniform, so each code alone is uniform and independent of ``y``: only a head
that sees both modalities can use the product. In the target domain ``c_b`` is always
independent, so the co-occurrence is gone: a fusion head that relied on it fails there.

Loaders read per-modality feature arrays (``.npz``/``.npy``, ``.pt`` through
``torch.load(weights_only=True)``) and key them to the official split files: HAC's
``HAC_{train,test}_only_<domain>.csv`` (``file,label``, no header) and EPIC-Kitchens'
MM-SADA tables (``video_id``, ``start_frame``, ``stop_frame``, ``verb_class`` …) as CSV
or Parquet. The EPIC splits ship as pandas pickles; a ``.pkl`` is refused (unpickling
runs code) with the one-off conversion named.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

__all__ = [
    "CoOccConfig",
    "LODOSplit",
    "MultimodalData",
    "load_epic_split",
    "load_features",
    "load_hac_split",
    "load_split_features",
    "lodo_split",
    "simulate_cooccurrence",
    "simulate_digits",
]

PICKLE_HINT = (
    "pickled split files are not read (unpickling runs arbitrary code). Convert it once, "
    'in an environment you trust: python -c "import pandas as pd; '
    "pd.read_pickle('{path}').to_csv('{stem}.csv', index=False)\" and pass the .csv"
)


@dataclass
class MultimodalData:
    """``features[m]`` is an (N × D_m) float32 array; ``labels`` and ``domains`` are (N,) ints."""

    features: tuple[np.ndarray, ...]
    labels: np.ndarray
    domains: np.ndarray
    modalities: tuple[str, ...] = ()
    n_classes: int | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.features, np.ndarray) or not isinstance(self.features, Sequence):
            raise TypeError("features must be a sequence with one array per modality")
        if len(self.features) == 0:
            raise ValueError("features must hold at least one modality")
        feats = []
        for m, x in enumerate(self.features):
            x = np.asarray(x)
            if x.ndim != 2:
                raise ValueError(f"modality {m} must be 2-D (N × D), got shape {x.shape}")
            if not np.issubdtype(x.dtype, np.number):
                raise TypeError(f"modality {m} must be numeric, got {x.dtype}")
            x = x.astype(np.float32, copy=False)
            if not np.isfinite(x).all():
                raise ValueError(f"modality {m} has NaN or infinite features")
            feats.append(x)
        self.features = tuple(feats)
        self.labels = np.asarray(self.labels)
        self.domains = np.asarray(self.domains)
        n = len(self.labels)
        lengths = [len(x) for x in self.features]
        if any(k != n for k in lengths) or len(self.domains) != n:
            raise ValueError(
                f"every modality, labels and domains need the same length; got modalities "
                f"{lengths}, labels {n}, domains {len(self.domains)}"
            )
        for name in ("labels", "domains"):
            arr = getattr(self, name)
            if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
                raise TypeError(f"{name} must be a 1-D integer array, got {arr.dtype} {arr.shape}")
        if n and self.labels.min() < 0:
            raise ValueError("labels must be non-negative class indices")
        if not self.modalities:
            self.modalities = tuple(f"m{m}" for m in range(len(self.features)))
        if len(self.modalities) != len(self.features):
            raise ValueError(
                f"{len(self.modalities)} modality names for {len(self.features)} modalities"
            )
        if self.n_classes is None:
            self.n_classes = int(self.labels.max()) + 1 if n else 0

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def n_modalities(self) -> int:
        return len(self.features)

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(x.shape[1] for x in self.features)

    @property
    def domain_ids(self) -> list[int]:
        return sorted(int(d) for d in np.unique(self.domains))

    def subset(self, index: np.ndarray) -> MultimodalData:
        index = np.asarray(index)
        return replace(
            self,
            features=tuple(x[index] for x in self.features),
            labels=self.labels[index],
            domains=self.domains[index],
            meta=dict(self.meta),
        )

    def select_modalities(self, which: Sequence[int]) -> MultimodalData:
        which = list(which)
        if not which or any(not 0 <= m < self.n_modalities for m in which):
            raise ValueError(f"modalities must be indices in [0, {self.n_modalities}), got {which}")
        return replace(
            self,
            features=tuple(self.features[m] for m in which),
            modalities=tuple(self.modalities[m] for m in which),
            meta=dict(self.meta),
        )


@dataclass
class LODOSplit:
    """Leave-one-domain-out: ``train`` and ``val`` from the sources, ``test`` the target."""

    train: MultimodalData
    val: MultimodalData
    test: MultimodalData
    sources: tuple[int, ...]
    target: int


def lodo_split(
    data: MultimodalData,
    target: int,
    *,
    sources: Sequence[int] | None = None,
    val_fraction: float = 0.2,
    rng: np.random.Generator,
) -> LODOSplit:
    """Hold out domain ``target``; split each source domain into train / source-val."""
    domains = data.domain_ids
    if target not in domains:
        raise ValueError(f"target domain {target} is not in the data's domains {domains}")
    srcs = tuple(d for d in domains if d != target) if sources is None else tuple(sources)
    if target in srcs:
        raise ValueError(f"the target domain {target} is among the sources {list(srcs)}")
    if len(srcs) == 0:
        raise ValueError("leave-one-domain-out needs at least one source domain")
    missing = [d for d in srcs if d not in domains]
    if missing:
        raise ValueError(f"source domains {missing} are not in the data's domains {domains}")
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must lie in [0, 1), got {val_fraction}")
    train_idx, val_idx = [], []
    for d in srcs:
        idx = np.flatnonzero(data.domains == d)
        idx = idx[rng.permutation(len(idx))]
        k = round(val_fraction * len(idx))
        val_idx.append(idx[:k])
        train_idx.append(idx[k:])
    return LODOSplit(
        train=data.subset(np.sort(np.concatenate(train_idx))),
        val=data.subset(np.sort(np.concatenate(val_idx))),
        test=data.subset(np.flatnonzero(data.domains == target)),
        sources=srcs,
        target=int(target),
    )


# -- the CoOcc-MMDG simulator ----------------------------------------------------------------
@dataclass(frozen=True)
class CoOccConfig:
    """Knobs of CoOcc-MMDG (defaults: the smoke setting, M = 2)."""

    n_classes: int = 6
    n_domains: int = 4
    n_modalities: int = 2
    dim: int = 32
    latent: int = 8
    per_domain: int = 600
    noise: float = 1.6  # σ: one modality alone reaches about 65-70 % (see tests)
    code_bits: int = 3  # r
    amplitude: float = 3.0  # κ: code amplitude in units of σ
    rho: float = 0.95  # P(c_a ⊙ c_b = h(y)) in a source domain
    style_scale: float = 0.3  # sd of log per-dimension domain scale
    style_shift: float = 0.5  # sd of per-dimension domain offset
    signal: str = "tanh"  # "tanh": tanh(A u_y); "mlp": a random 2-layer network of u_y

    def __post_init__(self) -> None:
        if self.n_modalities < 2:
            raise ValueError("a co-occurrence needs at least 2 modalities")
        if self.n_domains < 2:
            raise ValueError("leave-one-domain-out needs at least 2 domains")
        if self.n_classes < 2 or 2**self.code_bits < self.n_classes:
            raise ValueError(
                f"code_bits={self.code_bits} gives {2**self.code_bits} codes for "
                f"{self.n_classes} classes; need 2**code_bits >= n_classes >= 2"
            )
        if not 0.0 <= self.rho <= 1.0:
            raise ValueError(f"rho must lie in [0, 1], got {self.rho}")
        if self.code_bits > self.dim:
            raise ValueError("code_bits must not exceed dim")
        if self.signal not in ("tanh", "mlp"):
            raise ValueError(f"signal must be 'tanh' or 'mlp', got {self.signal!r}")


def _orthonormal(rng: np.random.Generator, d: int, k: int) -> np.ndarray:
    q, _ = np.linalg.qr(rng.standard_normal((d, k)))
    return q[:, :k]


def simulate_cooccurrence(
    config: CoOccConfig, *, target: int | None, rng: np.random.Generator
) -> MultimodalData:
    """Sample CoOcc-MMDG: every domain but ``target`` carries the co-occurrence.

    ``target=None`` gives every domain the co-occurrence (a source-only world). The
    ``meta`` dict records the codes written (``code_a``, ``code_b``) and whether the
    product was forced to the class code (``forced``).
    """
    cfg = config
    if target is not None and not 0 <= target < cfg.n_domains:
        raise ValueError(f"target must be a domain in [0, {cfg.n_domains}), got {target}")
    C, M, D, L, r = cfg.n_classes, cfg.n_modalities, cfg.dim, cfg.latent, cfg.code_bits
    u = rng.standard_normal((C, L))  # class latents u_y
    if cfg.signal == "tanh":
        maps = [rng.standard_normal((D, L)) / np.sqrt(L) for _ in range(M)]
        clean = [np.tanh(u @ a.T) for a in maps]  # (C, D) per modality
    else:
        clean = []
        for _ in range(M):
            w1 = rng.standard_normal((L, 4 * L)) / np.sqrt(L)
            w2 = rng.standard_normal((4 * L, D)) / np.sqrt(4 * L)
            h = np.tanh(u @ w1) @ w2
            clean.append(h / h.std())
    # codes h(y): distinct sign vectors, one per class
    all_codes = np.array(
        [[1 if (k >> b) & 1 else -1 for b in range(r)] for k in range(2**r)], dtype=float
    )
    class_code = all_codes[rng.choice(2**r, size=C, replace=False)]
    directions = [_orthonormal(rng, D, r) for _ in range(M)]
    style = [
        [
            (
                np.exp(cfg.style_scale * rng.standard_normal(D)),
                cfg.style_shift * rng.standard_normal(D),
            )
            for _ in range(M)
        ]
        for _ in range(cfg.n_domains)
    ]
    feats: list[list[np.ndarray]] = [[] for _ in range(M)]
    labels, domains, codes, forced_all = [], [], [], []
    for d in range(cfg.n_domains):
        n = cfg.per_domain
        y = rng.integers(0, C, size=n)
        # per-modality codes: c_0 uniform; in a source domain, with probability ρ every
        # other modality's code is c_0 ⊙ h(y) (independent and uniform otherwise), so each
        # pair with modality 0 sees the class through the product and no modality alone does
        c = rng.choice([-1.0, 1.0], size=(M, n, r))
        forced = (rng.random(n) < cfg.rho) if d != target else np.zeros(n, dtype=bool)
        for m in range(1, M):
            c[m][forced] = (c[0] * class_code[y])[forced]
        for m in range(M):
            x = clean[m][y] + cfg.noise * rng.standard_normal((n, D))
            scale, shift = style[d][m]
            x = x * scale + shift
            x = x + cfg.amplitude * cfg.noise * c[m] @ directions[m].T
            feats[m].append(x.astype(np.float32))
        labels.append(y)
        domains.append(np.full(n, d))
        codes.append(c.transpose(1, 0, 2))
        forced_all.append(forced)
    return MultimodalData(
        features=tuple(np.concatenate(f) for f in feats),
        labels=np.concatenate(labels).astype(np.int64),
        domains=np.concatenate(domains).astype(np.int64),
        modalities=tuple(f"m{m}" for m in range(M)),
        n_classes=C,
        meta={
            "codes": np.concatenate(codes),  # (N, M, r)
            "forced": np.concatenate(forced_all),
            "class_code": class_code,
            "target": target,
        },
    )


def simulate_digits(
    *,
    target: int | None,
    rng: np.random.Generator,
    n_domains: int = 4,
    code_bits: int = 4,
    amplitude: float = 3.0,
    rho: float = 0.95,
    audio_len: int = 32,
    noise: float = 0.6,
) -> MultimodalData:
    """Two-modality digits: scikit-learn's bundled 8 × 8 digits with a per-domain
    background and contrast ("image"), and a synthetic 1-D "audio" of the class (a tone
    of class-specific frequency, domain-specific gain and noise floor), with the same
    cross-modal code as CoOcc-MMDG (4 bits for 10 classes)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = digits.data.astype(np.float64) / 16.0
    y_all = digits.target.astype(np.int64)
    C = 10
    order = rng.permutation(len(y_all))
    assign = np.array_split(order, n_domains)
    all_codes = np.array(
        [[1 if (k >> b) & 1 else -1 for b in range(code_bits)] for k in range(2**code_bits)],
        dtype=float,
    )
    class_code = all_codes[rng.choice(2**code_bits, size=C, replace=False)]
    dirs = [_orthonormal(rng, 64, code_bits), _orthonormal(rng, audio_len, code_bits)]
    t = np.arange(audio_len) / audio_len
    feats_img, feats_aud, labels, domains = [], [], [], []
    for d, idx in enumerate(assign):
        y = y_all[idx]
        n = len(idx)
        background = rng.normal(0, 0.4, 64)
        contrast = np.exp(rng.normal(0, 0.3))
        img = images[idx] * contrast + background + noise * rng.standard_normal((n, 64))
        gain, floor = np.exp(rng.normal(0, 0.3)), rng.normal(0, 0.3, audio_len)
        phase = rng.uniform(0, 2 * np.pi, size=(n, 1))
        tone = np.sin(2 * np.pi * (1 + y[:, None]) * t[None, :] + phase)
        aud = gain * tone + floor + 1.5 * noise * rng.standard_normal((n, audio_len))
        c = rng.choice([-1.0, 1.0], size=(2, n, code_bits))
        forced = (rng.random(n) < rho) if d != target else np.zeros(n, dtype=bool)
        c[1][forced] = (c[0] * class_code[y])[forced]
        img = img + amplitude * noise * c[0] @ dirs[0].T
        aud = aud + amplitude * noise * c[1] @ dirs[1].T
        feats_img.append(img.astype(np.float32))
        feats_aud.append(aud.astype(np.float32))
        labels.append(y)
        domains.append(np.full(n, d))
    return MultimodalData(
        features=(np.concatenate(feats_img), np.concatenate(feats_aud)),
        labels=np.concatenate(labels),
        domains=np.concatenate(domains).astype(np.int64),
        modalities=("image", "audio"),
        n_classes=C,
        meta={"target": target, "class_code": class_code},
    )


# -- loaders ---------------------------------------------------------------------------------
def _refuse_pickle(path: Path) -> None:
    if path.suffix.lower() in (".pkl", ".pickle"):
        raise ValueError(f"{path.name}: " + PICKLE_HINT.format(path=path.name, stem=path.stem))


def _read_arrays(path: Path) -> dict[str, np.ndarray]:
    suffix = path.suffix.lower()
    _refuse_pickle(path)
    if not path.exists():
        raise FileNotFoundError(f"no such feature file: {path}")
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    if suffix == ".npy":
        return {"features": np.load(path, allow_pickle=False)}
    if suffix == ".pt":
        import torch

        obj = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(obj, torch.Tensor):
            return {"features": obj.numpy()}
        if not isinstance(obj, Mapping):
            raise TypeError(f"{path.name}: expected a tensor or a dict of tensors, got {type(obj)}")
        out = {}
        for k, v in obj.items():
            if isinstance(v, torch.Tensor):
                out[str(k)] = v.detach().cpu().numpy()
            elif isinstance(v, (list, tuple)):
                out[str(k)] = np.asarray(v)
        return out
    raise ValueError(f"{path.name}: feature files must be .npz, .npy or .pt, got {suffix!r}")


def load_features(path: str | Path, *, modalities: Sequence[str] | None = None) -> MultimodalData:
    """One file with every modality: ``labels``, ``domains`` and one (N × D) array per
    modality (the other keys, in stored order, or those named in ``modalities``)."""
    path = Path(path)
    arrays = _read_arrays(path)
    for key in ("labels", "domains"):
        if key not in arrays:
            raise ValueError(f"{path.name} lacks the array {key!r}; has {sorted(arrays)}")
    names = (
        list(modalities)
        if modalities
        else [k for k in arrays if k not in ("labels", "domains", "keys")]
    )
    missing = [k for k in names if k not in arrays]
    if missing or not names:
        raise ValueError(
            f"{path.name}: modalities {missing or names} not found; has {sorted(arrays)}"
        )
    return MultimodalData(
        features=tuple(arrays[k] for k in names),
        labels=arrays["labels"].astype(np.int64),
        domains=arrays["domains"].astype(np.int64),
        modalities=tuple(names),
    )


@dataclass
class SplitTable:
    """The rows of one official split file: sample keys, labels, the domain it names."""

    keys: list[str]
    labels: np.ndarray
    domain: str


def load_hac_split(path: str | Path) -> SplitTable:
    """HAC's ``HAC_{train,test}_only_<domain>.csv``: rows ``file,label``, no header."""
    path = Path(path)
    _refuse_pickle(path)
    keys, labels = [], []
    with path.open(newline="") as fh:
        for line_no, row in enumerate(csv.reader(fh), start=1):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 2:
                raise ValueError(f"{path.name}:{line_no}: expected 'file,label', got {row!r}")
            try:
                labels.append(int(row[1]))
            except ValueError:
                raise ValueError(
                    f"{path.name}:{line_no}: label {row[1]!r} is not an integer (HAC split "
                    "files have no header)"
                ) from None
            keys.append(row[0].strip())
    stem = path.stem
    domain = stem.split("_only_")[-1] if "_only_" in stem else stem
    return SplitTable(keys=keys, labels=np.asarray(labels, dtype=np.int64), domain=domain)


EPIC_COLUMNS = ("video_id", "start_frame", "stop_frame", "verb_class")


def epic_key(video_id: str, start: int, stop: int) -> str:
    """The sample key of an EPIC row: ``<video_id>_<start_frame>_<stop_frame>``."""
    return f"{video_id}_{int(start)}_{int(stop)}"


def load_epic_split(path: str | Path) -> SplitTable:
    """An MM-SADA EPIC split (``D1_train`` …) converted to CSV or Parquet."""
    path = Path(path)
    _refuse_pickle(path)
    import pandas as pd

    suffix = path.suffix.lower()
    if suffix == ".csv":
        table = pd.read_csv(path)
    elif suffix in (".parquet", ".pq"):
        table = pd.read_parquet(path)
    else:
        raise ValueError(f"{path.name}: EPIC split files must be .csv or .parquet, got {suffix!r}")
    missing = [c for c in EPIC_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(
            f"{path.name} lacks the MM-SADA columns {missing}; has {list(table.columns)}"
        )
    keys = [
        epic_key(v, a, b)
        for v, a, b in zip(
            table["video_id"], table["start_frame"], table["stop_frame"], strict=True
        )
    ]
    domain = path.stem.split("_")[0]
    return SplitTable(keys=keys, labels=table["verb_class"].to_numpy(np.int64), domain=domain)


def load_split_features(
    split_files: Mapping[str, str | Path] | Sequence[str | Path],
    features: Mapping[str, Mapping[str, str | Path] | str | Path],
    *,
    kind: str = "auto",
) -> MultimodalData:
    """Features of several domains keyed to their official split files.

    ``split_files`` maps a domain name to its split file (or lists the files; the domain
    is then read from the file name). ``features[modality][domain]`` (or a path template
    with ``{domain}``) is a feature file holding either ``keys`` (sample ids: HAC's
    ``file``, EPIC's ``<video_id>_<start>_<stop>``) and ``features``, or ``features`` with
    one row per split-file row, in order. Domains become ids 0, 1, … in the given order.
    """
    if not isinstance(split_files, Mapping):
        split_files = {str(i): p for i, p in enumerate(split_files)}
    if not split_files:
        raise ValueError("split_files is empty")
    if not features:
        raise ValueError("features must name at least one modality")
    tables = []
    for name, path in split_files.items():
        path = Path(path)
        k = kind
        if k == "auto":
            k = "hac" if path.name.startswith("HAC_") else "epic"
        if k == "hac":
            tables.append((name, load_hac_split(path)))
        elif k == "epic":
            tables.append((name, load_epic_split(path)))
        else:
            raise ValueError(f"kind must be 'auto', 'hac' or 'epic', got {kind!r}")
    per_modality: dict[str, list[np.ndarray]] = {m: [] for m in features}
    labels, domains = [], []
    for d, (name, table) in enumerate(tables):
        for modality, source in features.items():
            if isinstance(source, Mapping):
                if name not in source:
                    raise ValueError(f"no {modality!r} feature file for domain {name!r}")
                fpath = Path(source[name])
            else:
                fpath = Path(str(source).format(domain=table.domain, name=name))
            arrays = _read_arrays(fpath)
            if "features" not in arrays:
                raise ValueError(f"{fpath.name} lacks the array 'features'; has {sorted(arrays)}")
            x = np.asarray(arrays["features"])
            if "keys" in arrays:
                index = {str(k): i for i, k in enumerate(arrays["keys"].tolist())}
                absent = [k for k in table.keys if k not in index]
                if absent:
                    raise ValueError(
                        f"{fpath.name} has no features for {len(absent)} rows of the {name!r} "
                        f"split, e.g. {absent[:3]}"
                    )
                x = x[[index[k] for k in table.keys]]
            elif len(x) != len(table.keys):
                raise ValueError(
                    f"{fpath.name} has {len(x)} rows and no 'keys'; the {name!r} split has "
                    f"{len(table.keys)} rows"
                )
            per_modality[modality].append(x)
        labels.append(table.labels)
        domains.append(np.full(len(table.labels), d, dtype=np.int64))
    return MultimodalData(
        features=tuple(np.concatenate(v) for v in per_modality.values()),
        labels=np.concatenate(labels),
        domains=np.concatenate(domains),
        modalities=tuple(features),
        meta={"domains": [name for name, _ in tables]},
    )
