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


def _timed(fn, text: str, min_time: float = 0.2):
    """(first output, characters per CPU second), repeating short inputs until min_time of
    CPU has passed; a long input runs once."""
    reps, spent, out = 0, 0.0, None
    t0 = time.process_time()
    while spent < min_time or reps == 0:
        res = fn(text)
        out = res if out is None else out
        reps += 1
        spent = time.process_time() - t0
    return out, reps * len(text) / max(spent, 1e-9)


def _cps(fn, text: str, min_time: float = 0.2) -> float:
    return _timed(fn, text, min_time)[1]


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
        kb = nac.KeyboardAug(aug_word_p=1.0, aug_word_max=10**9)
        rc = nac.RandomCharAug(action="substitute", aug_word_p=1.0, aug_word_max=10**9)
        peers = {"nlpaug KeyboardAug": kb.augment, "nlpaug RandomCharAug": rc.augment}
        if n <= 100_000:  # nlpaug on the same whole text
            row.update({k: _cps(f, text) for k, f in peers.items()})
            suffix = ""
        else:
            # nlpaug's time grows faster than linearly in the text length (0.14 M chars/s
            # at 1 KB, 0.04 M at 50 KB): above 100 KB both sides run on the same text cut
            # into 1 KB documents, the way a corpus is augmented
            chunks = [text[i : i + 1_000] for i in range(0, len(text), 1_000)]
            suffix = ", 1 KB documents"
            for k, f in {**ours, **peers}.items():
                row[k + suffix] = _cps(lambda t, f=f, cs=chunks: [f(c) for c in cs], text)
        row["ratio typos / KeyboardAug"] = (
            row["typos p=1 (QWERTY)" + suffix] / row["nlpaug KeyboardAug" + suffix]
        )
        row["ratio UCC-Inj k=3 / RandomCharAug"] = (
            row["UCC-Inj vs k=3" + suffix] / row["nlpaug RandomCharAug" + suffix]
        )
        rows.append(row)
    return rows


def sanitisers(
    sizes: dict[str, int], ks=(1, 3), large_peer_sets: tuple[str, ...] = ("vs",)
) -> list[dict]:
    """Every set × k at every size; glyphguard (about 12 µs of CPU per character) runs on
    every set at the small size and on ``large_peer_sets`` above 64 KB."""
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
                }
                if n <= 64_000 or name in large_peer_sets:
                    fns["glyphguard llm-input"] = lambda t: gg.sanitize(t, "llm-input").text
                for method, fn in fns.items():
                    out, cps = _timed(fn, noisy, 0.05)
                    rows.append({
                        "size": label, "set": name, "k": k, "method": method,
                        "exact": out == clean,
                        "removed_share": (len(noisy) - len(out)) / (len(noisy) - len(clean)),
                        "mchars_per_cpu_s": cps / 1e6,
                    })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1.0, help="size of the large text in MB")
    ap.add_argument("--out", type=Path, default=Path("results/charperturb/bench"))
    ap.add_argument(
        "--large-peer-sets", default="vs",
        help="comma-separated sets glyphguard runs on above 64 KB (it takes ~12 µs per char)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    sizes = {"1 KB": 1_000, f"{args.mb:g} MB": int(args.mb * 1_000_000)}
    with quiet_dependencies():
        perturb = perturbation(sizes)
        clean = sanitisers(sizes, large_peer_sets=tuple(args.large_peer_sets.split(",")))
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
    for size in sizes:  # same texts: the sets glyphguard ran on at this size
        pairs = {}
        for r in clean:
            if r["size"] == size and r["method"] in ("set-aware", "glyphguard llm-input"):
                pairs.setdefault((r["set"], r["k"]), {})[r["method"]] = r["mchars_per_cpu_s"]
        ratios = [d["set-aware"] / d["glyphguard llm-input"] for d in pairs.values() if len(d) == 2]
        print(
            f"{size}: set-aware / glyphguard chars/s = {np.median(ratios):.1f}× median "
            f"({min(ratios):.1f}–{max(ratios):.1f}×, {len(ratios)} set × k)"
        )


if __name__ == "__main__":
    main()
