"""Other mergers on the MiniLM suite's trained experts: PCB, mergekit TIES, fusion-bench TSV-M.

Reads the experts that ``minilm_suite.py --save-experts DIR`` kept (``DIR/seed<k>/full/
<task>/model.safetensors`` and ``heads.safetensors``), rebuilds the same tasks and base
(``MINILM_CPU``), and merges the full experts with

* our TIES (trim 20 %, the suite's row, recomputed to check that the saved experts give
  the suite's numbers) and our PCB-Merging (``ratio`` 0.1);
* mergekit TIES (density 0.2, weight 1, mergekit's normalisation) on ``save_pretrained``
  folders of the whole model, through ``icml26.samerging.peers.mergekit_merge``;
* fusion-bench TSV-M;
* WUDI only with ``--wudi`` or ``--wudi-only`` (ours; fusion-bench's equals it on 2-D
  tensors, see the tests), else a timing of ``--wudi-probe`` Adam steps on every 2-D
  tensor, extrapolated to 300.

Every merger gives ``θ_0 + λ (merged − θ_0)`` with λ chosen on the validation split over
``MINILM_CPU.lambdas``, as in the suite; accuracy on the test split. Each merge is timed by
CPU time. ``--out`` writes JSON (rewritten after every seed), ``--render`` prints a JSON's
table (mean ± sd over seeds).

    python benchmarks/samerging/minilm_peers.py --experts DIR --seeds 0 1 2 --out peers.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from icml26.samerging import pcb_merging, ties_merging
from icml26.samerging.baselines import _prepare
from icml26.samerging.io import load_state_dict, save_state_dict
from icml26.samerging.reproduce import MINILM_CPU, PRESETS
from icml26.samerging.suites import Head
from icml26.shared import quiet_dependencies, torch_threads


def _cpu(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def wudi_probe(base, experts, steps: int) -> float:
    """CPU seconds of ``steps`` WUDI Adam steps on every 2-D tensor (our WUDI's update)."""
    _, names, taus = _prepare(base, experts, None)
    total = 0.0
    for k in names:
        ts = [t[k].to(torch.float64) for t in taus]
        if ts[0].ndim != 2:
            continue
        t0 = time.process_time()
        weights = [1.0 / (float(t.pow(2).sum()) + 1e-30) for t in ts]
        gram = [t.T @ t for t in ts]
        m = sum(w * g for w, g in zip(weights, gram, strict=True))
        c = sum(w * t @ g for w, t, g in zip(weights, ts, gram, strict=True))
        tau = sum(ts).clone().requires_grad_(True)
        opt = torch.optim.Adam([tau], lr=1e-5)
        setup = time.process_time() - t0
        t1 = time.process_time()
        for _ in range(steps):
            with torch.no_grad():
                tau.grad = 2 * (tau @ m - c)
            opt.step()
        total += setup + (time.process_time() - t1) * 300 / steps
    return total


def run_seed(folder: Path, seed: int, args) -> dict[str, dict]:
    from icml26.samerging.minilm import MiniLM, model_dir, text_tasks
    from icml26.samerging.peers import fusion_bench_tsvm, mergekit_merge

    mc, config = MINILM_CPU, PRESETS["smoke"]
    tasks = text_tasks(mc.tasks, sizes=mc.sizes, seed=mc.data_seed)
    m = MiniLM(tasks)
    b = m.base
    hs = load_state_dict(folder / "heads.safetensors")
    heads = [Head(hs[f"{t.name}.weight"], hs[f"{t.name}.bias"]) for t in tasks]
    experts = [load_state_dict(folder / "full" / t.name) for t in tasks]
    if sorted(experts[0]) != sorted(b):
        raise ValueError(f"{folder}: the saved experts do not hold the encoder's tensors")

    def accs(state, split="test"):
        return np.array([m.accuracy(state, h, t, split) for h, t in zip(heads, tasks, strict=True)])

    ref = np.array([m.accuracy(e, h, t) for e, h, t in zip(experts, heads, tasks, strict=True)])
    out: dict[str, dict] = {
        "Individual experts": {"accuracy": 100 * float(ref.mean()), "normalised": 100.0}
    }

    def add(name, merged_at_one, cpu):
        best = (-1.0, None, None)
        for lam in mc.lambdas:
            state = {k: b[k] + lam * (merged_at_one[k] - b[k]) for k in b}
            val = float(accs(state, "val").mean())
            if val > best[0] + 1e-12:
                best = (val, lam, state)
        acc = accs(best[2])
        out[name] = {
            "accuracy": 100 * float(acc.mean()),
            "normalised": 100 * float((acc / ref).mean()),
            "scale": best[1],
            "cpu_s": cpu,
        }
        print(seed, name, out[name], flush=True)

    if args.wudi_only:
        from icml26.samerging import wudi

        add("WUDI (ours, 300 steps)", *_cpu(lambda: wudi(b, experts)))
        return out
    add("TIES (ours)", *_cpu(lambda: ties_merging(b, experts, density=config.ties_density,
                                                  scale=1.0)))  # fmt: skip
    add("PCB (ours)", *_cpu(lambda: pcb_merging(b, experts, ratio=config.pcb_ratio, scale=1.0)))
    add("fusion-bench TSV-M", *_cpu(lambda: fusion_bench_tsvm(b, experts, scale=1.0)))
    full = load_state_dict(model_dir())
    with tempfile.TemporaryDirectory(prefix="samerging-mk-") as tmp:
        root = Path(tmp)
        folders = []
        for i, ex in enumerate([{}, *experts]):
            f = root / f"m{i}"
            save_state_dict({**full, **ex}, f)
            shutil.copy(model_dir() / "config.json", f / "config.json")
            folders.append(f)
        res, cpu = _cpu(
            lambda: mergekit_merge(folders[0], folders[1:], root / "out", method="ties",
                                   weight=1.0, density=config.ties_density)
        )  # fmt: skip
        merged = load_state_dict(res)
        add("mergekit TIES", {k: merged[k].to(b[k].dtype) for k in b}, cpu)
    if args.wudi:
        from icml26.samerging import wudi

        add("WUDI (ours, 300 steps)", *_cpu(lambda: wudi(b, experts)))
    else:
        out["WUDI (estimate)"] = {"cpu_s_300_steps": wudi_probe(b, experts, args.wudi_probe)}
        print(seed, out["WUDI (estimate)"], flush=True)
    return out


def render(data: dict) -> None:
    rows: dict = defaultdict(lambda: defaultdict(list))
    for per_seed in data["seeds"].values():
        for method, metrics in per_seed.items():
            for k, v in metrics.items():
                rows[method][k].append(v)
    print(f"seeds {list(data['seeds'])}; CPU {data.get('cpu_s', 0):.0f} s")
    print("| method | seeds | accuracy (%) | normalised (%) | λ | merge CPU s |")
    print("|---|---|---|---|---|---|")

    def fmt(v):
        if not v:
            return ""
        return f"{np.mean(v):.1f} ± {np.std(v, ddof=1) if len(v) > 1 else 0:.1f}"

    for method, mt in rows.items():
        lam = "/".join(f"{x:g}" for x in mt.get("scale", []))
        cpu = mt.get("cpu_s") or mt.get("cpu_s_300_steps") or []
        cpu_s = f"{np.mean(cpu):.1f}" if cpu else ""
        print(
            f"| {method} | {len(mt.get('accuracy') or cpu)} | {fmt(mt.get('accuracy'))} "
            f"| {fmt(mt.get('normalised'))} | {lam} | {cpu_s} |"
        )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experts", type=Path, help="the --save-experts folder of minilm_suite.py")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--wudi", action="store_true", help="run WUDI (300 steps per tensor)")
    ap.add_argument("--wudi-only", action="store_true", help="WUDI alone (300 steps)")
    ap.add_argument("--wudi-probe", type=int, default=5, help="WUDI steps timed otherwise")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--render", type=Path, nargs="+", help="JSONs written by --out")
    args = ap.parse_args(argv)
    if args.render:
        data = {"seeds": {}, "cpu_s": 0.0}
        for path in args.render:  # runs of other seeds (or other mergers) merged
            run = json.loads(path.read_text())
            for seed, methods in run["seeds"].items():
                data["seeds"].setdefault(seed, {}).update(methods)
            data["cpu_s"] += run.get("cpu_s", 0.0)
        render(data)
        return
    if args.experts is None:
        ap.error("--experts is required")
    if args.wudi_probe < 1:
        ap.error("--wudi-probe must be >= 1")
    data = {"seeds": {}}
    c0 = time.process_time()
    with torch_threads(1), quiet_dependencies():
        for seed in args.seeds:
            folder = args.experts / f"seed{seed}"
            if not folder.is_dir():
                raise SystemExit(f"no experts for seed {seed} in {args.experts}")
            data["seeds"][str(seed)] = run_seed(folder, seed, args)
            data["cpu_s"] = time.process_time() - c0
            if args.out:
                args.out.write_text(json.dumps(data, indent=1))
    render(data)


if __name__ == "__main__":
    main()
