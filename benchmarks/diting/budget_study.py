"""Budget study: test MAPE and 15%-accuracy against training epochs and fleet size.

One development seed (not an evaluation seed of the smoke preset), SNR 2, zero-mean noise.
(1) DITING and CPMLP are trained with the plateau rule switched off up to ``--cap`` epochs and
scored on the test windows every ``--every`` epochs, with the epoch where the rule would have
stopped marked; (2) at fleet sizes 50 / 100 / 200 cells every method is trained to its
plateau (DITING only up to ``--diting-max-cells``, for time).

    uv run python benchmarks/diting/budget_study.py --out results/diting/budget
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml26.diting.baselines import CPMLP, DriftSlope, SeversonModel, dummy_predict
from icml26.diting.evaluation import score
from icml26.diting.model import Diting
from icml26.diting.reproduce import PRESETS
from icml26.diting.training import predict, train_regressor
from icml26.shared import Plateau, numpy_rng, quiet_dependencies


def _split(fleet, seed):
    order = numpy_rng(seed, "split").permutation(len(fleet))
    n_test = round(0.2 * len(fleet))
    return fleet.subset(order[n_test:]), fleet.subset(order[:n_test])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=100)
    p.add_argument("--snr", type=float, default=2.0)
    p.add_argument("--cells", type=int, default=None)
    p.add_argument("--cap", type=int, default=40)
    p.add_argument("--every", type=int, default=2)
    p.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200])
    p.add_argument("--diting-max-cells", type=int, default=100)
    p.add_argument("--out", default="results/diting/budget")
    args = p.parse_args()
    torch.set_num_threads(1)
    cfg = PRESETS["smoke"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from icml26.diting.data import simulate_fleet

    def fleet_of(n):
        return simulate_fleet(n, numpy_rng(args.seed, "fleet", n), snr=args.snr,
                              charge_discharge_length=cfg.charge_discharge_length,
                              anomaly_share=cfg.anomaly_share)  # fmt: skip

    W = np.asarray(cfg.eval_windows)
    result = {"seed": args.seed, "snr": args.snr, "epochs": {}, "sizes": {}}
    with quiet_dependencies():
        # (1) metric against epochs, the rule off (its stopping epoch recorded)
        train, test = _split(fleet_of(args.cells or cfg.n_cells), args.seed)
        tc = np.repeat(np.arange(len(test)), len(W))
        tl = np.tile(W, len(test))
        for name in ("DITING", "CPMLP"):
            torch.manual_seed(args.seed)
            model = (
                Diting(cfg.model)
                if name == "DITING"
                else CPMLP(100, 3, cfg.charge_discharge_length)
            )
            rule = Plateau(cfg.train.plateau_window, cfg.train.patience, cfg.train.min_delta, 10**6)
            curve, state = [], {}

            def cb(epoch, loss, model=model, rule=rule, curve=curve, state=state, name=name):
                if rule.update(loss) and "stop" not in state:
                    state["stop"] = epoch
                if epoch % args.every == 0:
                    scaler = state["scaler"]
                    s = score(test.life[tc], predict(model, test.curves[tc], tl, scaler))
                    curve.append({"epoch": epoch, "loss": loss, **s})
                    print(
                        name,
                        epoch,
                        round(loss, 4),
                        {k: round(v, 3) for k, v in s.items()},
                        flush=True,
                    )

            from icml26.diting.data import LabelScaler

            state["scaler"] = LabelScaler.fit(train.life)
            t0 = time.perf_counter()
            train_regressor(model, train, dataclasses.replace(cfg.train, max_epochs=args.cap,
                            patience=10**6), seed=args.seed, callback=cb)  # fmt: skip
            result["epochs"][name] = {"curve": curve, "plateau_epoch": state.get("stop"),
                                      "seconds": time.perf_counter() - t0}  # fmt: skip
            (out / "budget.json").write_text(json.dumps(result, indent=2))
        # (2) metric against fleet size, every method to its plateau
        for n in args.sizes:
            train, test = _split(fleet_of(n), args.seed)
            tc = np.repeat(np.arange(len(test)), len(W))
            tl = np.tile(W, len(test))
            fit_l = np.linspace(cfg.train.min_window, 100, cfg.fit_windows).round().astype(int)
            gc = np.repeat(np.arange(len(train)), len(fit_l))
            gl = np.tile(fit_l, len(train))
            row = {"Dummy": score(test.life[tc], dummy_predict(train.life, len(tc)))}
            for name, m in (("Severson variance", SeversonModel("variance")),
                            ("Drift slope", DriftSlope())):  # fmt: skip
                m.fit(train.curves[gc], gl, train.life[gc], gc)
                row[name] = score(test.life[tc], m.predict(test.curves[tc], tl))
            names = ["CPMLP"] + (["DITING"] if n <= args.diting_max_cells else [])
            for name in names:
                torch.manual_seed(args.seed)
                model = (
                    Diting(cfg.model)
                    if name == "DITING"
                    else CPMLP(100, 3, cfg.charge_discharge_length)
                )
                res = train_regressor(model, train, cfg.train, seed=args.seed)
                pred = predict(model, test.curves[tc], tl, res.scaler)
                row[name] = {**score(test.life[tc], pred), "epochs": res.stopping["steps"]}
            result["sizes"][str(n)] = row
            print(n, {k: round(v["mape"], 3) for k, v in row.items()}, flush=True)
            (out / "budget.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
