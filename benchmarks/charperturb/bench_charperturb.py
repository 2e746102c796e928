"""Side-by-side: perturbation throughput vs nlpaug, sanitiser completeness and speed vs
glyphguard (and llm-guard's rule), on the same texts in one run.

    uv run python benchmarks/charperturb/bench_charperturb.py [--mb 1.0] [--out results/...]

Throughput is characters of input per CPU second (``time.process_time``), so it is less
affected by other load on a shared machine than wall time; ratios are ours / peer's.
``llm-guard`` 0.3.16 pins ``transformers==4.51.3`` and cannot be installed next to this
workspace's ``transformers``; its ``InvisibleText`` rule (drop Cf, Co, Cn) is measured as
``strip_cf_co_cn`` instead.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from icml26.charperturb import (
    BASELINE_SANITIZERS,
    CHARSETS,
    add_typos,
    inject_invisible,
    strip_charset,
)
from icml26.charperturb.tasks import sentences
from icml26.shared import quiet_dependencies


def _text(n_chars: int, seed: int = 0) -> str:
    out, size, rng = [], 0, np.random.default_rng(seed)
    while size < n_chars:
        s = sentences(200, rng)
        out += s
        size += sum(len(x) + 1 for x in s)
    return " ".join(out)[:n_chars]


def _cps(fn, text: str, min_time: float = 0.2) -> float:
    """Characters per CPU second, repeating short inputs until min_time of CPU has passed."""
    reps, spent = 0, 0.0
    t0 = time.process_time()
    while spent < min_time or reps == 0:
        fn(text)
        reps += 1
        spent = time.process_time() - t0
    return reps * len(text) / spent


def perturbation(sizes: dict[str, int]) -> list[dict]:
    import nlpaug.augmenter.char as nac

    rows = []
    for label, n in sizes.items():
        text = _text(n)
        ours = {
            "UCC-Inj vs k=1": lambda t: inject_invisible(t, "vs", k=1, rng=0),
            "UCC-Inj vs k=3": lambda t: inject_invisible(t, "vs", k=3, rng=0),
            "typos p=1 (QWERTY)": lambda t: add_typos(t, 1.0, rng=0, qwerty=True),
        }
        row = {"size": label, **{k: _cps(f, text) for k, f in ours.items()}}
        if n <= 64_000:  # nlpaug at 1 MB takes minutes on this machine
            kb = nac.KeyboardAug(aug_word_p=1.0, aug_word_max=10**9)
            rc = nac.RandomCharAug(action="substitute", aug_word_p=1.0, aug_word_max=10**9)
            row["nlpaug KeyboardAug"] = _cps(kb.augment, text)
            row["nlpaug RandomCharAug"] = _cps(rc.augment, text)
            row["ratio typos / KeyboardAug"] = row["typos p=1 (QWERTY)"] / row["nlpaug KeyboardAug"]
            row["ratio UCC-Inj k=3 / RandomCharAug"] = (
                row["UCC-Inj vs k=3"] / row["nlpaug RandomCharAug"]
            )
        rows.append(row)
    return rows


def sanitisers(sizes: dict[str, int], ks=(1, 3)) -> list[dict]:
    import glyphguard as gg

    rows = []
    for label, n in sizes.items():
        clean = _text(n, seed=1)
        for name in CHARSETS:
            for k in ks:
                noisy = inject_invisible(clean, name, k=k, rng=0).text
                fns = {
                    "set-aware": lambda t, name=name: strip_charset(t, name),
                    **BASELINE_SANITIZERS,
                    "glyphguard llm-input": lambda t: gg.sanitize(t, "llm-input").text,
                }
                for method, fn in fns.items():
                    out = fn(noisy)
                    rows.append({
                        "size": label, "set": name, "k": k, "method": method,
                        "exact": out == clean,
                        "removed_share": (len(noisy) - len(out)) / (len(noisy) - len(clean)),
                        "mchars_per_cpu_s": _cps(fn, noisy, 0.05) / 1e6,
                    })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1.0, help="size of the large text in MB")
    ap.add_argument("--out", type=Path, default=Path("results/charperturb/bench"))
    args = ap.parse_args(argv)
    sizes = {"1 KB": 1_000, f"{args.mb:g} MB": int(args.mb * 1_000_000)}
    with quiet_dependencies():
        perturb = perturbation(sizes)
        clean = sanitisers(sizes)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps({"perturbation": perturb, "sanitiser": clean},
                                                    indent=1))  # fmt: skip
    for r in perturb:
        print({k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()})
    by: dict[tuple, dict] = {}
    for r in clean:
        by.setdefault((r["size"], r["method"]), {"exact": 0, "n": 0, "cps": []})
        d = by[(r["size"], r["method"])]
        d["exact"] += r["exact"]
        d["n"] += 1
        d["cps"].append(r["mchars_per_cpu_s"])
    print("size | sanitiser | exact (set × k) | median M chars / CPU s")
    for (size, method), d in by.items():
        print(f"{size} | {method} | {d['exact']}/{d['n']} | {np.median(d['cps']):.2f}")
    for size in sizes:
        ours = np.median(by[(size, "set-aware")]["cps"])
        gg_ = np.median(by[(size, "glyphguard llm-input")]["cps"])
        print(f"{size}: set-aware / glyphguard chars/s = {ours / gg_:.1f}×")


if __name__ == "__main__":
    main()
