"""Budget study: the claim metrics against the step cap T (one seed off the evaluation seeds).

For T in 250 … 4000: test error and log₁₀(max ρ̄ / max γ) per method and ‖μ‖ of the smoke
grid, with the steps actually taken and the ε spent (the private noise is calibrated to T,
so a larger T means more noise per step). Writes ``budget_study.json`` and a markdown table.

    uv run python benchmarks/dpfeature/budget_study.py --seed 100 --out results/dpfeature/budget
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from icml26.dpfeature.reproduce import PRESETS, run_grid
from icml26.shared import quiet_dependencies, torch_threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--steps", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000])
    parser.add_argument("--out", type=Path, default=Path("results/dpfeature/budget"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    base = replace(PRESETS["smoke"], baselines=False, accountants=False)
    results = []
    with torch_threads(1), quiet_dependencies():
        for steps in args.steps:
            t0 = time.perf_counter()
            _, records = run_grid(replace(base, steps=steps), args.seed)
            for rec in records:
                rec.pop("history", None)
                results.append({"T": steps, **rec})
            print(f"T={steps}: {time.perf_counter() - t0:.0f} s", flush=True)
            (args.out / "budget_study.json").write_text(json.dumps(results, indent=1))
    methods = list(dict.fromkeys(r["method"] for r in results))
    lines = [
        "| T | method | "
        + " | ".join(f"{m:g}" for m in base.mu_norms)
        + " | steps taken | ε spent |",
        "|---|---|" + "---|" * (len(base.mu_norms) + 2),
    ]
    for steps in args.steps:
        for method in methods:
            cells = [r for r in results if r["T"] == steps and r["method"] == method]
            if not cells:
                continue
            errs = " | ".join(
                f"{c['test_error']:.2f} ({c['log10_rho_over_gamma']:+.1f})" for c in cells
            )
            taken = sorted({int(c["steps"]) for c in cells})
            eps = max(c["epsilon_spent"] for c in cells)
            lines.append(f"| {steps} | {method} | {errs} | {taken[0]}–{taken[-1]} | {eps:.2f} |")
    table = "\n".join(lines)
    (args.out / "budget_study.md").write_text(
        "Cells: test error (log₁₀ max ρ̄/max γ) per ‖μ‖.\n\n" + table + "\n"
    )
    print(table)


if __name__ == "__main__":
    main()
