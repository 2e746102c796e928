"""scLDM vs scVI (and the MLP VAE): training and generation throughput, activation
memory versus the number of genes, and MMD to held-out cells — same simulated
AnnData, same run.

    python benchmarks/scldm/bench_throughput.py [--quick] [--device cpu|cuda]

Writes results/scldm/bench/throughput.{json,md} and prints the tables with ratios
(ours / peer). scVI rows appear when scvi-tools is installed (extra ``scvi``).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
from pathlib import Path

import torch

from icml26.scldm import (
    MLPVAE,
    AutoencoderConfig,
    DiTConfig,
    EvaluationSpace,
    MCABAutoencoder,
    MLPVAEModule,
    ScLDM,
    ScviBaseline,
    TrainingConfig,
    generation_metrics,
    scvi_available,
    simulate_counts,
)
from icml26.shared import quiet_dependencies

OUT = Path("results/scldm/bench")


def saved_activation_mib(loss_fn) -> float:
    """MiB of tensors autograd saves for one backward pass of ``loss_fn()``."""
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_fn()
    loss.backward()
    return total / 2**20


def peak_cuda_mib(loss_fn) -> float | None:
    if not torch.cuda.is_available():
        return None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    loss_fn().backward()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() / 2**20


def memory_table(genes: list[int], device: torch.device, batch: int = 64) -> list[dict]:
    rows = []
    cfg = AutoencoderConfig(
        n_embed=32, n_latent_tokens=8, latent_dim=8, n_layer=2, n_head=4, n_head_cross=4
    )
    for g in genes:
        ad = simulate_counts(batch, g, n_programs=max(g // 40, 1), seed=0)
        x = torch.from_numpy(ad.X).to(device)
        ids = torch.arange(1, g + 1, device=device)
        ae = MCABAutoencoder(g, cfg).to(device)
        mlp = MLPVAEModule(g).to(device)
        row = {
            "genes": g,
            "scLDM_autoencoder_MiB": saved_activation_mib(
                lambda ae=ae, x=x, ids=ids: ae(x, ids)["loss"]
            ),
            "MLP_VAE_MiB": saved_activation_mib(lambda mlp=mlp, x=x: mlp(x)),
            "scLDM_cuda_peak_MiB": peak_cuda_mib(lambda ae=ae, x=x, ids=ids: ae(x, ids)["loss"]),
        }
        row["scLDM_MiB_per_1k_genes"] = row["scLDM_autoencoder_MiB"] / g * 1000
        if scvi_available():
            row["scVI_MiB"] = scvi_activation_mib(ad, batch)
            row["ratio_scLDM_vs_scVI"] = row["scLDM_autoencoder_MiB"] / row["scVI_MiB"]
        rows.append(row)
    return rows


def scvi_activation_mib(adata, batch: int) -> float | None:
    """Saved activations of one scVI training step (same cells, same batch size)."""
    import scvi

    ad = adata.copy()
    scvi.model.SCVI.setup_anndata(ad)
    model = scvi.model.SCVI(ad, n_latent=10, n_layers=2, n_hidden=128, gene_likelihood="nb")
    tensors = next(iter(model._make_data_loader(adata=ad, batch_size=batch)))
    module = model.module.train()

    def loss():
        _, _, out = module(tensors)
        return out.loss

    return saved_activation_mib(loss)


def throughput(args, device: torch.device) -> tuple[list[dict], dict]:
    n_cells = 1200 if args.quick else 3000
    # the smoke preset's sparsity: ~65 % zeros (mean 1.5 counts per gene: 300 over 200 genes)
    ad = simulate_counts(
        n_cells, 200, n_cell_types=5, n_programs=8, library_log_mean=math.log(300.0), seed=0
    )
    train, test = ad[: int(0.8 * n_cells)].copy(), ad[int(0.8 * n_cells) :].copy()
    n_train, n_gen = train.n_obs, test.n_obs
    space = EvaluationSpace.fit(train.X, n_components=30)
    ae_epochs, dit_steps, epochs = (16, 300, 30) if args.quick else (16, 600, 30)
    rows = []

    model = ScLDM(
        AutoencoderConfig(
            n_embed=32, n_latent_tokens=8, latent_dim=8, n_layer=2, n_head=4, n_head_cross=4
        ),
        DiTConfig(n_embed=64, n_layer=3, n_head=4, cfg_dropout=0.2),
        TrainingConfig(autoencoder_epochs=ae_epochs, diffusion_steps=dit_steps),
        device=device,
    )
    t0 = time.perf_counter()
    model.fit_autoencoder(train, seed=0)
    t_ae = time.perf_counter() - t0
    t0 = time.perf_counter()
    model.fit_diffusion(train, condition_keys=("cell_type",), seed=0)
    t_dit = time.perf_counter() - t0
    ae_cells = ae_epochs * (n_train // 128) * 128
    for solver, steps in (("heun", 10), ("dopri5", 50)):
        t0 = time.perf_counter()
        gen = model.generate(n_gen, solver=solver, steps=steps, seed=0)
        t_gen = time.perf_counter() - t0
        rows.append(
            {
                "method": f"scLDM ({solver})",
                "train_cells_per_s": (ae_cells + dit_steps * 128) / (t_ae + t_dit),
                "autoencoder_cells_per_s": ae_cells / t_ae,
                "train_s": t_ae + t_dit,
                "gen_cells_per_s": n_gen / t_gen,
                "nfe": gen.uns["scldm_generation"]["nfe"],
                "mmd": generation_metrics(test.X, gen.X, space, wasserstein=False)["mmd"],
            }
        )

    t0 = time.perf_counter()
    mlp = MLPVAE(epochs=epochs, device=device).fit(train, seed=0)
    t_mlp = time.perf_counter() - t0
    t0 = time.perf_counter()
    gen = mlp.generate(n_gen, seed=0)
    rows.append(
        {
            "method": "MLP VAE",
            "train_cells_per_s": epochs * (n_train // 128) * 128 / t_mlp,
            "train_s": t_mlp,
            "gen_cells_per_s": n_gen / (time.perf_counter() - t0),
            "mmd": generation_metrics(test.X, gen.X, space, wasserstein=False)["mmd"],
        }
    )
    if scvi_available():
        t0 = time.perf_counter()
        peer = ScviBaseline(max_epochs=epochs, device=device).fit(train, seed=0)
        t_scvi = time.perf_counter() - t0
        t0 = time.perf_counter()
        gen = peer.generate(n_gen, seed=0)
        rows.append(
            {
                "method": "scVI (scvi-tools)",
                "train_cells_per_s": epochs * n_train / t_scvi,
                "train_s": t_scvi,
                "gen_cells_per_s": n_gen / (time.perf_counter() - t0),
                "mmd": generation_metrics(test.X, gen.X, space, wasserstein=False)["mmd"],
            }
        )
    peer_row = next((r for r in rows if r["method"].startswith("scVI")), rows[-1])
    ratios = {
        f"{r['method']} vs {peer_row['method']}": {
            "train_cells_per_s": r["train_cells_per_s"] / peer_row["train_cells_per_s"],
            "gen_cells_per_s": r["gen_cells_per_s"] / peer_row["gen_cells_per_s"],
            "mmd": r["mmd"] / peer_row["mmd"],
        }
        for r in rows
        if r["method"].startswith("scLDM")
    }
    return rows, {
        "peer": peer_row["method"],
        "ratios": ratios,
        "n_train": n_train,
        "n_generated": n_gen,
    }


def markdown(rows: list[dict]) -> str:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        cells = [f"{r[k]:.4g}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller data and budgets")
    parser.add_argument("--device", default=None)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch intra-op threads on CPU (0: torch default)"
    )
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.WARNING)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    genes = [250, 500, 1000] if args.quick else [250, 500, 1000, 2000, 4000]
    with quiet_dependencies():  # lightning / scvi log lines and deprecation warnings
        memory = memory_table(genes, device)
        rows, summary = throughput(args, device)
    OUT.mkdir(parents=True, exist_ok=True)
    payload = {
        "device": str(device),
        "quick": args.quick,
        "threads": torch.get_num_threads(),
        "throughput": rows,
        "memory": memory,
        **summary,
    }
    (OUT / "throughput.json").write_text(json.dumps(payload, indent=2))
    ratio_rows = [{"comparison": k, **v} for k, v in summary["ratios"].items()]
    text = (
        f"# scLDM throughput and memory ({device}, {'quick' if args.quick else 'full'})\n\n"
        f"## Training / generation ({summary['n_train']} training cells, "
        f"{summary['n_generated']} generated)\n\n"
        + markdown(rows)
        + f"\n\n## Ratios (ours / {summary['peer']})\n\n"
        + markdown(ratio_rows)
        + "\n\n## Activation memory of one training step (batch 64) vs number of genes\n\n"
        + markdown(memory)
        + "\n"
    )
    (OUT / "throughput.md").write_text(text)
    print(text)
    print(f"written to {OUT}/throughput.{{json,md}}")


if __name__ == "__main__":
    main()
