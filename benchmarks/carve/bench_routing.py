"""Routing latency over a growing registry, and training throughput.

Ours: the CARvE router's batched inference (projection + adapter + cosine against the
normalised registry + argmax, torch on CPU). Peer: exact inner-product search with
FAISS (``IndexFlatIP``) over the same query vectors z(q) and registry rows e(m), i.e.
the dense-retrieval path a hub search would use. Same input, one run, ratios reported.
Also: training queries per second of one CARvE experience.

    python benchmarks/carve/bench_routing.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml26.carve import CARVE, CarveRouter, ContinualRouter, HashedNgramEncoder, simulate_hub
from icml26.carve.reproduce import SMOKE
from icml26.shared import numpy_rng


def best_of(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--out", default="results/carve/bench")
    args = parser.parse_args()
    torch.set_num_threads(1)
    sizes = [512, 2048, 8192] if args.quick else [256, 512, 1024, 2048, 4096, 8192]
    repeats = 3 if args.quick else 7
    batch, input_dim, dim = 1024, 1024, 256
    rng = np.random.default_rng(0)
    x = torch.as_tensor(rng.normal(size=(batch, input_dim)), dtype=torch.float32)
    try:
        import faiss

        faiss.omp_set_num_threads(1)
    except ImportError:
        faiss = None
    rows = []
    for m in sizes:
        router = CarveRouter(input_dim, dim, adapter_hidden=256)
        router.register([f"m{i}" for i in range(m)])
        ours = (
            best_of(lambda router=router: router.predict(x), repeats) / batch * 1e3
        )  # ms per query
        entry = {"models": m, "carve_ms_per_query": ours}
        if faiss is not None:
            with torch.no_grad():
                z = torch.nn.functional.normalize(router.encode(x), dim=-1).numpy()
                reg = np.ascontiguousarray(router.normalized_registry().detach().numpy())
            index = faiss.IndexFlatIP(dim)
            index.add(reg)
            same = float(np.mean(index.search(z, 1)[1][:, 0] == router.predict(x)))
            peer = best_of(lambda index=index, z=z: index.search(z, 1), repeats) / batch * 1e3
            proj = best_of(lambda router=router: router.encode(x), repeats) / batch * 1e3
            entry |= {"faiss_search_ms_per_query": peer, "projection_ms_per_query": proj,
                      "faiss_plus_projection_ms": peer + proj, "same_argmax": same,
                      "ratio_carve_vs_faiss": ours / (peer + proj)}  # fmt: skip
        rows.append(entry)

    # training throughput: CARvE's second experience of the smoke hub (two phases,
    # anchors, replay), after a first one that pays the one-off imports and set-up
    hub = simulate_hub(SMOKE.hub, numpy_rng(0, "hub"))
    enc = HashedNgramEncoder(SMOKE.encoder_dim)
    x0, x1 = (enc.encode(hub.experiences[t].train.texts) for t in (0, 1))
    learner = ContinualRouter(hub, x0.shape[1], train=SMOKE.train, strategy=CARVE, device="cpu")
    learner.learn(0, x0)
    seen, seconds = learner.train_examples, learner.train_seconds
    learner.learn(1, x1)
    qps = (learner.train_examples - seen) / (learner.train_seconds - seconds)

    lines = ["| models | CARvE ms/query | FAISS+proj ms/query | ratio | same argmax |",
             "|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(
            f"| {r['models']} | {r['carve_ms_per_query']:.4f} | "
            f"{r.get('faiss_plus_projection_ms', float('nan')):.4f} | "
            f"{r.get('ratio_carve_vs_faiss', float('nan')):.2f} | {r.get('same_argmax', '')} |"
        )
    lines.append(f"\ntraining: {qps:.0f} queries/s (smoke config, batch {SMOKE.train.batch_size})")
    table = "\n".join(lines)
    print(f"batched routing latency, batch {batch}, d = {dim}, 1 thread\n{table}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "routing.json").write_text(json.dumps({"latency": rows, "train_qps": qps}, indent=2))
    (out / "routing.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
