"""CURE vs SimGCD vs scikit-learn ``KMeans`` on identical GCD splits.

Per setting (K classes, n samples, d input dimensions; a hierarchical mixture with K/5
superclasses): process-CPU seconds of one training epoch of CURE's Stage II and of
SimGCD at equal batch (256), of CURE's Stage-II initialisation (k-means + Hungarian
matching) and of ``sklearn.cluster.KMeans`` alone on the same features, and the All
accuracy of KMeans on the raw inputs, SimGCD and CURE after a short fixed budget (a
speed check, not the claim: the claim is ``icml26 reproduce cure``). No GCD method is on
PyPI, so KMeans is the library a user would otherwise pick.

    python benchmarks/cure/bench_cure.py            # K ∈ {10, 20}, n = 2,000, d = 64 (CPU)
    python benchmarks/cure/bench_cure.py --full  # K ∈ {10, 20, 100}, n ∈ {2k, 50k}, d ∈ {64, 768}
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from icml26.cure import (
    CURE,
    CUREConfig,
    SimGCD,
    SimGCDConfig,
    TrainConfig,
    gcd_accuracy,
    hierarchical_mixture,
    initialise_prototypes,
    kmeans_raw,
)
from icml26.cure.stage2 import Stage2Config, _Prior, stage2_loss
from icml26.shared import quiet_dependencies, torch_threads


def cpu(fn):
    c0 = time.process_time()
    out = fn()
    return out, time.process_time() - c0


def epoch_time(model, step, n, bs, gen) -> float:
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    perm = torch.randperm(n, generator=gen)

    def one():
        for s in range(0, n - bs + 1, bs):
            loss = step(perm[s : s + bs])
            opt.zero_grad()
            loss.backward()
            opt.step()

    one()  # warm
    return cpu(one)[1]


def setting(k: int, n: int, d: int, epochs: int, seed: int = 0) -> dict:
    n_sub = 5
    per = max(n // k, 10)
    data = hierarchical_mixture(
        np.random.default_rng(seed),
        n_super=k // n_sub,
        n_sub=n_sub,
        n_old_sub=3,
        dim=d,
        informative=min(16, d),
        n_per_old=per,
        n_per_new=per,
    )
    gen = torch.Generator().manual_seed(seed)
    x = torch.as_tensor(data.x)
    y = torch.as_tensor(np.where(data.labelled, data.y, -1))
    lab = torch.as_tensor(data.labelled)
    bs = 256
    out = {"K": k, "n": data.n, "d": d}
    tr = TrainConfig(cap_epochs=epochs, patience=epochs, batch_size=bs)
    cure = CURE(CUREConfig(train1=tr, train2=tr), seed=seed, device="cpu")
    _, t_cure = cpu(lambda: cure.fit(data))
    sim = SimGCD(SimGCDConfig(train=replace(tr, cap_epochs=2 * epochs)), seed=seed, device="cpu")
    _, t_sim = cpu(lambda: sim.fit(data))
    prior = _Prior(k, 0.9, "cpu")
    cfg2 = Stage2Config()
    out["cure_stage2_epoch_cpu_s"] = epoch_time(
        cure.model,
        lambda i: stage2_loss(cure.model, x[i], y[i], lab[i], 0.05, prior, cfg2, gen, "features"),
        data.n,
        bs,
        gen,
    )
    out["simgcd_epoch_cpu_s"] = epoch_time(
        sim.model,
        lambda i: sim.loss(sim.model, x[i], y[i], lab[i], 0.05, gen, "features"),
        data.n,
        bs,
        gen,
    )
    out["epoch_ratio_cure_over_simgcd"] = out["cure_stage2_epoch_cpu_s"] / out["simgcd_epoch_cpu_s"]
    z = cure.stage1_features
    old = cure.model.prototypes()[: data.n_old].detach().numpy()
    _, t_init = cpu(
        lambda: initialise_prototypes(
            z, data.labelled, data.y[data.labelled], old, k, seed=seed, n_init=10
        )
    )
    from sklearn.cluster import KMeans

    _, t_km = cpu(lambda: KMeans(k, n_init=10, random_state=seed).fit(z))
    out["init_cpu_s"], out["kmeans_cpu_s"] = t_init, t_km
    out["init_ratio_over_kmeans"] = t_init / t_km
    pred_raw, t_raw = cpu(lambda: kmeans_raw(data.x, k, seed=seed))
    out["all_kmeans_raw"] = 100 * gcd_accuracy(data, pred_raw).all
    out["all_simgcd"] = 100 * gcd_accuracy(data, sim.predict(data.x)).all
    out["all_cure"] = 100 * gcd_accuracy(data, cure.predict(data.x)).all
    out["fit_cpu_s"] = {"kmeans_raw": t_raw, "simgcd": t_sim, "cure": t_cure}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--out", default="results/cure/bench")
    a = ap.parse_args()
    grid = (
        [(k, n, d) for k in (10, 20, 100) for n in (2000, 50_000) for d in (64, 768)]
        if a.full
        else [(10, 2000, 64), (20, 2000, 64)]
    )
    rows = []
    with quiet_dependencies(), torch_threads(1):
        for k, n, d in grid:
            rows.append(setting(k, n, d, a.epochs))
            print(json.dumps(rows[-1]))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
