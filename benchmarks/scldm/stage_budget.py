"""Budget study of each stage on its own: the autoencoder's convergence rule, then the DiT's.

A diagnostic on development seeds (not the presets' evaluation seeds 0-2). It uses the
``smoke`` preset's data and models and changes one stage at a time:

* **autoencoder**: one fit per ``--ae-min-delta`` (the relative improvement the epoch-mean
  training reconstruction NLL must make within ``ae_patience`` epochs), each with the step
  cap ``--ae-cap``; reported: steps and epochs taken, why it stopped, the type accuracy of
  the test cells' reconstructions (the ceiling of check (c)) and the latent kNN type
  accuracy;
* **DiT**: on the autoencoder of ``--dit-ae-min-delta``, one fit per ``--dit-cap`` under the
  DiT rule (``--dit-min-delta``), plus ``--dit-fixed`` fixed-step fits; reported: steps,
  why it stopped, unconditional MMD and gene-gene correlation error against the test
  cells, type accuracy of cell-type-conditional samples at w = 1 and w = 2, and each
  claim metric against its reference: the MLP VAE's (and with ``--scvi`` scVI's) MMD and
  correlation error on the same split, and the same autoencoder sampled from a Gaussian
  prior (check (d)), each printed once.

    python benchmarks/scldm/stage_budget.py --seed 100 --ae-min-delta 0.01,0.003,0.001 \\
        --dit-ae-min-delta 0.001 --dit-cap 1000,2000,4000,8000 --dit-fixed 2000

``--ae-dir DIR`` keeps the autoencoder of the DiT study: the first run saves it there (with
its first DiT), a later run with the same ``DIR`` loads it instead of training one, so DiT
budgets studied in several runs share one autoencoder.

CPU seconds (``time.process_time``) are reported next to wall seconds: the wall time of a
shared machine depends on its load. Writes results/scldm/stage_budget/seed<seed>.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from icml26.scldm import ScLDM
from icml26.scldm.baselines import MLPVAE, GaussianPriorScLDM, ScviBaseline
from icml26.scldm.metrics import CellTypeClassifier, EvaluationSpace, generation_metrics
from icml26.scldm.reproduce import PRESETS, _models, knn_type_accuracy, load_data
from icml26.shared import quiet_dependencies, torch_threads


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v]


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--preset", default="smoke")
    ap.add_argument("--ae-min-delta", type=_floats, default=[0.01, 0.003, 0.001])
    ap.add_argument("--ae-cap", type=int, default=8000)
    ap.add_argument("--dit-ae-min-delta", type=float, default=None)
    ap.add_argument("--dit-min-delta", type=float, default=0.01)
    ap.add_argument("--dit-cap", type=_ints, default=[1000, 2000, 4000, 8000])
    ap.add_argument("--dit-fixed", type=_ints, default=[])
    ap.add_argument("--scvi", action="store_true", help="also score scVI as a reference")
    ap.add_argument("--ae-dir", type=Path, default=None, help="save / reuse the DiT's autoencoder")
    ap.add_argument("--out", type=Path, default=Path("results/scldm/stage_budget"))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    base = dataclasses.replace(PRESETS[args.preset], umap=False, scvi=False)
    result: dict = {"seed": args.seed, "preset": args.preset, "ae": [], "dit": []}
    path = args.out / f"{args.preset}-seed{args.seed}.json"
    with torch_threads(base.num_threads), quiet_dependencies():
        train, test, _, _, keys = load_data(base, args.seed)
        space = EvaluationSpace.fit(train.X, n_components=base.n_pcs, seed=args.seed)
        types = test.obs["cell_type"].astype(str).to_numpy()
        train_types = train.obs["cell_type"].astype(str).to_numpy()
        classifier = CellTypeClassifier(space, seed=args.seed).fit(train.X, train_types)
        result["real_type_acc"] = classifier.accuracy(test.X, types)
        print(f"real test cells: type accuracy {result['real_type_acc']:.3f}", flush=True)
        request = np.concatenate([[t] * int((types == t).sum()) for t in sorted(set(types))])
        sampler = {"solver": base.solver, "steps": base.solver_steps}
        mlp = MLPVAE(
            n_hidden=base.mlp_hidden,
            n_latent=base.mlp_latent,
            epochs=base.mlp_epochs,
            patience=base.mlp_patience,
            batch_size=base.batch_size,
        ).fit(train, condition_keys=keys, seed=args.seed)
        peers = {"mlp_vae": mlp}
        if args.scvi:
            peers["scvi"] = ScviBaseline(
                n_latent=base.mlp_latent,
                n_hidden=base.mlp_hidden,
                max_epochs=base.scvi_epochs,
                batch_size=base.batch_size,
            ).fit(train, condition_keys=keys, seed=args.seed)
        for name, peer in peers.items():
            ref = generation_metrics(
                test.X, peer.generate(test.n_obs, seed=args.seed).X, space, seed=args.seed
            )
            result[name] = {"mmd": ref["mmd"], "corr_error": ref["corr_error"]}
            print(f"{name}: MMD {ref['mmd']:.4f}, corr. error {ref['corr_error']:.3f}", flush=True)

        autoencoders = {}
        saved = args.ae_dir is not None and (args.ae_dir / "config.json").is_file()
        if saved:  # the DiT study's autoencoder from an earlier run
            args.ae_min_delta = []
            args.dit_ae_min_delta = "saved"
            autoencoders["saved"] = ScLDM.load(args.ae_dir)
            result["ae_dir"] = str(args.ae_dir)
            recon = autoencoders["saved"].reconstruct(test, seed=args.seed)
            result["ae_saved"] = {"recon_type_acc": classifier.accuracy(recon.X, types)}
            print(f"autoencoder loaded: ceiling {result['ae_saved']['recon_type_acc']:.3f}")
        print("| AE min_delta | AE steps | epochs | stop | recon. type acc | latent kNN | CPU s |")
        print("|---|---|---|---|---|---|---|")
        for delta in args.ae_min_delta:
            cfg = dataclasses.replace(base, ae_min_delta=delta, ae_max_steps=args.ae_cap)
            model, _ = _models(cfg, None)
            c0, w0 = time.process_time(), time.perf_counter()
            model.fit_autoencoder(train, seed=args.seed)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            recon = model.reconstruct(test, seed=args.seed)
            steps = len(model.history["autoencoder"])
            per_epoch = max(train.n_obs // cfg.ae_batch_size, 1)
            tr = model.embed(train, copy=True).obsm["X_scldm"]
            te = model.embed(test, copy=True).obsm["X_scldm"]
            row = {
                "min_delta": delta,
                "cap": args.ae_cap,
                "steps": steps,
                "epochs": steps / per_epoch,
                "stop": model.autoencoder_stop,
                "epoch_nll": model.history.get("autoencoder_plateau"),
                "recon_type_acc": classifier.accuracy(recon.X, types),
                "latent_knn": knn_type_accuracy(tr, train_types, te, types, k=cfg.knn_neighbors),
                "cpu_s": cpu,
                "wall_s": wall,
            }
            result["ae"].append(row)
            autoencoders[delta] = model
            print(
                f"| {delta:g} | {steps} | {row['epochs']:.0f} | {row['stop']['reason']} | "
                f"{row['recon_type_acc']:.3f} | {row['latent_knn']:.3f} | {cpu:.0f} |",
                flush=True,
            )
            path.write_text(json.dumps(result, indent=2))

        delta = args.dit_ae_min_delta
        if delta is None:
            delta = args.ae_min_delta[-1]
        ae_model = autoencoders.get(delta)
        if ae_model is None:
            return 0
        result["dit_ae"] = delta
        ceiling = next(
            (r["recon_type_acc"] for r in result["ae"] if r["min_delta"] == delta),
            result.get("ae_saved", {}).get("recon_type_acc"),
        )
        print(f"DiT on the autoencoder of min_delta {delta}; its ceiling {ceiling:.3f}")
        print(
            "| DiT budget | steps | stop | MMD | / MLP VAE | / scVI | corr. error | "
            "type acc w=1 | w=2 | CPU s |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        specs = [("rule", cap) for cap in args.dit_cap] + [("fixed", n) for n in args.dit_fixed]
        for kind, n in specs:
            cfg = dataclasses.replace(
                base,
                dit_min_delta=args.dit_min_delta,
                dit_max_steps=n if kind == "rule" else None,
                dit_steps=n,
            )
            model, _ = _models(cfg, None)
            model.var_names, model.autoencoder = ae_model.var_names, ae_model.autoencoder
            c0, w0 = time.process_time(), time.perf_counter()
            model.fit_diffusion(train, condition_keys=keys, seed=args.seed)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            if args.ae_dir is not None and not saved:
                model.save(args.ae_dir)
                saved = True
            if "gaussian_prior" not in result:  # the same autoencoder, N(0, I) latents
                gauss = GaussianPriorScLDM(model).generate(test.n_obs, seed=args.seed)
                g = generation_metrics(test.X, gauss.X, space, seed=args.seed)
                result["gaussian_prior"] = {"mmd": g["mmd"], "corr_error": g["corr_error"]}
                print(f"Gaussian prior: MMD {g['mmd']:.4f}, corr. error {g['corr_error']:.3f}")
            gen = model.generate(test.n_obs, seed=args.seed, **sampler)
            m = generation_metrics(test.X, gen.X, space, seed=args.seed)
            acc = {
                w: classifier.accuracy(
                    model.generate(
                        len(request),
                        {"cell_type": request},
                        guidance=w,
                        seed=args.seed,
                        **sampler,
                    ).X,
                    request,
                )
                for w in (cfg.guidance, cfg.strong_guidance)
            }
            stop = model.diffusion_stop
            row = {
                "kind": kind,
                "budget": n,
                "min_delta": args.dit_min_delta if kind == "rule" else None,
                "steps": len(model.history["diffusion"]),
                "stop": stop,
                "windows": model.history.get("diffusion_plateau"),
                "mmd": m["mmd"],
                "corr_error": m["corr_error"],
                "type_acc_w1": acc[cfg.guidance],
                "type_acc_w2": acc[cfg.strong_guidance],
                "ceiling": ceiling,
                "cpu_s": cpu,
                "wall_s": wall,
            }
            result["dit"].append(row)
            label = f"rule, cap {n}" if kind == "rule" else f"{n} fixed"
            for name in ("mlp_vae", "scvi"):
                if name in result:
                    row[f"mmd_ratio_{name}"] = m["mmd"] / result[name]["mmd"]
                    row[f"corr_gap_{name}"] = result[name]["corr_error"] - m["corr_error"]
            ratios = " | ".join(
                f"{row[f'mmd_ratio_{k}']:.2f}" if f"mmd_ratio_{k}" in row else "—"
                for k in ("mlp_vae", "scvi")
            )
            print(
                f"| {label} | {row['steps']} | {stop['reason'] if stop else 'fixed'} | "
                f"{m['mmd']:.4f} | {ratios} | {m['corr_error']:.3f} | "
                f"{row['type_acc_w1']:.3f} | {row['type_acc_w2']:.3f} | {cpu:.0f} |",
                flush=True,
            )
            path.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
