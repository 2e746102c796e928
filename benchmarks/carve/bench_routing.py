"""Routing latency over a growing registry, and training throughput.

Ours: the CARvE router's inference (adapter + projection + cosine against the cached
normalised registry + argmax, torch on CPU), batched (1,024 queries) and one query at a
time (batch 1). Peer: exact inner-product search with FAISS (``IndexFlatIP``) over the
same registry rows e(m) and query vectors z(q) (projection included), i.e. the
dense-retrieval path a hub search would use. With the ``minilm`` extra, the same at
batch 1 with the query encoder included (MiniLM + CARvE vs MiniLM + FAISS over the card
vectors), and batched (128 requests encoded and routed at once). Same input, one run,
ratios reported. Also: training queries per second.

    python benchmarks/carve/bench_routing.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from icml26.carve import (
    CARVE,
    CarveRouter,
    ContinualRouter,
    HashedNgramEncoder,
    MiniLMEncoder,
    simulate_hub,
)
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
            # batch 1: one request at a time, as a serving router sees them
            x1, z1 = x[:1], z[:1]
            ours1 = best_of(lambda router=router, x1=x1: router.predict(x1), 5 * repeats) * 1e3
            proj1 = best_of(lambda router=router, x1=x1: router.encode(x1), 5 * repeats) * 1e3
            peer1 = best_of(lambda index=index, z1=z1: index.search(z1, 1), 5 * repeats) * 1e3
            entry |= {"carve_batch1_ms": ours1, "faiss_plus_projection_batch1_ms": peer1 + proj1,
                      "ratio_batch1": ours1 / (peer1 + proj1)}  # fmt: skip
        rows.append(entry)

    encoder_row = None
    if faiss is not None and MiniLMEncoder.available():
        # batch 1 with the query encoder: the encoder dominates both paths
        enc_m = MiniLMEncoder()
        query = ["I need a model that detects cars in drone footage, fast"]
        cards = enc_m.encode([f"card {i}: a model for task {i % 37}" for i in range(512)])
        router = CarveRouter(enc_m.dim, dim, adapter_hidden=256)
        router.register([f"m{i}" for i in range(2048)])
        index = faiss.IndexFlatIP(enc_m.dim)
        index.add(np.ascontiguousarray(np.tile(cards, (4, 1))))
        t_enc = best_of(lambda: enc_m.encode(query), repeats) * 1e3
        t_ours = best_of(lambda: router.predict(enc_m.encode(query)), repeats) * 1e3
        t_peer = best_of(lambda: index.search(enc_m.encode(query), 1), repeats) * 1e3
        encoder_row = {"models": 2048, "minilm_ms": t_enc, "minilm_carve_ms": t_ours,
                       "minilm_faiss_ms": t_peer, "ratio": t_ours / t_peer}  # fmt: skip
        # batched with the encoder: 128 requests encoded and routed at once (ms per request)
        many = [f"{query[0]} (variant {i})" for i in range(128)]
        b_enc = best_of(lambda: enc_m.encode(many), 2) / len(many) * 1e3
        b_ours = best_of(lambda: router.predict(enc_m.encode(many)), 2) / len(many) * 1e3
        b_peer = best_of(lambda: index.search(enc_m.encode(many), 1), 2) / len(many) * 1e3
        encoder_row |= {"batched_minilm_ms": b_enc, "batched_minilm_carve_ms": b_ours,
                        "batched_minilm_faiss_ms": b_peer,
                        "batched_ratio": b_ours / b_peer}  # fmt: skip

    # training throughput: CARvE's second experience of the smoke hub (two phases,
    # anchors, replay), after a first one that pays the one-off imports and set-up
    hub = simulate_hub(SMOKE.hub, numpy_rng(0, "hub"))
    enc = HashedNgramEncoder(SMOKE.encoder_dim)
    x0, x1 = (enc.encode(hub.experiences[t].train.texts) for t in (0, 1))
    train = replace(SMOKE.train, max_epochs=None)  # a fixed 3 epochs: a steady-state rate
    learner = ContinualRouter(hub, x0.shape[1], train=train, strategy=CARVE, device="cpu")
    learner.learn(0, x0)
    seen, seconds = learner.train_examples, learner.train_seconds
    learner.learn(1, x1)
    qps = (learner.train_examples - seen) / (learner.train_seconds - seconds)

    nan = float("nan")
    lines = ["| models | CARvE ms/query (batched) | FAISS+proj | ratio | CARvE ms (batch 1) "
             "| FAISS+proj (batch 1) | ratio | same argmax |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(
            f"| {r['models']} | {r['carve_ms_per_query']:.4f} | "
            f"{r.get('faiss_plus_projection_ms', nan):.4f} | "
            f"{r.get('ratio_carve_vs_faiss', nan):.2f} | {r.get('carve_batch1_ms', nan):.3f} | "
            f"{r.get('faiss_plus_projection_batch1_ms', nan):.3f} | "
            f"{r.get('ratio_batch1', nan):.2f} | {r.get('same_argmax', '')} |"
        )
    if encoder_row is not None:
        e = encoder_row
        lines.append(
            f"\nbatch 1 with the MiniLM query encoder, 2,048 models: encoder alone "
            f"{e['minilm_ms']:.2f} ms; MiniLM + CARvE {e['minilm_carve_ms']:.2f} ms; "
            f"MiniLM + FAISS {e['minilm_faiss_ms']:.2f} ms (ratio {e['ratio']:.3f}); batched "
            f"(128 requests, ms per request): encoder {e['batched_minilm_ms']:.2f}, MiniLM + "
            f"CARvE {e['batched_minilm_carve_ms']:.2f}, MiniLM + FAISS "
            f"{e['batched_minilm_faiss_ms']:.2f} (ratio {e['batched_ratio']:.3f})"
        )
    lines.append(f"\ntraining: {qps:.0f} queries/s (smoke config, batch {SMOKE.train.batch_size})")
    table = "\n".join(lines)
    print(f"batched routing latency, batch {batch}, d = {dim}, 1 thread\n{table}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "routing.json").write_text(
        json.dumps({"latency": rows, "with_encoder": encoder_row, "train_qps": qps}, indent=2)
    )
    (out / "routing.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
