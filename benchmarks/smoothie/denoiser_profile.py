"""Teacher-forced denoiser accuracy against t, next to sampled accuracy (development seeds).

For each space, the smoke preset's denoiser is trained on the smoke task exactly as
``run_task`` trains it (same seeds, plateau rule; ``--cap``/``--patience`` override), its
weights saved as safetensors (and reused when the file exists). Then, on the test set:

- teacher-forced: a TRUE forward sample ``X_t`` of the reference targets at each t of a grid,
  one network call, the x0-prediction decoded by nearest embedding; concept accuracy on
  content positions and the x0-MSE;
- sampled: concept accuracy of the preset's sampler at N = ``--steps``.

If the teacher-forced accuracy is high at every t but the sampled one is low, the sampler is
at fault; if it is low where the input is uninformative (high t), that mapping is
under-learned. Usage:

    python benchmarks/smoothie/denoiser_profile.py --seed 10 --spaces smoothie embedding
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from icml26.shared import derive_seed, numpy_rng, quiet_dependencies, torch_threads
from icml26.smoothie.data import synonym_task
from icml26.smoothie.evaluation import concept_accuracy
from icml26.smoothie.model import Denoiser, load_checkpoint, save_checkpoint, train_diffusion
from icml26.smoothie.reproduce import PRESETS, make_spaces
from icml26.smoothie.sample import sample


@torch.no_grad()
def teacher_forced(space, model, data, ts, seed):
    emb, trg, src = data.embeddings, data.test_trg, data.test_src
    mask = data.mask(src)
    content = data.concept_of[trg] >= 0
    rows = []
    for t in ts:
        g = torch.Generator().manual_seed(seed)
        x_t = space.noise(space.clean(trg, emb), torch.full((trg.shape[0],), float(t)), g)
        pred = model(space.model_input(x_t, emb), torch.full((trg.shape[0],), float(t)),
                     emb[src], mask)  # fmt: skip
        dec = space.decode(pred, emb)
        hit = (data.concept_of[dec] == data.concept_of[trg]) & content
        mse = float(((pred - emb[trg]) ** 2).mean())
        rows.append({"t": float(t), "concept": float(hit.sum() / content.sum()), "mse": mse})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--spaces", nargs="+", default=["smoothie", "embedding", "simplex"])
    parser.add_argument(
        "--coef-d", type=float, default=None, help="Smoothie's fixed d (default: the preset's fit)"
    )
    parser.add_argument("--cap", type=int, default=None)
    parser.add_argument("--patience", type=int, default=None)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--grid", type=int, default=21)
    parser.add_argument("--sweep", type=int, nargs="*", default=[], help="extra N to sample at")
    parser.add_argument("--out", default="results/smoothie/denoiser")
    args = parser.parse_args()
    base = PRESETS["smoke"]
    train = base.train
    if args.cap is not None:
        train = replace(train, cap=args.cap)
    if args.patience is not None:
        train = replace(train, patience=args.patience)
    base = replace(base, train=train)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ts = np.linspace(0.0, 1.0, args.grid)
    with torch_threads(1), quiet_dependencies():
        data = synonym_task(base.task, numpy_rng(args.seed, "task"))
        spaces = make_spaces(base, data)
        if args.coef_d is not None:  # Smoothie's d only (σ re-fitted); embedding keeps 9
            fixed = replace(base, coef_d=args.coef_d, half_information_t=None)
            spaces["smoothie"] = make_spaces(fixed, data)["smoothie"]
        d = spaces["smoothie"].schedule.coef_d
        for key in args.spaces:
            space = spaces[key]
            d_key = d if key == "smoothie" else base.coef_d
            tag = f"{key}-seed{args.seed}-d{d_key:.3g}-cap{train.cap}-p{train.patience}"
            ckpt = out / f"{tag}.safetensors"
            c0 = time.process_time()
            stopping, losses = None, []
            if ckpt.exists():
                model = load_checkpoint(ckpt)
            else:
                torch.manual_seed(derive_seed(args.seed, "init", key))
                model = Denoiser(base.model)
                res = train_diffusion(
                    space, model, data.embeddings, data.train_trg, data.train_src,
                    data.mask(data.train_src), train, seed=derive_seed(args.seed, "train", key),
                )  # fmt: skip
                save_checkpoint(model, ckpt)
                stopping, losses = res.stopping, res.losses
            train_cpu = time.process_time() - c0
            tf = teacher_forced(space, model, data, ts, args.seed)
            g = torch.Generator().manual_seed(derive_seed(args.seed, "sample", key))
            toks = sample(space, model, data.embeddings, length=base.task.max_len,
                          src=data.test_src, src_mask=data.mask(data.test_src),
                          steps=args.steps, generator=g)  # fmt: skip
            acc = 100 * concept_accuracy(toks, data.test_trg, data.concept_of, data.vocab.pad_id)
            sweep = {}
            for n in args.sweep:
                g = torch.Generator().manual_seed(derive_seed(args.seed, "sweep", key, n))
                out_n = sample(space, model, data.embeddings, length=base.task.max_len,
                               src=data.test_src, src_mask=data.mask(data.test_src),
                               steps=n, generator=g)  # fmt: skip
                cpt = concept_accuracy(out_n, data.test_trg, data.concept_of, data.vocab.pad_id)
                sweep[n] = 100 * cpt
            windows = [float(np.mean(losses[i : i + 40])) for i in range(0, len(losses), 40)]
            rec = {
                "space": key, "seed": args.seed, "coef_d": d, "stopping": stopping,
                "train_cpu_s": train_cpu, "sampled_concept_acc": acc, "teacher_forced": tf,
                "loss_windows": windows,
                "sweep": sweep,
                "cpu_s": time.process_time() - c0,
            }  # fmt: skip
            with (out / "profiles.jsonl").open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
            print(f"{tag}: stop {stopping}, sampled concept acc {acc:.1f}, cpu {rec['cpu_s']:.0f}")
            if sweep:
                print("  N sweep: " + ", ".join(f"N={n}: {a:.1f}" for n, a in sweep.items()))
            print("  t:  " + " ".join(f"{r['t']:.2f}" for r in tf[::2]))
            print("  tf: " + " ".join(f"{r['concept']:.2f}" for r in tf[::2]))
            print("  mse:" + " ".join(f"{r['mse']:.2f}" for r in tf[::2]), flush=True)


if __name__ == "__main__":
    main()
