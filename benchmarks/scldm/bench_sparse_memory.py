"""Peak host memory (RSS) of fitting scLDM on a large sparse AnnData: the counts kept
dense (the earlier data path of every model), as an in-memory CSR matrix, and from a
backed ``.h5ad`` (``read_h5ad(path, backed=True)``: ``.X`` stays on disk); modes
``mlp-csr``/``mlp-backed`` fit the MLP VAE baseline (one epoch) on the same file instead.

    python benchmarks/scldm/bench_sparse_memory.py [--cells 200000] [--genes 2000]

The counts are generated here (NB-like integers at ``--density`` non-zeros per entry) and
written once to an ``.h5ad`` under ``--workdir``. Each mode runs in its own subprocess,
which reads that file, fits a tiny ScLDM (the autoencoder for ``--ae-steps`` steps, then
the DiT, which encodes every cell) and reports its own peak RSS (``ru_maxrss``) and CPU
time. Writes results/scldm/bench/sparse_memory.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

OUT = Path("results/scldm/bench")

CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    import torch
    torch.set_num_threads(1)
    from icml26.scldm import MLPVAE, AutoencoderConfig, DiTConfig, ScLDM, TrainingConfig
    from icml26.scldm import read_h5ad
    from icml26.scldm.data import counts_matrix
    from icml26.shared import quiet_dependencies

    path, mode, ae_steps, dit_steps, encode = sys.argv[1:6]

    def rss_mib():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    with quiet_dependencies():
        import anndata as ad
        base = rss_mib()
        t0 = time.process_time()
        adata = read_h5ad(path, backed=mode in ("backed", "mlp-backed"))
        if mode == "dense":
            adata = ad.AnnData(X=counts_matrix(adata), obs=adata.obs)  # densified whole
        loaded = rss_mib()
        if mode.startswith("mlp"):  # the MLP VAE baseline: one epoch at batch 128
            MLPVAE(n_hidden=32, n_latent=4, epochs=1, patience=None, batch_size=128,
                   device="cpu").fit(adata, condition_keys=("cell_type",), seed=0)
            encode = "0"
        model = None if mode.startswith("mlp") else ScLDM(
            AutoencoderConfig(n_embed=16, n_latent_tokens=4, latent_dim=4, n_layer=1,
                              n_head=2, n_head_cross=2),
            DiTConfig(n_embed=32, n_layer=1, n_head=2),
            TrainingConfig(autoencoder_batch_size=64, autoencoder_max_steps=int(ae_steps),
                           diffusion_steps=int(dit_steps), diffusion_batch_size=128),
            device="cpu",
        )
        if model is not None:
            model.fit_autoencoder(adata, seed=0)
        trained = rss_mib()
        if encode == "1":
            model.fit_diffusion(adata, condition_keys=("cell_type",), seed=0)
        after_dit = rss_mib() if encode == "1" else None
    print(json.dumps({
        "rss_after_diffusion_mib": after_dit,
        "mode": mode, "rss_before_data_mib": base, "rss_after_load_mib": loaded,
        "rss_after_autoencoder_mib": trained, "peak_rss_mib": rss_mib(),
        "cpu_s": time.process_time() - t0, "fitted_diffusion": encode == "1",
        "n_obs": adata.n_obs, "n_vars": adata.n_vars,
    }))
    """
)


def write_counts(path: Path, cells: int, genes: int, density: float, seed: int = 0) -> dict:
    """A CSR AnnData of integer counts, generated one block of rows at a time."""
    import anndata as ad
    import pandas as pd
    from scipy import sparse

    rng = np.random.default_rng(seed)
    blocks = []
    for start in range(0, cells, 20_000):
        n = min(20_000, cells - start)
        block = sparse.random(n, genes, density=density, format="csr", dtype=np.float32, rng=rng)
        block.data = 1.0 + rng.poisson(2.0, size=block.data.size).astype(np.float32)
        blocks.append(block)
    x = sparse.vstack(blocks, format="csr")
    if np.any(np.diff(x.indptr) == 0):
        raise ValueError("a cell without counts: raise --density")
    obs = pd.DataFrame(
        {"cell_type": pd.Categorical(rng.choice(["a", "b", "c"], size=cells))},
        index=[f"cell{i}" for i in range(cells)],
    )
    adata = ad.AnnData(X=x, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(genes)]))
    adata.write_h5ad(path)
    return {"nnz": int(x.nnz), "csr_mib": (x.data.nbytes + x.indices.nbytes) / 2**20,
            "dense_mib": cells * genes * 4 / 2**20}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=200_000)
    ap.add_argument("--genes", type=int, default=2000)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--ae-steps", type=int, default=30)
    ap.add_argument("--dit-steps", type=int, default=20)
    ap.add_argument("--no-diffusion", action="store_true", help="skip encoding every cell")
    ap.add_argument("--modes", default="dense,csr,backed")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--reuse", action="store_true", help="keep a counts file already there")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="scldm-rss-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"counts_{args.cells}x{args.genes}.h5ad"
    t0 = time.perf_counter()
    sizes_file = path.with_suffix(".json")
    if args.reuse and path.is_file() and sizes_file.is_file():
        sizes = json.loads(sizes_file.read_text())
    else:
        sizes = write_counts(path, args.cells, args.genes, args.density)
        sizes_file.write_text(json.dumps(sizes))
    print(f"{path.name}: {sizes} ({time.perf_counter() - t0:.0f} s)", flush=True)
    rows = []
    for mode in args.modes.split(","):
        cmd = [sys.executable, "-c", CHILD, str(path), mode, str(args.ae_steps),
               str(args.dit_steps), "0" if args.no_diffusion else "1"]  # fmt: skip
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            rows.append({"mode": mode, "error": proc.stderr.strip().splitlines()[-1]})
        else:
            rows.append({**json.loads(proc.stdout.strip().splitlines()[-1])})
        rows[-1]["wall_s"] = time.perf_counter() - t0
        print(json.dumps(rows[-1]), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    payload = {"cells": args.cells, "genes": args.genes, "density": args.density, **sizes,
               "ae_steps": args.ae_steps, "dit_steps": args.dit_steps, "runs": rows}  # fmt: skip
    name = "sparse_memory" + ("" if args.modes == "dense,csr,backed" else "_" + args.modes)
    name = name.replace(",", "_")
    (OUT / f"{name}.json").write_text(json.dumps(payload, indent=2))
    lines = [
        f"{args.cells} cells × {args.genes} genes, {sizes['nnz']} non-zeros "
        f"(CSR {sizes['csr_mib']:.0f} MiB, dense float32 {sizes['dense_mib']:.0f} MiB)",
        "",
        "| mode | RSS after load (MiB) | RSS after autoencoder | after DiT | peak RSS | CPU s |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['mode']} | error: {r['error']} | | | | |")
            continue
        dit = r.get("rss_after_diffusion_mib")
        lines.append(
            f"| {r['mode']} | {r['rss_after_load_mib']:.0f} | "
            f"{r['rss_after_autoencoder_mib']:.0f} | {'—' if dit is None else f'{dit:.0f}'} | "
            f"{r['peak_rss_mib']:.0f} | {r['cpu_s']:.0f} |"
        )
    (OUT / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
