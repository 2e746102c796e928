import json

import numpy as np
import pytest

from icml26.carve import HubConfig, load_cmrbench, simulate_hub
from icml26.carve.hub import area_of
from icml26.shared import numpy_rng


def test_simulated_hub_grows_by_appending(tiny_hub):
    hub = tiny_hub
    sizes = [hub.n_registered(t) for t in range(len(hub.experiences))]
    assert sizes == sorted(sizes) and sizes[0] > 0
    for e in hub.experiences:
        # each experience registers a contiguous block after the previous ones
        assert e.new_models[0] == (hub.n_registered(e.index - 1) if e.index else 0)
        assert set(e.train.model) <= set(e.new_models) and set(e.test.model) <= set(e.new_models)
        assert np.all(hub.model_domain[e.train.model] == e.train.domain)
    # families hold near-duplicate variants, and some are re-released in later experiences
    fam_exp = {}
    for m in hub.models:
        fam_exp.setdefault(m.family, set()).add(m.experience)
    assert any(len(v) > 1 for v in fam_exp.values())
    assert np.bincount(hub.model_family).max() >= 2


def test_simulator_is_seeded_and_heavy_tailed():
    cfg = HubConfig(n_experiences=4, n_domains=16, models_per_experience=30)
    a = simulate_hub(cfg, numpy_rng(3, "hub"))
    b = simulate_hub(cfg, numpy_rng(3, "hub"))
    assert (
        a.model_ids == b.model_ids and a.experiences[2].train.texts == b.experiences[2].train.texts
    )
    counts = np.sort(np.bincount(a.model_domain))[::-1]
    assert counts[0] >= 4 * counts[-1]  # Zipf domain sizes
    with pytest.raises(TypeError):
        simulate_hub(cfg, 3)
    with pytest.raises(ValueError):
        HubConfig(n_domains=1)


def _row(model, family, domain, text):
    return {
        "model_name": model,
        "model_family": family,
        "domain": domain,
        "instruction": text,
        "api_data": {"domain": domain, "description": f"{model} card"},
    }


def test_loader_reads_official_json_lines_and_arrays(tmp_path):
    e1 = [
        _row("org/a", "a", "Computer Vision Object Detection", f"detect cars {i}") for i in range(4)
    ]
    e1 += [_row("org/b", "b", "Audio Text-to-Speech", f"read aloud {i}") for i in range(4)]
    e2 = [
        _row("org/c", "a", "Computer Vision Object Detection", f"find boxes {i}") for i in range(3)
    ]
    e2 += [_row("org/a", "a", "Computer Vision Object Detection", "old model again")]
    p1, p2 = tmp_path / "e1.json", tmp_path / "e2.json"
    p1.write_text("\n".join(json.dumps(r) for r in e1))  # JSON Lines, as shipped
    p2.write_text(json.dumps(e2))  # a JSON array works too
    hub = load_cmrbench({"apibench": p1, "mllm": p2}, test_fraction=0.25, seed=0)
    assert hub.model_ids == ["org/a", "org/b", "org/c"]
    assert hub.n_registered(0) == 2 and hub.n_registered(1) == 3
    assert len(hub.experiences[0].train) + len(hub.experiences[0].test) == 8
    assert hub.models[2].family == "a" and hub.models[0].area == "computer vision"
    assert "org/a card" in hub.models[0].card
    assert area_of("Natural Language Processing Fill-Mask") == "natural language processing"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty"),
        ("{not json", "neither part of a JSON array"),
        ("[1, 2]", "must be a JSON object"),
        (json.dumps([{"model_name": "m", "domain": "d"}]), "instruction"),
        (json.dumps([{"model_name": "m", "domain": "d", "instruction": "   "}]), "instruction"),
        (json.dumps([{**_row("m", "f", "d", "q"), "api_data": "x"}]), "api_data"),
        (json.dumps([{**_row("m", "f", "d", "q"), "model_family": 3}]), "model_family"),
    ],
)
def test_loader_rejects_malformed_files(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_cmrbench({"e1": (path, path)})


def test_loader_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        load_cmrbench({"e1": tmp_path / "missing.json"})
    with pytest.raises(ValueError, match="non-empty mapping"):
        load_cmrbench({})
    with pytest.raises(ValueError, match="unknown model id"):
        simulate_hub(HubConfig(n_domains=4, models_per_experience=8), numpy_rng(0)).index("nope")
