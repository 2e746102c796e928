"""Information profile of each forward process: what the network input reveals against t.

No training. For every space and t on a grid, one forward sample of the test targets is
drawn and the NETWORK INPUT (``softmax(X_t) @ E`` for Smoothie and the simplex, ``x_t``
for the embedding space) is decoded two ways, keeping the better: the nearest token
(Euclidean) and the token of largest cosine similarity (the softmax input shrinks toward
the table's mean, so the nearest token under-reads it). Reported per t: token recovery and
concept accuracy on content positions (chance = 1/C), and per space the share of
t ~ U(0, 1) where the input's concept accuracy is below ``--factor`` × chance (the band in
which the network must produce the target from the source alone).

``--bert`` adds the paper's own operating point for comparison: a random-like 768-d table
(V = 28,996 i.i.d. Gaussian rows, normalised as the official code normalises BERT's) under
the paper's defaults (σ_min 1.5, σ_max 200, d = 9), where every token is its own concept.

    python benchmarks/smoothie/info_profile.py --seed 10 --bert
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from icml26.shared import numpy_rng, torch_threads
from icml26.smoothie.data import fit_sigmas, normalize_embeddings, synonym_task
from icml26.smoothie.reproduce import PRESETS, make_spaces
from icml26.smoothie.space import ArctanSchedule, SmoothieSpace, pairwise_sq_distances


def decode_input(inp: torch.Tensor, emb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Nearest token and max-cosine token of each input row."""
    nn_tok = pairwise_sq_distances(inp, emb).argmin(-1)
    unit = emb / emb.norm(dim=-1, keepdim=True).clamp_min(1e-8)
    cos_tok = (inp @ unit.T).argmax(-1)
    return nn_tok, cos_tok


def profile(space, emb, tokens, concept_of, ts, seed, chunk=64):
    """Token recovery and concept accuracy of the network input at every t."""
    content = concept_of[tokens] >= 0
    rows = []
    for t in ts:
        g = torch.Generator().manual_seed(seed)
        tok_hits = [0, 0]
        con_hits = [0, 0]
        for i in range(0, tokens.shape[0], chunk):
            tk = tokens[i : i + chunk]
            x0 = space.clean(tk, emb)
            x_t = space.noise(x0, torch.full((tk.shape[0],), float(t)), g)
            inp = space.model_input(x_t, emb)
            m = content[i : i + chunk]
            for j, dec in enumerate(decode_input(inp, emb)):
                tok_hits[j] += int(((dec == tk) & m).sum())
                con_hits[j] += int(((concept_of[dec] == concept_of[tk]) & m).sum())
        n = int(content.sum())
        rows.append(
            {
                "t": float(t),
                "token_recovery": max(tok_hits) / n,
                "concept_accuracy": max(con_hits) / n,
                "concept_nn": con_hits[0] / n,
                "concept_cos": con_hits[1] / n,
            }
        )
    return rows


def band(rows, chance, factor):
    """Share of t ~ U(0, 1) (grid cells) where concept accuracy < factor × chance."""
    ts = np.array([r["t"] for r in rows])
    acc = np.array([r["concept_accuracy"] for r in rows])
    low = acc < factor * chance
    # the grid is uniform: the share of grid points is the share of U(0, 1)
    first = float(ts[low.argmax()]) if low.any() else 1.0
    return float(low.mean()), first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--grid", type=int, default=41)
    parser.add_argument("--factor", type=float, default=2.0)
    parser.add_argument("--coef-d", type=float, nargs="*", default=[])
    parser.add_argument("--bert", action="store_true")
    parser.add_argument("--out", default="results/smoothie/info_profile")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    c0 = time.process_time()
    ts = np.linspace(0.0, 1.0, args.grid)
    summary = {}
    with torch_threads(1):
        base = PRESETS["smoke"]
        data = synonym_task(base.task, numpy_rng(args.seed, "task"))
        emb, tok, conc = data.embeddings, data.test_trg, data.concept_of
        chance = 1.0 / base.task.concepts
        spaces = make_spaces(base, data)
        for d in args.coef_d:
            fixed = replace(base, coef_d=d, half_information_t=None)  # σ re-fitted at this d
            spaces[f"smoothie d={d:g}"] = make_spaces(fixed, data)["smoothie"]
        for name, space in spaces.items():
            rows = profile(space, emb, tok, conc, ts, args.seed)
            share, first = band(rows, chance, args.factor)
            summary[name] = {"band_share": share, "band_starts": first, "rows": rows}
            if isinstance(space, SmoothieSpace):
                sched = space.schedule
                summary[name]["schedule"] = [sched.coef_d, sched.sigma_min, sched.sigma_max]
            smoothie = isinstance(space, SmoothieSpace)
            extra = f" (d = {space.schedule.coef_d:.2f})" if smoothie else ""
            print(f"{name}{extra}: uninformative share {share:.3f}, from t = {first:.3f}")
            print(
                "  t:       " + " ".join(f"{r['t']:.3f}" for r in rows[::4]),
                "\n  concept: " + " ".join(f"{r['concept_accuracy']:.3f}" for r in rows[::4]),
                "\n  token:   " + " ".join(f"{r['token_recovery']:.3f}" for r in rows[::4]),
            )
        if args.bert:
            rng = np.random.default_rng(args.seed)
            v = 28996
            table = normalize_embeddings(
                torch.tensor(rng.standard_normal((v, 768)), dtype=torch.float32)
            )
            ids = torch.tensor(rng.integers(0, v, (16, 16)))
            own = torch.arange(v)  # every token its own concept
            bert = SmoothieSpace(ArctanSchedule())
            rows = profile(bert, table, ids, own, ts, args.seed, chunk=2)
            share, first = band(rows, 1.0 / v, args.factor)
            fit = fit_sigmas(table[:4000])
            summary["bert-like 768-d, paper defaults"] = {
                "band_share": share, "band_starts": first, "rows": rows, "fit_on_4000_rows": fit,
            }  # fmt: skip
            print(f"bert-like: uninformative share {share:.3f}, from t = {first:.3f}; fit {fit}")
            print(
                "  t:     " + " ".join(f"{r['t']:.3f}" for r in rows[::4]),
                "\n  token: " + " ".join(f"{r['token_recovery']:.3f}" for r in rows[::4]),
            )
    summary["cpu_seconds"] = time.process_time() - c0
    (out / f"profile-seed{args.seed}.json").write_text(json.dumps(summary, indent=1))
    print(f"CPU s: {summary['cpu_seconds']:.1f}")


if __name__ == "__main__":
    main()
