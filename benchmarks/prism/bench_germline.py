"""Germline assignment: icml26.prism's aligner (anarci germlines, BLOSUM62) vs riot-na.

On the same simulated heavy chains (whose true V gene and NGL residues are known):
time per sequence, V-gene call accuracy, NGL-label accuracy, and agreement of the
two tools' V-gene calls; and on real therapeutic VH/VL sequences (``therapeutics.py``,
no ground truth), the agreement of the two tools' V-gene, J-gene and NGL-label calls.
riot-na is the extra ``riot`` (skipped when absent).

    python benchmarks/prism/bench_germline.py [--quick]

Writes results/prism/bench/germline.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from icml26.prism import GermlineSet, assign_germline, ngl_labels, simulate_repertoire

sys.path.insert(0, str(Path(__file__).resolve().parent))  # therapeutics.py beside this file


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="results/prism/bench")
    args = ap.parse_args()
    n = 10 if args.quick else 50
    _, rep = simulate_repertoire(np.random.default_rng(0), n, 1)
    truth_v = [rep.v_names[i].split("*")[0] for i in rep.v_gene]
    gs = GermlineSet()
    t0 = time.perf_counter()
    ours = [assign_germline(s, germlines=gs) for s in rep.sequences]
    t_ours = (time.perf_counter() - t0) / n
    rows = [
        {
            "tool": "icml26.prism.assign_germline",
            "s_per_seq": t_ours,
            "v_gene_accuracy": float(
                np.mean([_gene(a.v_call) == t for a, t in zip(ours, truth_v, strict=True)])
            ),
            "ngl_label_accuracy": float(
                np.mean(np.concatenate([a.ngl == g for a, g in zip(ours, rep.ngl, strict=True)]))
            ),
        }
    ]
    agreement = None
    try:
        from riot_na import Scheme, create_riot_aa

        t_init = time.perf_counter()
        riot = create_riot_aa()
        t_init = time.perf_counter() - t_init
        t0 = time.perf_counter()
        recs = [
            riot.run_on_sequence(f"s{i}", s, scheme=Scheme.IMGT)
            for i, s in enumerate(rep.sequences)
        ]
        t_riot = (time.perf_counter() - t0) / n
        v = [(r.v_call or "").split("*")[0] for r in recs]
        acc_lab = []
        for r, s, g in zip(recs, rep.sequences, rep.ngl, strict=True):
            if r.sequence_alignment_aa and r.germline_alignment_aa:
                seq, lab = ngl_labels(r.sequence_alignment_aa, r.germline_alignment_aa)
                if seq == s:
                    acc_lab.append(lab == g)
        rows.append(
            {
                "tool": "riot-na",
                "s_per_seq": t_riot,
                "init_s": t_init,
                "v_gene_accuracy": float(
                    np.mean([a == t for a, t in zip(v, truth_v, strict=True)])
                ),
                "ngl_label_accuracy": float(np.mean(np.concatenate(acc_lab)))
                if acc_lab
                else float("nan"),
            }
        )
        agreement = float(np.mean([_gene(a.v_call) == b for a, b in zip(ours, v, strict=True)]))
    except ImportError:
        print("riot-na not installed (pip install 'icml26-prism[riot]'): peer skipped")
    lines = ["| tool | s/sequence | V-gene accuracy | NGL-label accuracy |", "|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['tool']} | {r['s_per_seq']:.4f} | {r['v_gene_accuracy']:.3f} | "
            f"{r['ngl_label_accuracy']:.4f} |"
        )
    if agreement is not None:
        lines.append("")
        lines.append(
            f"speed ours/riot-na: {rows[1]['s_per_seq'] / rows[0]['s_per_seq']:.2f}× "
            f"(riot-na start-up {rows[1]['init_s']:.1f} s not included); "
            f"V-gene agreement {agreement:.3f}"
        )
    lines.append(f"({n} simulated human heavy chains)")
    therapeutic = _therapeutics(gs) if agreement is not None else None
    if therapeutic:
        lines += ["", "| therapeutics | V gene | J gene | NGL labels | no call (ours) |"]
        lines.append("|---|---|---|---|---|")
        for chain, t in therapeutic.items():
            lines.append(
                f"| {chain} ({t['n']}) | {t['v_agree']:.2f} | {t['j_agree']:.2f} | "
                f"{t['ngl_agree']:.3f} | {t['no_call']} |"
            )
        lines.append(
            "(agreement of our calls with riot-na at the gene level, alleles ignored; NGL "
            "labels over residues where both tools made a call; humanised and human "
            "antibodies, plus the chimeric (mouse V) rituximab and cetuximab heavy chains)"
        )
    table = "\n".join(lines)
    print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "germline.json").write_text(
        json.dumps(
            {"rows": rows, "agreement": agreement, "n": n, "therapeutics": therapeutic}, indent=2
        )
    )
    (out / "germline.md").write_text(table + "\n")


def _gene(call: str | None) -> str:
    return (call or "").split(",")[0].split("*")[0]


def _therapeutics(gs_heavy: GermlineSet) -> dict:
    """Our calls vs riot-na's on the therapeutic VH/VL set."""
    from riot_na import Scheme, create_riot_aa
    from therapeutics import VH, VL

    riot = create_riot_aa()
    sets = {
        "VH": [(n, s, gs_heavy) for n, s in VH.items()],
        "VL": [(n, s, GermlineSet("human", c)) for n, (c, s) in VL.items()],
    }
    out = {}
    for chain, items in sets.items():
        v, j, lab, no_call, calls = [], [], [], 0, []
        for name, seq, gs in items:
            a = assign_germline(seq, chain=gs.chain, germlines=gs)
            r = riot.run_on_sequence(name, seq, scheme=Scheme.IMGT)
            calls.append({"name": name, "ours": [a.v_call, a.j_call], "riot": [r.v_call, r.j_call]})
            if not a.called:
                no_call += 1
                continue
            v.append(_gene(a.v_call) == _gene(r.v_call))
            j.append(_gene(a.j_call) == _gene(r.j_call))
            if r.sequence_alignment_aa and r.germline_alignment_aa:
                rs, rl = ngl_labels(r.sequence_alignment_aa, r.germline_alignment_aa)
                start = seq.find(rs)
                if start >= 0:
                    lab.append(a.ngl[start : start + len(rs)] == rl)
        out[chain] = {
            "n": len(items),
            "v_agree": float(np.mean(v)) if v else float("nan"),
            "j_agree": float(np.mean(j)) if j else float("nan"),
            "ngl_agree": float(np.mean(np.concatenate(lab))) if lab else float("nan"),
            "no_call": no_call,
            "calls": calls,
        }
    return out


if __name__ == "__main__":
    main()
