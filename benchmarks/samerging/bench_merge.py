"""Merge cost and agreement: our TIES vs fusion-bench's, and SA-Merging vs TIES.

Side by side in one process, on the same checkpoints:

* Digits MLP — the smoke suite's base and experts (seed 0), N = 2 and 8;
* MiniLM — the real all-MiniLM-L6-v2 encoder (extra ``minilm``; without it a random state
  dict of its shapes), experts = base + small random task vectors; timing and memory
  only (``--minilm``).

Reported: max |our TIES − fusion-bench TIES| over all tensors (same trim 20 %, disjoint
mean, λ = 0.3), wall time as the best of ``--repeats`` runs and the ratio, and peak
resident-memory growth of each merge measured in a forked child process. SA-Merging runs
N × T = N × 10 autodiff passes of the path network, so its time is a slower regime by
design; the ratio to TIES is what this measures. Also timed on the same inputs:
fusion-bench TSV-M and WUDI (WUDI on the Digits MLP only: 300 Adam steps of an
N × d × d product per 2-D tensor, out of reach of a CPU for MiniLM), and, on MiniLM,
mergekit TIES on ``save_pretrained`` folders of the whole model (through
``icml26.samerging.peers.mergekit_merge``; its time includes reading and writing the
folders) next to our TIES on the same whole state dict in memory.

With ``--experts DIR`` (a seed folder kept by ``minilm_suite.py --save-experts``) the
MiniLM rows use the suite's trained full experts (N = 2 and 3) instead, and every merger
— our TIES, fusion-bench TIES and TSV-M, mergekit TIES, SA-Merging — is timed (wall and
CPU) and its peak memory measured in one forked child per run.

    python benchmarks/samerging/bench_merge.py [--minilm] [--repeats 3]
    python benchmarks/samerging/bench_merge.py --no-digits --experts DIR/seed0 --repeats 1
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing as mp
import resource
import time

import numpy as np
import torch

from icml26.samerging import BertPath, sa_merge, ties_merging
from icml26.samerging.reproduce import PRESETS, _base, _Suite
from icml26.shared import quiet_dependencies, torch_threads


def fusion_bench_ties(base, experts, *, density=0.2, scale=0.3, merge="mean"):
    from fusion_bench.method.ties_merging.ties_merging_utils import (
        state_dict_to_vector,
        ties_merging,
        vector_to_state_dict,
    )

    flat = torch.stack([state_dict_to_vector({k: e[k] - base[k] for k in base}) for e in experts])
    with contextlib.redirect_stdout(io.StringIO()):  # it prints its progress
        merged = ties_merging(flat, reset_thresh=100 * density, merge_func=merge)
    tv = vector_to_state_dict(merged, {k: v.clone() for k, v in base.items()})
    return {k: base[k] + scale * tv[k] for k in base}


def _peer_time(fn, repeats):
    try:
        return best_time(fn, repeats)
    except ImportError:
        return float("nan")


def mergekit_ties_time(full_base, experts, repeats):
    """mergekit TIES on BertModel folders of the whole MiniLM (encoder task vectors)."""
    import shutil
    import tempfile
    from pathlib import Path

    from icml26.samerging.io import save_state_dict
    from icml26.samerging.minilm import model_dir
    from icml26.samerging.peers import mergekit_merge

    with tempfile.TemporaryDirectory(prefix="samerging-mk-") as tmp:
        root = Path(tmp)
        folders = []
        for i, ex in enumerate([{}, *experts]):
            f = root / f"m{i}"
            save_state_dict({**full_base, **ex}, f)
            shutil.copy(model_dir() / "config.json", f / "config.json")
            folders.append(f)

        def run():
            mergekit_merge(folders[0], folders[1:], root / "out", method="ties", weight=0.3)

        t = best_time(run, repeats)
    whole = [{**full_base, **ex} for ex in experts]
    ours = best_time(lambda: ties_merging(full_base, whole, density=0.2, scale=0.3), repeats)
    return t, ours


def _child(fn, conn):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    conn.send((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before, wall, cpu))


def timed_peak(fn) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS growth MiB) of one ``fn()`` in a forked child."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(fn, child))
    proc.start()
    grown, wall, cpu = parent.recv()
    proc.join()
    return wall, cpu, grown / 1024


def peak_mib(fn) -> float:
    """Peak RSS growth (MiB) of ``fn()`` in a forked child (Linux ``ru_maxrss`` in KiB)."""
    return timed_peak(fn)[2]


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def minilm_real(n_experts: int, seed: int = 0):
    """The real all-MiniLM-L6-v2 encoder (extra ``minilm``) and base + small random vectors."""
    from safetensors.torch import load_file

    from icml26.samerging.minilm import model_dir

    path = BertPath(num_layers=6)
    full = load_file(model_dir() / "model.safetensors")
    base = {k: full[k] for k in path.keys}
    g = torch.Generator().manual_seed(seed)
    experts = [
        {k: v + 1e-3 * torch.randn(v.shape, generator=g) for k, v in base.items()}
        for _ in range(n_experts)
    ]
    return base, experts, path


def minilm_like(n_experts: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    h, inter, layers = 384, 1536, 6
    base = {}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for mod in ("attention.self.query", "attention.self.key", "attention.self.value",
                    "attention.output.dense"):  # fmt: skip
            base[p + mod + ".weight"] = 0.05 * torch.randn(h, h, generator=g)
            base[p + mod + ".bias"] = 0.01 * torch.randn(h, generator=g)
        base[p + "intermediate.dense.weight"] = 0.05 * torch.randn(inter, h, generator=g)
        base[p + "intermediate.dense.bias"] = 0.01 * torch.randn(inter, generator=g)
        base[p + "output.dense.weight"] = 0.05 * torch.randn(h, inter, generator=g)
        base[p + "output.dense.bias"] = 0.01 * torch.randn(h, generator=g)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            base[p + ln + ".weight"] = 1 + 0.1 * torch.randn(h, generator=g)
            base[p + ln + ".bias"] = 0.01 * torch.randn(h, generator=g)
    experts = [
        {k: v + 1e-3 * torch.randn(v.shape, generator=g) for k, v in base.items()}
        for _ in range(n_experts)
    ]
    return base, experts, BertPath(num_layers=layers)


def bench(name, base, experts, path, repeats, rows, full=None):
    ours = lambda: ties_merging(base, experts, density=0.2, scale=0.3)  # noqa: E731
    sa = lambda: sa_merge(base, experts, path=path)  # noqa: E731
    row = {"setting": name, "N": len(experts)}
    try:
        peer = lambda: fusion_bench_ties(base, experts)  # noqa: E731
        a, b = ours(), peer()
        row["max abs diff vs fusion-bench"] = max(float((a[k] - b[k]).abs().max()) for k in base)
        row["fusion-bench TIES s"] = best_time(peer, repeats)
    except ImportError:
        row["max abs diff vs fusion-bench"] = float("nan")
        row["fusion-bench TIES s"] = float("nan")
    row["our TIES s"] = best_time(ours, repeats)
    row["SA-Merging s"] = best_time(sa, max(1, repeats // 2))
    from icml26.samerging import peers

    row["fusion-bench TSV-M s"] = _peer_time(lambda: peers.fusion_bench_tsvm(base, experts), 1)
    if "Digits" in name:
        row["fusion-bench WUDI s"] = _peer_time(lambda: peers.fusion_bench_wudi(base, experts), 1)
    if full is not None:
        row["mergekit TIES (folders) s"], row["our TIES (whole model) s"] = mergekit_ties_time(
            full, experts, max(1, repeats // 2)
        )
    row["TIES peak MiB"] = peak_mib(ours)
    row["SA peak MiB"] = peak_mib(sa)
    rows.append(row)
    print(row, flush=True)


def trained_experts(folder, n: int):
    """The first ``n`` full experts kept by ``minilm_suite.py --save-experts`` (one seed)."""
    from pathlib import Path

    from icml26.samerging.io import load_state_dict
    from icml26.samerging.minilm import model_dir

    full = load_state_dict(model_dir())
    path = BertPath(num_layers=6)
    base = {k: full[k] for k in path.keys}
    folders = sorted(p for p in (Path(folder) / "full").iterdir() if p.is_dir())
    if len(folders) < n:
        raise SystemExit(f"{folder} holds {len(folders)} experts, {n} asked")
    return base, [load_state_dict(f) for f in folders[:n]], path, full


def bench_trained(base, experts, path, full, rows) -> None:
    """Every merger once, time and peak memory from the same forked run."""
    import shutil
    import tempfile
    from pathlib import Path

    from icml26.samerging import peers
    from icml26.samerging.io import save_state_dict
    from icml26.samerging.minilm import model_dir

    row = {"setting": "MiniLM-L6 trained experts", "N": len(experts)}
    a, b = ties_merging(base, experts, density=0.2, scale=0.3), fusion_bench_ties(base, experts)
    row["max abs diff vs fusion-bench"] = max(float((a[k] - b[k]).abs().max()) for k in base)
    runs = {
        "our TIES": lambda: ties_merging(base, experts, density=0.2, scale=0.3),
        "fusion-bench TIES": lambda: fusion_bench_ties(base, experts),
        "fusion-bench TSV-M": lambda: peers.fusion_bench_tsvm(base, experts),
        "SA-Merging": lambda: sa_merge(base, experts, path=path),
    }
    with tempfile.TemporaryDirectory(prefix="samerging-mk-") as tmp:
        root = Path(tmp)
        folders = []
        for i, ex in enumerate([{}, *experts]):
            f = root / f"m{i}"
            save_state_dict({**full, **ex}, f)
            shutil.copy(model_dir() / "config.json", f / "config.json")
            folders.append(f)
        runs["mergekit TIES (folders)"] = lambda: peers.mergekit_merge(
            folders[0], folders[1:], root / "out", method="ties", weight=1.0, density=0.2
        )
        for name, fn in runs.items():
            wall, cpu, mib = timed_peak(fn)
            row[f"{name} s"], row[f"{name} CPU s"], row[f"{name} peak MiB"] = wall, cpu, mib
            print(name, wall, cpu, mib, flush=True)
    rows.append(row)
    print(row, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--minilm", action="store_true")
    ap.add_argument("--minilm-experts", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--no-digits", action="store_true", help="skip the Digits MLP rows")
    ap.add_argument("--experts", help="a seed folder of minilm_suite.py --save-experts")
    args = ap.parse_args()
    rows = []
    with quiet_dependencies(), torch_threads(1):
        if not args.no_digits:
            config = PRESETS["smoke"]
            tasks, base, _ = _base(
                config.widths, config.noise, config.data_seed, config.base_seed, config.pretrain
            )
            suite = _Suite(base, tasks, config, 0, config.unit_spread)
            for n in (2, 8):
                bench("Digits MLP", suite.base, suite.experts[:n], suite.path, args.repeats, rows)
        if args.experts:
            for n in (2, 3):
                bench_trained(*trained_experts(args.experts, n), rows)
            return _table_trained(rows)
        if args.minilm:
            from icml26.samerging.minilm import available

            for n in args.minilm_experts:
                if available():
                    from safetensors.torch import load_file

                    from icml26.samerging.minilm import model_dir

                    b, ex, path = minilm_real(n)
                    full = load_file(model_dir() / "model.safetensors")
                    bench("MiniLM-L6 encoder", b, ex, path, args.repeats, rows, full=full)
                else:
                    b, ex, path = minilm_like(n)
                    bench("MiniLM-shaped (random)", b, ex, path, args.repeats, rows)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    rows = [{k: r.get(k, float("nan")) for k in keys} for r in rows]
    print("| " + " | ".join(keys) + " | ours/fusion-bench time | SA/TIES time | SA/TIES peak |")
    print("|" + "---|" * (len(keys) + 3))
    for r in rows:
        cells = [f"{r[k]:.3g}" if isinstance(r[k], float) else str(r[k]) for k in keys]
        ratio = r["our TIES s"] / r["fusion-bench TIES s"]
        sa_ratio = r["SA-Merging s"] / r["our TIES s"]
        mem = r["SA peak MiB"] / max(r["TIES peak MiB"], 1e-9)
        print("| " + " | ".join(cells) + f" | {ratio:.2f} | {sa_ratio:.1f} | {mem:.2f} |")
    print(f"torch {torch.__version__}, numpy {np.__version__}")


def _table_trained(rows) -> None:
    names = ("our TIES", "fusion-bench TIES", "mergekit TIES (folders)", "fusion-bench TSV-M",
             "SA-Merging")  # fmt: skip
    print("| N | merger | wall s | CPU s | peak MiB | CPU / our TIES | peak / our TIES |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        for n in names:
            print(
                f"| {r['N']} | {n} | {r[n + ' s']:.2f} | {r[n + ' CPU s']:.2f} | "
                f"{r[n + ' peak MiB']:.0f} | {r[n + ' CPU s'] / r['our TIES CPU s']:.2f} | "
                f"{r[n + ' peak MiB'] / max(r['our TIES peak MiB'], 1e-9):.2f} |"
            )
        print(f"| {r['N']} | max abs diff ours vs fusion-bench TIES | "
              f"{r['max abs diff vs fusion-bench']:.2g} | | | | |")  # fmt: skip
    print(f"torch {torch.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
