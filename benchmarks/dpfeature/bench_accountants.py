"""Accountant agreement and time: ε of T full-batch Gaussian steps per accountant.

For each (ε target, T): our exact calibration z, then ε(z, T, δ = 1e-5) from the exact
μ-GDP curve, the RDP closed form ε_α = αT/(2z²), dp-accounting (RDP, PLD), prv-accountant
and opacus (RDP), with each one's wall time, and opacus's ``get_noise_multiplier``.

    uv run python benchmarks/dpfeature/bench_accountants.py --out results/dpfeature/bench
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from icml26.dpfeature.accounting import (
    LIBRARIES,
    gaussian_epsilon,
    noise_multiplier,
    opacus_noise_multiplier,
    rdp_epsilon,
)
from icml26.shared import quiet_dependencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/dpfeature/bench"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    delta, rows = 1e-5, []
    with quiet_dependencies(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        installed = {}
        for name, fn in LIBRARIES.items():  # imports out of the timings
            try:
                fn(10.0, 10, delta)
                installed[name] = fn
            except ImportError:
                print(f"{name}: not installed, skipped", flush=True)
        for target in (1.0, 4.0):
            for steps in (250, 1000):
                z = noise_multiplier(target, delta, steps)
                t0 = time.perf_counter()
                exact = gaussian_epsilon(z, steps, delta)
                row = {"target": target, "T": steps, "z": z, "exact": exact}
                row["exact_s"] = time.perf_counter() - t0
                row["RDP closed form"] = rdp_epsilon(z, steps, delta)
                for name, fn in installed.items():
                    t0 = time.perf_counter()
                    row[name] = fn(z, steps, delta)
                    row[f"{name} s"] = time.perf_counter() - t0
                row["opacus z (PRV)"] = opacus_noise_multiplier(target, delta, steps, "prv")
                row["opacus z (RDP)"] = opacus_noise_multiplier(target, delta, steps, "rdp")
                rows.append(row)
                print(json.dumps(row), flush=True)
    (args.out / "bench_accountants.json").write_text(json.dumps(rows, indent=1))
    names = [n for n in LIBRARIES if rows and n in rows[0]]
    lines = [
        "| ε target | T | z (ours) | exact | RDP closed form | "
        + " | ".join(names)
        + " | opacus z (PRV / RDP) |",
        "|---|---|---|---|---|" + "---|" * len(names) + "---|",
    ]
    for r in rows:
        libs = " | ".join(f"{r[n]:.4f} ({r[n + ' s']:.2f} s)" for n in names)
        lines.append(
            f"| {r['target']:g} | {r['T']} | {r['z']:.3f} | {r['exact']:.4f} | "
            f"{r['RDP closed form']:.4f} | {libs} | "
            f"{r['opacus z (PRV)']:.3f} / {r['opacus z (RDP)']:.3f} |"
        )
    (args.out / "bench_accountants.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
