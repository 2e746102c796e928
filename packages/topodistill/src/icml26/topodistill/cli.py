"""``icml26 topodistill`` — CCM and causal discovery on a CSV file (pyEDM layout).

    icml26 topodistill ccm FILE.csv X Y [--E 3] [--tau 1] [--exclusion 0] [--samples 50]
    icml26 topodistill discover FILE.csv [--method topodistill|ccm] [--surrogates 99]
        [--surrogate random_phase|twin|block_shuffle|shuffle]

``ccm`` prints the skill of both directions against library size (``X:Y`` means the
manifold of X cross-maps Y, evidence that Y causes X); E and τ default to the simplex
scan and the first minimum of mutual information. ``discover`` prints the graph.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icml26 topodistill", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("ccm", help="convergent cross mapping between two columns")
    c.add_argument("file")
    c.add_argument("x")
    c.add_argument("y")
    c.add_argument("--E", type=int, default=None)
    c.add_argument("--tau", type=int, default=None)
    c.add_argument("--exclusion", type=int, default=0, help="Theiler exclusion radius")
    c.add_argument("--samples", type=int, default=50)
    c.add_argument("--seed", type=int, default=0)
    d = sub.add_parser("discover", help="a causal graph over every column")
    d.add_argument("file")
    d.add_argument("--method", choices=("topodistill", "ccm"), default="topodistill")
    d.add_argument("--surrogates", type=int, default=99, help="number of surrogates")
    d.add_argument(
        "--surrogate",
        choices=("random_phase", "twin", "block_shuffle", "shuffle"),
        default="random_phase",
        help="the null model of the significance test",
    )
    d.add_argument("--alpha", type=float, default=0.05)
    d.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: list[str] | None = None) -> int:
    from icml26.topodistill.ccm import ccm
    from icml26.topodistill.data import load_csv
    from icml26.topodistill.discover import discover_graph
    from icml26.topodistill.embedding import choose_E, choose_tau

    parser = _parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    try:
        series = load_csv(args.file)
        if args.command == "ccm":
            x, y = series.column(args.x), series.column(args.y)
            rows = []
            for a, b, xa, xb in ((args.x, args.y, x, y), (args.y, args.x, y, x)):
                tau = args.tau or choose_tau(xa)
                E = args.E or choose_E(xa, tau)[0]
                res = ccm(
                    xa,
                    xb,
                    E=E,
                    tau=tau,
                    samples=args.samples,
                    exclusion_radius=args.exclusion,
                    seed=args.seed,
                )
                rows.append((f"{a}:{b}", E, tau, res))
            print(
                "| direction | tests | E | tau | "
                + " | ".join(f"L={s}" for s in rows[0][3].lib_sizes)
                + " |"
            )
            print("|---" * (4 + len(rows[0][3].lib_sizes)) + "|")
            for label, E, tau, res in rows:
                a, b = label.split(":")
                cells = " | ".join(f"{v:.3f}" for v in res.mean_skill)
                print(f"| {label} | {b} → {a} | {E} | {tau} | {cells} |")
        else:
            graph = discover_graph(
                series.values,
                names=series.names,
                method=args.method,
                surrogate=args.surrogate,
                n_surrogates=args.surrogates,
                alpha=args.alpha,
                seed=args.seed,
            )
            print("| cause → effect | skill | convergence | p | causal |")
            print("|---|---|---|---|---|")
            d = len(graph.names)
            for i in range(d):
                for j in range(d):
                    if i != j:
                        print(
                            f"| {graph.names[i]} → {graph.names[j]} | {graph.skill[i, j]:.3f} | "
                            f"{graph.convergence[i, j]:+.3f} | {graph.p_value[i, j]:.3f} | "
                            f"{'yes' if graph.adjacency[i, j] else 'no'} |"
                        )
            if not np.any(graph.adjacency):
                print("\nno link accepted")
    except (ValueError, KeyError, FileNotFoundError, ImportError) as err:
        print(f"icml26 topodistill: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
