"""The cmrbench preset on small files in the official format (JSON Lines rows of
``data/processed/cleaned-<experience>-{val,eval}.json`` in collagelab/CMR)."""

from __future__ import annotations

import json

import pytest

from icml26.carve import cli
from icml26.carve import reproduce as rp
from icml26.shared import Report

AREAS = {
    "Computer Vision Object Detection": ("detect {} in photos", "detr"),
    "Computer Vision Image Classification": ("classify {} pictures", "vit"),
    "Natural Language Processing Translation": ("translate {} text", "marian"),
    "Audio Automatic Speech Recognition": ("transcribe {} speech", "whisper"),
    "Natural Language Processing Summarization": ("summarize {} articles", "bart"),
}
TOPICS = ("street", "medical", "legal", "drone", "news", "kitchen")


def _row(domain: str, model: str, family: str, topic: str) -> dict:
    task, _ = AREAS[domain]
    return {
        "model_name": model, "model_family": family, "created_at": 1646263745000,
        "instruction": f"###Instruction: I need to {task.format(topic)} with {family}.",
        "domain": domain, "original_dataset": "APIBench", "model_source": "HuggingFace",
        "api_data": {"domain": domain, "framework": "Hugging Face Transformers",
                     "functionality": domain.split(" ", 2)[-1], "api_name": model,
                     "api_call": f"AutoModel.from_pretrained('{model}')",
                     "description": f"{family} model for {domain.lower()}."},
        "explanation": "",
    }  # fmt: skip


def write_cmrbench(root, per_model: int = 4) -> None:
    """Four experiences; each adds models of new domains and reuses one old model."""
    domains = list(AREAS)
    for t, name in enumerate(rp.CMRBENCH_EXPERIENCES):
        models = [(d, f"org{t}/{AREAS[d][1]}-{v}", f"{AREAS[d][1]}-{t}")
                  for d in domains[t : t + 2] for v in ("base", "large")]  # fmt: skip
        if t:
            models.append(
                (domains[0], f"org0/{AREAS[domains[0]][1]}-base", f"{AREAS[domains[0]][1]}-0")
            )
        for split, n in (("val", per_model), ("eval", 2)):
            rows = [_row(d, m, f, TOPICS[(i + t) % len(TOPICS)])
                    for d, m, f in models for i in range(n)]  # fmt: skip
            text = "\n".join(json.dumps(r).replace("/", "\\/") for r in rows)
            (root / f"cleaned-{name}-{split}.json").write_text(text + "\n")


def test_cmrbench_preset_runs_on_official_format_files(tmp_path, fast_train):
    data = tmp_path / "data"
    data.mkdir()
    write_cmrbench(data)
    config = rp.replace(rp.CMRBENCH, data_dir=str(data), encoder="hashed", encoder_dim=256,
                        train=rp.replace(fast_train, epochs=1, max_epochs=3),
                        methods=(rp.ZERO_SHOT, rp.BM25, rp.REPLAY, rp.METHOD))  # fmt: skip
    hub = rp.load_hub(config, 0)
    assert [e.name for e in hub.experiences] == list(rp.CMRBENCH_EXPERIENCES)
    assert [len(e.new_models) for e in hub.experiences] == [4, 4, 4, 4]  # reused ids keep E1's row
    report = Report.merge([rp.run(config, 0, tmp_path / "out")])
    assert set(report.methods) == set(config.methods)
    assert "official CMRBench files" in " ".join(report.notes)
    assert "hashed-ngram-256" in " ".join(report.notes)
    checks = rp.judge(report, config)
    assert [c.name[:3] for c in checks] == ["(a)", "(b)", "(c)"]  # no simulator check
    # the retrieval rows do not depend on the seed on fixed files: reused, not recomputed
    again = rp.run(rp.replace(config, methods=(rp.ZERO_SHOT, rp.BM25)), 1, tmp_path / "out")
    first = {r["method"]: r["accuracy"] for r in report.records}
    assert [r["train_s"] for r in again.records] == [0.0, 0.0]
    assert all(first[r["method"]] == r["accuracy"] for r in again.records)


def test_cli_reproduce_with_data_and_its_errors(tmp_path, capsys, monkeypatch):
    with pytest.raises(ValueError, match="--data DIR"):
        monkeypatch.delenv(rp.DATA_ENV, raising=False)
        rp.load_hub(rp.CMRBENCH, 0)
    assert cli.main(["reproduce", "--data", str(tmp_path / "nowhere"), "--encoder", "hashed",
                     "--seeds", "1", "--out", str(tmp_path)]) == 2  # fmt: skip
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "cleaned-apibench-hf-val.json").write_text("{}\n")
    assert cli.main(["reproduce", "--data", str(tmp_path), "--seeds", "1"]) == 2
    assert "lacks the CMRBench files" in capsys.readouterr().err


def test_cli_methods_subset_runs_in_order_and_rejects_unknown_names(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    write_cmrbench(data)
    args = ["reproduce", "--data", str(data), "--encoder", "hashed", "--seeds", "1",
            "--out", str(tmp_path / "out")]  # fmt: skip
    assert cli.main([*args, "--methods", "bm25,ewc-typo"]) == 2
    assert "unknown --methods ['ewc-typo']" in capsys.readouterr().err
    assert cli.main([*args, "--methods", "bm25, zero-shot"]) == 0
    out = capsys.readouterr().out
    assert out.index(rp.BM25) < out.index(rp.ZERO_SHOT) and rp.METHOD not in out
    assert "written to" in out
