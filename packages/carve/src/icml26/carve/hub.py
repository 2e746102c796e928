"""Model hubs that grow: the CMRBench setting, simulated or loaded from the official files.

A :class:`Hub` is the whole stream of a Continual Model Routing benchmark (paper §3):
a hierarchy *area → domain → family → model*, one model card per model, and a
sequence of :class:`Experience` objects. Experience ``t`` brings new models (ids are
appended to the registry, never re-indexed) and (query, gold model, domain) triples
for them, split into train and test queries.

- :func:`simulate_hub` builds a CMRBench-style hub (reconstructed; the real benchmark is
  APIBench-HF → ToolMMBench → HuggingBench-1 → HuggingBench-2): heavy-tailed domain sizes,
  near-duplicate variants inside families (sizes), version releases of old families in
  later experiences (the old version stays the right answer for old queries), new
  domains arriving, and a query style that changes from one experience to the next.
- :func:`load_cmrbench` reads the official JSON / JSON Lines rows (``instruction``,
  ``model_name``, ``model_family``, ``domain``, ``api_data``) into the same structure.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# -- the structure ----------------------------------------------------------------------


@dataclass(frozen=True)
class ModelCard:
    """One candidate model of the hub and the text that describes it."""

    model_id: str
    family: str
    domain: str
    area: str
    card: str
    experience: int


@dataclass(frozen=True)
class Split:
    """Queries of one experience: texts, gold model index and domain index per query."""

    texts: tuple[str, ...]
    model: np.ndarray  # (n,) int64, index into Hub.models
    domain: np.ndarray  # (n,) int64, index into Hub.domains

    def __post_init__(self) -> None:
        n = len(self.texts)
        if self.model.shape != (n,) or self.domain.shape != (n,):
            raise ValueError(
                f"a split needs one model and one domain per text: {n} texts, "
                f"model {self.model.shape}, domain {self.domain.shape}"
            )

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, index: np.ndarray) -> Split:
        index = np.asarray(index, dtype=np.int64)
        return Split(tuple(self.texts[i] for i in index), self.model[index], self.domain[index])


@dataclass(frozen=True)
class Experience:
    """Experience ``index``: the models it registers and its train/test queries."""

    index: int
    name: str
    new_models: np.ndarray  # (m,) int64, contiguous block of Hub.models
    train: Split
    test: Split


@dataclass
class Hub:
    """A growing hub: models ordered by the experience that introduced them."""

    models: list[ModelCard]
    experiences: list[Experience]
    domains: list[str]
    families: list[str]
    areas: list[str]
    model_domain: np.ndarray = field(init=False)
    model_family: np.ndarray = field(init=False)
    model_area: np.ndarray = field(init=False)
    domain_area: np.ndarray = field(init=False)
    _index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        dom = {d: i for i, d in enumerate(self.domains)}
        fam = {f: i for i, f in enumerate(self.families)}
        area = {a: i for i, a in enumerate(self.areas)}
        self.model_domain = np.array([dom[m.domain] for m in self.models], dtype=np.int64)
        self.model_family = np.array([fam[m.family] for m in self.models], dtype=np.int64)
        self.model_area = np.array([area[m.area] for m in self.models], dtype=np.int64)
        self.domain_area = np.array([area[area_of(d)] for d in self.domains], dtype=np.int64)
        self._index = {m.model_id: i for i, m in enumerate(self.models)}
        if len(self._index) != len(self.models):
            raise ValueError("model ids must be unique")
        first = np.array([m.experience for m in self.models])
        if np.any(np.diff(first) < 0):
            raise ValueError("models must be ordered by the experience that introduces them")

    @property
    def model_ids(self) -> list[str]:
        return [m.model_id for m in self.models]

    @property
    def cards(self) -> list[str]:
        return [m.card for m in self.models]

    def index(self, model_ids: str | Sequence[str]) -> np.ndarray:
        """Registry indices of model ids; an unknown id is a ``ValueError``."""
        ids = [model_ids] if isinstance(model_ids, str) else list(model_ids)
        missing = [m for m in ids if m not in self._index]
        if missing:
            raise ValueError(f"unknown model id(s) {missing[:5]} (hub has {len(self.models)})")
        return np.array([self._index[m] for m in ids], dtype=np.int64)

    def n_registered(self, experience: int) -> int:
        """How many models are registered once ``experience`` (0-based) has arrived."""
        if not 0 <= experience < len(self.experiences):
            raise ValueError(
                f"experience must lie in [0, {len(self.experiences)}), got {experience}"
            )
        return int(self.experiences[experience].new_models[-1]) + 1

    def summary(self) -> list[dict[str, Any]]:
        """Per experience: new models, registered models, domains, families, queries."""
        out = []
        for e in self.experiences:
            models = e.new_models
            out.append(
                {
                    "experience": e.name,
                    "new_models": len(models),
                    "registered": self.n_registered(e.index),
                    "domains": len(np.unique(self.model_domain[models])),
                    "families": len(np.unique(self.model_family[models])),
                    "train_queries": len(e.train),
                    "test_queries": len(e.test),
                }
            )
        return out


# The parent groups of the official code (``extract_parent_group``): a domain string
# such as "Computer Vision Object Detection" belongs to the area "computer vision".
AREA_PREFIXES = (
    "natural language processing",
    "computer vision",
    "audio",
    "multimodal",
    "tabular",
    "reinforcement learning",
    "time series",
    "graph",
)


def area_of(domain: str) -> str:
    """The parent group of a domain string (official ``extract_parent_group``)."""
    d = " ".join(domain.strip().lower().split())
    for prefix in AREA_PREFIXES:
        if d.startswith(prefix):
            return prefix
    tokens = d.split()
    return tokens[0] if tokens and tokens[0] != "unknown" else "other"


# -- the simulator (reconstructed) -------------------------------------------------------

# (area, task, verbs, objects). Domain = f"{Area} {Task}" as in HuggingFace's taxonomy.
# Verbs and objects are deliberately shared across areas ("classify", "generate"),
# so that a domain is recognised from a combination of words, as in real requests.
TASKS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("Natural Language Processing", "Text Classification",
     ("classify", "categorize", "label", "sort"), ("reviews", "emails", "tickets", "posts")),
    ("Natural Language Processing", "Token Classification",
     ("tag entities in", "extract names from", "label each word of", "find locations in"),
     ("contracts", "news articles", "sentences", "reports")),
    ("Natural Language Processing", "Question Answering",
     ("answer questions about", "find answers in", "look up facts in", "respond to queries on"),
     ("manuals", "wikis", "documents", "policies")),
    ("Natural Language Processing", "Summarization",
     ("summarize", "shorten", "condense", "write a digest of"),
     ("reports", "meeting notes", "articles", "papers")),
    ("Natural Language Processing", "Translation",
     ("translate", "convert the language of", "localize", "render in another language"),
     ("documents", "subtitles", "messages", "web pages")),
    ("Natural Language Processing", "Text Generation",
     ("generate", "write", "draft", "continue"), ("stories", "emails", "posts", "answers")),
    ("Natural Language Processing", "Fill-Mask",
     ("fill the missing word in", "complete the masked token of", "predict the blank in",
      "restore the gap in"), ("sentences", "phrases", "templates", "documents")),
    ("Natural Language Processing", "Sentence Similarity",
     ("compare", "measure the similarity of", "match", "find duplicates among"),
     ("sentences", "questions", "reviews", "articles")),
    ("Natural Language Processing", "Zero-Shot Classification",
     ("classify without examples", "assign unseen labels to", "tag with new categories",
      "categorize with arbitrary labels"), ("posts", "tickets", "headlines", "emails")),
    ("Natural Language Processing", "Conversational",
     ("chat about", "hold a dialogue on", "build a chatbot for", "talk with customers about"),
     ("orders", "support issues", "bookings", "products")),
    ("Computer Vision", "Image Classification",
     ("classify", "categorize", "label", "recognize"), ("photos", "images", "pictures", "scans")),
    ("Computer Vision", "Object Detection",
     ("detect", "locate", "draw boxes around", "count"),
     ("cars in photos", "pedestrians in images", "defects in pictures", "animals in frames")),
    ("Computer Vision", "Image Segmentation",
     ("segment", "outline", "separate the regions of", "mask"),
     ("photos", "images", "scans", "aerial pictures")),
    ("Computer Vision", "Depth Estimation",
     ("estimate the depth of", "measure distances in", "build a depth map of",
      "infer 3d structure from"), ("photos", "images", "frames", "room pictures")),
    ("Computer Vision", "Image-to-Image",
     ("restore", "upscale", "colorize", "enhance"), ("photos", "images", "pictures", "scans")),
    ("Computer Vision", "Video Classification",
     ("classify", "recognize actions in", "label", "categorize"),
     ("videos", "clips", "footage", "recordings")),
    ("Computer Vision", "Keypoint Detection",
     ("detect keypoints in", "estimate poses in", "track joints in", "find landmarks in"),
     ("images", "photos", "frames", "pictures")),
    ("Computer Vision", "Unconditional Image Generation",
     ("generate", "synthesize", "create", "sample new"),
     ("images", "pictures", "artworks", "textures")),
    ("Audio", "Automatic Speech Recognition",
     ("transcribe", "convert to text", "write down", "caption"),
     ("recordings", "voice notes", "podcasts", "phone calls")),
    ("Audio", "Text-to-Speech",
     ("read aloud", "synthesize speech for", "voice", "narrate"),
     ("articles", "messages", "stories", "announcements")),
    ("Audio", "Audio Classification",
     ("classify", "label", "recognize sounds in", "categorize"),
     ("recordings", "audio clips", "sound files", "voice notes")),
    ("Audio", "Audio-to-Audio",
     ("denoise", "separate the speakers in", "clean", "enhance"),
     ("recordings", "audio clips", "podcasts", "phone calls")),
    ("Audio", "Voice Activity Detection",
     ("detect speech in", "find who speaks in", "segment the speakers of", "spot voices in"),
     ("recordings", "meetings", "phone calls", "audio streams")),
    ("Multimodal", "Image-to-Text",
     ("describe", "caption", "write text for", "explain"),
     ("photos", "images", "pictures", "screenshots")),
    ("Multimodal", "Text-to-Image",
     ("generate images from", "draw", "illustrate", "create pictures of"),
     ("descriptions", "prompts", "stories", "captions")),
    ("Multimodal", "Visual Question Answering",
     ("answer questions about", "respond to queries on", "reason about", "find answers in"),
     ("photos", "images", "pictures", "charts")),
    ("Multimodal", "Document Question Answering",
     ("answer questions about", "extract answers from", "look up facts in", "query"),
     ("invoices", "scanned documents", "forms", "receipts")),
    ("Multimodal", "Text-to-Video",
     ("generate videos from", "animate", "create clips of", "render footage of"),
     ("descriptions", "prompts", "scripts", "stories")),
    ("Multimodal", "Feature Extraction",
     ("embed", "extract features from", "index", "encode"),
     ("images and captions", "photos with text", "product listings", "documents")),
    ("Tabular", "Tabular Classification",
     ("classify", "predict the class of", "label", "categorize"),
     ("spreadsheet rows", "customer records", "transactions", "csv tables")),
    ("Tabular", "Tabular Regression",
     ("predict values for", "forecast", "estimate prices from", "regress"),
     ("spreadsheet rows", "sales records", "housing data", "csv tables")),
    ("Reinforcement Learning", "Reinforcement Learning",
     ("train an agent for", "play", "control", "learn a policy for"),
     ("games", "simulations", "environments", "levels")),
    ("Reinforcement Learning", "Robotics",
     ("control", "plan grasps for", "navigate", "steer"),
     ("robot arms", "drones", "mobile robots", "warehouse robots")),
    ("Natural Language Processing", "Feature Extraction",
     ("embed", "extract features from", "encode", "vectorize"),
     ("sentences", "documents", "queries", "paragraphs")),
    ("Natural Language Processing", "Table Question Answering",
     ("answer questions about", "query", "look up values in", "find answers in"),
     ("tables", "spreadsheets", "csv tables", "databases")),
    ("Computer Vision", "Zero-Shot Image Classification",
     ("classify without examples", "assign unseen labels to", "recognize new categories in",
      "categorize with arbitrary labels"), ("photos", "images", "pictures", "scans")),
    ("Computer Vision", "Image Feature Extraction",
     ("embed", "extract features from", "index", "encode"),
     ("photos", "images", "pictures", "product shots")),
    ("Audio", "Audio Feature Extraction",
     ("embed", "extract features from", "encode", "index"),
     ("recordings", "audio clips", "songs", "podcasts")),
    ("Multimodal", "Graph Machine Learning",
     ("predict properties of", "classify", "embed", "analyze"),
     ("molecules", "social graphs", "knowledge graphs", "citation networks")),
    ("Tabular", "Time Series Forecasting",
     ("forecast", "predict the next values of", "extrapolate", "project"),
     ("sales series", "sensor readings", "energy demand", "stock prices")),
)  # fmt: skip

SPECIALITIES = (
    "medical", "legal", "financial", "multilingual", "chinese", "scientific", "social media",
    "e-commerce", "satellite", "news", "customer support", "gaming", "automotive", "retail",
    "industrial", "educational", "biomedical", "agricultural", "insurance", "travel",
    "security", "sports", "music", "spanish", "german", "arabic", "japanese", "code",
)  # fmt: skip
SPECIALITY_CUES = (
    "for {s} data", "specialised on {s} content", "tuned for the {s} domain",
    "that knows {s} material well", "trained on {s} sources",
)  # fmt: skip

SIZES = ("tiny", "small", "base", "large", "xl")
SIZE_CUES = {
    "tiny": ("it must run on a phone", "ultra lightweight please", "minimal memory footprint"),
    "small": ("fast and cheap to serve", "low latency is key", "a compact one"),
    "base": ("a balanced standard size", "medium sized is fine", "a sensible default size"),
    "large": ("accuracy matters more than speed", "high quality output", "a big model is ok"),
    "xl": ("the most powerful available", "state of the art quality", "no limit on compute"),
}
VERSION_CUES = (
    ("the original release", "the first version"),
    ("the updated v2 release", "the second generation"),
    ("the newest v3 release", "the third generation"),
    ("the v4 release", "the fourth generation"),
)
ORGS = ("acme-ai", "nordlab", "bluefin", "quanta", "deepriver", "openfield", "lumen", "vectra")
FILLERS = (
    "please", "quickly", "for our team", "in production", "for a prototype", "today",
    "for a startup", "at scale", "for research", "on a budget", "for a demo", "asap",
)  # fmt: skip

# Each experience asks in its own style, as the four CMRBench sources do
# (APIBench instructions, ToolMM requests, self-instructed HuggingBench questions).
STYLES = (
    ("###Instruction: {q}.", "###Instruction: we want to {q}.",
     "###Instruction: our app must {q}."),
    ("I need a model to {q}.", "Help me {q}.", "Find a tool that can {q}."),
    ("Could you {q}?", "Is there a way to {q}?", "Can someone {q}?"),
    ("Which model should I use to {q}?", "What is the best model to {q}?",
     "Recommend a model to {q}."),
)  # fmt: skip

_SYLLABLES = ("ka", "zo", "ri", "ven", "tor", "mi", "lu", "dex", "sar", "no", "bel", "qui", "fa",
              "ron", "tis", "gal", "mor", "pe", "xan", "ul", "dra", "ko", "sen", "vi")  # fmt: skip


@dataclass(frozen=True)
class HubConfig:
    """Knobs of :func:`simulate_hub` (reconstructed; defaults = the smoke scale)."""

    n_experiences: int = 4
    n_domains: int = 16
    first_domains_fraction: float = 0.6
    models_per_experience: int = 60
    sizes_per_family: tuple[int, int] = (2, 4)
    train_per_model: int = 40
    test_per_model: int = 10
    zipf_exponent: float = 1.1
    version_release_fraction: float = 0.35
    new_domain_family_fraction: float = 0.35

    def __post_init__(self) -> None:
        if self.n_experiences < 1:
            raise ValueError(f"n_experiences must be >= 1, got {self.n_experiences}")
        if not 2 <= self.n_domains <= len(TASKS):
            raise ValueError(f"n_domains must lie in [2, {len(TASKS)}], got {self.n_domains}")
        lo, hi = self.sizes_per_family
        if not 1 <= lo <= hi <= len(SIZES):
            raise ValueError(f"sizes_per_family must satisfy 1 <= lo <= hi <= 5, got {lo, hi}")
        if self.models_per_experience < hi:
            raise ValueError("models_per_experience must allow at least one family")
        if self.train_per_model < 1 or self.test_per_model < 1:
            raise ValueError("train_per_model and test_per_model must be positive")
        if not 0 < self.first_domains_fraction <= 1:
            raise ValueError("first_domains_fraction must lie in (0, 1]")


@dataclass
class _Family:
    name: str
    domain: int
    speciality: str
    org: str
    versions: int = 0


def _family_name(rng: np.random.Generator, taken: set[str]) -> str:
    while True:
        name = "".join(rng.choice(_SYLLABLES, size=int(rng.integers(2, 4))))
        if name not in taken:
            taken.add(name)
            return name


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _query(rng: np.random.Generator, task: tuple, fam: _Family, size: str, version: int,
           style: tuple[str, ...]) -> str:  # fmt: skip
    _, _, verbs, objects = task
    u = rng.random(5)
    parts = [f"{_pick(rng, verbs)} {_pick(rng, objects)}"]
    if u[0] < 0.85:
        parts.append(_pick(rng, SPECIALITY_CUES).format(s=fam.speciality))
    if u[1] < 0.7:
        parts.append(_pick(rng, SIZE_CUES[size]))
    if u[2] < 0.5:
        parts.append(_pick(rng, VERSION_CUES[min(version, len(VERSION_CUES)) - 1]))
    if u[3] < 0.2:
        parts.append(f"ideally a {fam.name} model")
    parts += [_pick(rng, FILLERS) for _ in range(int(u[4] * 3))]
    head, tail = parts[0], parts[1:]
    tail = [tail[i] for i in rng.permutation(len(tail))]
    return _pick(rng, style).format(q=", ".join([head, *tail]))


def _card(task: tuple, fam: _Family, size: str, version: int, model_id: str) -> str:
    # Cards use the hub's taxonomy words, requests the users' own words: as on a real hub,
    # a card and a request for the same model share few terms beyond the speciality.
    area, name, _, _ = task
    return (
        f"{model_id}. Pipeline: {area} {name}. Family {fam.name}, {size} checkpoint, "
        f"version {version}. Fine-tuned for {fam.speciality} data."
    )


def simulate_hub(config: HubConfig, rng: np.random.Generator) -> Hub:
    """A CMRBench-style growing hub (reconstructed; see the module docstring).

    Experience 1 opens ``first_domains_fraction`` of the domains; each later one opens an
    equal share of the rest. Families are drawn into domains with Zipf weights (heavy-
    tailed domain sizes). In experiences >= 2 a share ``version_release_fraction`` of the
    new models are new versions of existing families (same speciality, new version cue),
    and ``new_domain_family_fraction`` go to the newly opened domains.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    c = config
    task_ids = rng.choice(len(TASKS), size=c.n_domains, replace=False)
    tasks = [TASKS[i] for i in task_ids]
    domains = [f"{t[0]} {t[1]}" for t in tasks]
    weights = 1.0 / np.arange(1, c.n_domains + 1) ** c.zipf_exponent
    weights = weights[rng.permutation(c.n_domains)]
    n_first = max(1, round(c.first_domains_fraction * c.n_domains))
    rest = np.array_split(np.arange(n_first, c.n_domains), max(1, c.n_experiences - 1))
    opened_at = (
        [np.arange(n_first), *list(rest)] if c.n_experiences > 1 else [np.arange(c.n_domains)]
    )

    taken: set[str] = set()
    families: list[_Family] = []
    used_specs: dict[int, set[str]] = {}
    models: list[ModelCard] = []
    model_meta: list[tuple[int, str, int]] = []  # (family index, size, version)

    def new_family(domain: int) -> int:
        free = [s for s in SPECIALITIES if s not in used_specs.setdefault(domain, set())]
        spec = str(rng.choice(free if free else SPECIALITIES))
        used_specs[domain].add(spec)
        families.append(_Family(_family_name(rng, taken), domain, spec, str(rng.choice(ORGS))))
        return len(families) - 1

    def release(fam_idx: int, exp: int) -> int:
        fam = families[fam_idx]
        fam.versions += 1
        lo, hi = c.sizes_per_family
        k = int(rng.integers(lo, hi + 1))
        sizes = sorted(rng.choice(len(SIZES), size=k, replace=False))
        for s in sizes:
            size = SIZES[s]
            mid = f"{fam.org}/{fam.name}-{size}-v{fam.versions}"
            card = _card(tasks[fam.domain], fam, size, fam.versions, mid)
            models.append(
                ModelCard(
                    mid, fam.name, domains[fam.domain], area_of(domains[fam.domain]), card, exp
                )
            )
            model_meta.append((fam_idx, size, fam.versions))
        return k

    open_domains: list[int] = []
    for exp in range(c.n_experiences):
        fresh = [int(d) for d in opened_at[exp]] if exp < len(opened_at) else []
        open_domains += fresh
        budget = c.models_per_experience
        made = 0
        # every newly opened domain gets at least one family
        for d in fresh:
            made += release(new_family(d), exp)
        while made < budget:
            u = rng.random()
            if exp > 0 and u < c.version_release_fraction:
                old = [i for i, f in enumerate(families) if f.versions < len(VERSION_CUES)]
                fam_idx = int(rng.choice(old)) if old else new_family(int(rng.choice(open_domains)))
            elif (
                exp > 0 and fresh and u < c.version_release_fraction + c.new_domain_family_fraction
            ):
                w = weights[fresh] / weights[fresh].sum()
                fam_idx = new_family(int(rng.choice(fresh, p=w)))
            else:
                w = weights[open_domains] / weights[open_domains].sum()
                fam_idx = new_family(int(rng.choice(open_domains, p=w)))
            made += release(fam_idx, exp)

    experiences = []
    family_names = [f.name for f in families]
    first = np.array([m.experience for m in models])
    for exp in range(c.n_experiences):
        new = np.flatnonzero(first == exp)
        splits = []
        for n_per in (c.train_per_model, c.test_per_model):
            texts, gold = [], []
            for m in new:
                fam_idx, size, version = model_meta[m]
                fam = families[fam_idx]
                for _ in range(n_per):
                    texts.append(_query(rng, tasks[fam.domain], fam, size, version, STYLES[
                        exp % len(STYLES)]))  # fmt: skip
                    gold.append(m)
            gold_arr = np.array(gold, dtype=np.int64)
            dom_of = {d: i for i, d in enumerate(domains)}
            dom = np.array([dom_of[models[g].domain] for g in gold], dtype=np.int64)
            splits.append(Split(tuple(texts), gold_arr, dom))
        experiences.append(Experience(exp, f"E{exp + 1}", new, splits[0], splits[1]))
    area_names = list(dict.fromkeys(area_of(d) for d in domains))
    return Hub(models, experiences, domains, family_names, area_names)


# -- the official format ----------------------------------------------------------------

REQUIRED_FIELDS = ("instruction", "model_name", "domain")


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a CMRBench file: a JSON array of objects, or JSON Lines (the shipped files)."""
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise ValueError(f"{path}: the file is empty")
    try:
        data = json.loads(text)
        rows = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        rows = []
        for line_no, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(
                    f"{path}: line {line_no} is neither part of a JSON array nor a JSON "
                    f"Lines record: {err.msg}"
                ) from None
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: record {i} must be a JSON object, got {type(row).__name__}")
        for key in REQUIRED_FIELDS:
            value = row.get(key)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(
                    f"{path}: record {i} needs a non-empty string {key!r}, got {value!r}"
                )
        fam = row.get("model_family")
        if fam is not None and not isinstance(fam, str):
            raise ValueError(f"{path}: record {i} has a non-string model_family {fam!r}")
        api = row.get("api_data")
        if api is not None and not isinstance(api, dict):
            raise ValueError(f"{path}: record {i} has api_data that is not an object")
    if not rows:
        raise ValueError(f"{path}: no records")
    return rows


def card_text(row: Mapping[str, Any]) -> str:
    """A model card from a CMRBench row: its ``api_data`` fields, else name and domain."""
    api = row.get("api_data") or {}
    parts = [str(row["model_name"]), str(api.get("domain") or row["domain"])]
    for key in ("functionality", "api_name", "description"):
        value = api.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(value.strip())
    return ". ".join(parts)


def load_cmrbench(
    experiences: Mapping[str, str | Path | tuple[str | Path, str | Path]],
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> Hub:
    """Read CMRBench experiences, in order, into a :class:`Hub`.

    ``experiences`` maps a name ("apibench", "mllm", ...) to one file (split into
    train/test with ``test_fraction``, seeded) or to a ``(train, test)`` pair of files.
    Files are the official ``data/processed/*.json`` (JSON Lines) or a JSON array of the
    same records. A model keeps the registry index of the experience that first names it;
    its domain and family are the most frequent ones among its rows.
    """
    if not isinstance(experiences, Mapping) or not experiences:
        raise ValueError("experiences must be a non-empty mapping name -> file(s)")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    per_exp: list[tuple[str, list[dict], list[dict]]] = []
    for name, files in experiences.items():
        if isinstance(files, tuple | list):
            if len(files) != 2:
                raise ValueError(f"experience {name!r}: give one file or a (train, test) pair")
            train, test = _read_rows(Path(files[0])), _read_rows(Path(files[1]))
        else:
            rows = _read_rows(Path(files))
            if len(rows) < 2:
                raise ValueError(f"experience {name!r}: needs at least 2 records to split")
            order = rng.permutation(len(rows))
            n_test = min(len(rows) - 1, max(1, round(test_fraction * len(rows))))
            test = [rows[i] for i in order[:n_test]]
            train = [rows[i] for i in order[n_test:]]
        per_exp.append((str(name), train, test))

    first_seen: dict[str, int] = {}
    domain_votes: dict[str, Counter] = {}
    family_votes: dict[str, Counter] = {}
    cards: dict[str, str] = {}
    for t, (_, train, test) in enumerate(per_exp):
        for row in train + test:
            mid = row["model_name"].strip()
            first_seen.setdefault(mid, t)
            domain_votes.setdefault(mid, Counter())[row["domain"].strip()] += 1
            family_votes.setdefault(mid, Counter())[(row.get("model_family") or mid).strip()] += 1
            cards.setdefault(mid, card_text(row))
    ordered = sorted(first_seen, key=lambda m: (first_seen[m], m))
    models = []
    for mid in ordered:
        dom = domain_votes[mid].most_common(1)[0][0]
        models.append(
            ModelCard(
                mid,
                family_votes[mid].most_common(1)[0][0],
                dom,
                area_of(dom),
                cards[mid],
                first_seen[mid],
            )
        )
    all_domains = {m.domain for m in models}
    for _, train, test in per_exp:
        all_domains |= {r["domain"].strip() for r in train + test}
    domains = sorted(all_domains)
    families = sorted({m.family for m in models})
    areas = sorted({area_of(d) for d in domains})
    index = {m: i for i, m in enumerate(ordered)}
    dom_index = {d: i for i, d in enumerate(domains)}

    def split(rows: list[dict]) -> Split:
        return Split(
            tuple(r["instruction"] for r in rows),
            np.array([index[r["model_name"].strip()] for r in rows], dtype=np.int64),
            np.array([dom_index[r["domain"].strip()] for r in rows], dtype=np.int64),
        )

    exps = []
    for t, (name, train, test) in enumerate(per_exp):
        new = np.array([index[m] for m in ordered if first_seen[m] == t], dtype=np.int64)
        if new.size == 0:
            raise ValueError(f"experience {name!r} introduces no new model")
        exps.append(Experience(t, name, new, split(train), split(test)))
    return Hub(models, exps, domains, families, areas)
