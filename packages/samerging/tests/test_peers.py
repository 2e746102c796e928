"""mergekit on BertModel save_pretrained folders: the upstream failure and the workaround."""

import importlib.metadata

import pytest
import torch

# imports mergekit, transformers and fusion-bench: slow on the 2-core machines
pytestmark = pytest.mark.slow

mergekit = pytest.importorskip("mergekit", reason="mergekit is in the 'peers' extra")
transformers = pytest.importorskip("transformers", reason="transformers is in the extras")

from icml26.samerging import task_arithmetic  # noqa: E402
from icml26.samerging.io import load_state_dict  # noqa: E402
from icml26.samerging.peers import bert_architecture, mergekit_merge  # noqa: E402
from icml26.shared import quiet_dependencies  # noqa: E402


@pytest.fixture(scope="module")
def bert_folders(tmp_path_factory):
    """A tiny BertModel base and two experts (base + small noise), save_pretrained layout."""
    from transformers import BertConfig, BertModel

    root = tmp_path_factory.mktemp("bert")
    cfg = BertConfig(
        vocab_size=40, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=16, max_position_embeddings=12,
    )  # fmt: skip
    g = torch.Generator().manual_seed(0)
    with quiet_dependencies():
        torch.manual_seed(0)
        base = BertModel(cfg)
        base.save_pretrained(root / "base")
        folders = []
        for i in range(2):
            ex = BertModel(cfg)
            ex.load_state_dict(base.state_dict())
            with torch.no_grad():
                for p in ex.parameters():
                    p.add_(0.01 * torch.randn(p.shape, generator=g))
            ex.save_pretrained(root / f"expert{i}")
            folders.append(root / f"expert{i}")
    return root / "base", folders


def test_the_upstream_failure_is_the_optional_weight_alias_tuple(bert_folders, tmp_path):
    """mergekit's own run_merge on BertModel folders: list + tuple in plan_tensor (0.1.5)."""
    if importlib.metadata.version("mergekit") != "0.1.5":
        pytest.skip("the failure was diagnosed on mergekit 0.1.5")
    from mergekit.architecture.json_definitions import NAME_TO_ARCH
    from mergekit.config import MergeConfiguration
    from mergekit.merge import run_merge
    from mergekit.options import MergeOptions

    (arch,) = NAME_TO_ARCH["BertModel"]
    spec = arch.modules["default"].architecture.definition
    aliased = [w.name for w in spec.pre_weights + spec.post_weights if w.optional and w.aliases]
    assert aliased == ["embeddings.position_ids"]
    base, experts = bert_folders
    models = [{"model": str(e), "parameters": {"weight": 1.0, "density": 0.2}} for e in experts]
    config = MergeConfiguration.model_validate(
        {"merge_method": "ties", "base_model": str(base), "models": models, "dtype": "float32"}
    )
    with quiet_dependencies(), pytest.raises(TypeError, match="concatenate list"):
        run_merge(config, str(tmp_path / "out"), options=MergeOptions(quiet=True))


def test_the_fixed_architecture_differs_only_in_the_optional_aliases():
    (orig,) = mergekit.architecture.json_definitions.NAME_TO_ARCH["BertModel"]
    fixed = bert_architecture()
    a = orig.modules["default"].architecture.definition
    b = fixed.modules["default"].architecture.definition
    for wa, wb in zip(a.pre_weights + a.post_weights, b.pre_weights + b.post_weights, strict=True):
        assert wa.name == wb.name and wa.optional == wb.optional
        assert wb.aliases == (None if wa.optional else wa.aliases)
    assert a.layer_templates == b.layer_templates


def test_mergekit_task_arithmetic_on_bert_folders_equals_ours(bert_folders, tmp_path):
    base, experts = bert_folders
    with quiet_dependencies():
        out = mergekit_merge(base, experts, tmp_path / "ta", method="task_arithmetic", weight=0.5)
    merged = load_state_dict(out)
    b = load_state_dict(base)
    ours = task_arithmetic(b, [load_state_dict(e) for e in experts], scale=0.5)
    assert sorted(merged) == sorted(b)
    for k in b:
        torch.testing.assert_close(merged[k], ours[k], atol=1e-6, rtol=0)


def test_mergekit_ties_on_bert_folders_runs_and_trims(bert_folders, tmp_path):
    base, experts = bert_folders
    with quiet_dependencies():
        out = mergekit_merge(base, experts, tmp_path / "ties", method="ties", density=0.2)
    merged, b = load_state_dict(out), load_state_dict(base)
    assert sorted(merged) == sorted(b)
    w = "encoder.layer.0.intermediate.dense.weight"
    changed = float((merged[w] != b[w]).float().mean())
    assert 0.05 < changed < 0.45  # two experts trimmed to 20 % each: 20-40 % of entries move


def test_mixed_architectures_are_refused(bert_folders, tmp_path):
    import json
    import shutil

    base, experts = bert_folders
    other = tmp_path / "other"
    shutil.copytree(experts[0], other)
    cfg = json.loads((other / "config.json").read_text())
    cfg["architectures"] = ["BertForMaskedLM"]
    (other / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="different architectures"):
        mergekit_merge(base, [other], tmp_path / "out")
    with pytest.raises(ValueError, match="at least one"):
        mergekit_merge(base, [], tmp_path / "out")
    (other / "pytorch_model.bin").write_bytes(b"\x80\x04")
    with pytest.raises(ValueError, match="pickled"):
        mergekit_merge(base, [other], tmp_path / "out")


def _tiny(seed=0, n=3):
    g = torch.Generator().manual_seed(seed)
    base = {"a.weight": torch.randn(6, 5, generator=g), "a.bias": torch.randn(6, generator=g)}
    experts = [{k: v + 0.1 * torch.randn(v.shape, generator=g) for k, v in base.items()}
               for _ in range(n)]  # fmt: skip
    return base, experts


def test_fusion_bench_wudi_equals_ours_on_weights():
    pytest.importorskip("fusion_bench", reason="fusion-bench is in the 'peers' extra")
    from icml26.samerging import wudi
    from icml26.samerging.peers import fusion_bench_wudi

    base, experts = _tiny()
    theirs, ours = fusion_bench_wudi(base, experts, iterations=50), wudi(base, experts, steps=50)
    torch.testing.assert_close(theirs["a.weight"], ours["a.weight"], atol=1e-5, rtol=0)
    # 1-D tensors: fusion-bench takes the mean of the task vectors, we take their sum
    taus = torch.stack([e["a.bias"] - base["a.bias"] for e in experts])
    torch.testing.assert_close(theirs["a.bias"], base["a.bias"] + taus.mean(0))
    torch.testing.assert_close(ours["a.bias"], base["a.bias"] + taus.sum(0))


def test_fusion_bench_tsvm_keeps_one_nth_of_each_task_spectrum():
    pytest.importorskip("fusion_bench", reason="fusion-bench is in the 'peers' extra")
    from icml26.samerging.peers import fusion_bench_tsvm

    base, experts = _tiny(n=1)
    # one expert: TSV-M is its full SVD reassembled, the task vector itself
    merged = fusion_bench_tsvm(base, experts)
    torch.testing.assert_close(merged["a.weight"], experts[0]["a.weight"], atol=1e-5, rtol=0)
    base, experts = _tiny(n=5)  # five tasks: rank 1 each of the five-dimensional spectrum
    merged = fusion_bench_tsvm(base, experts, scale=0.5)
    delta = merged["a.weight"] - base["a.weight"]
    assert int(torch.linalg.matrix_rank(delta, atol=1e-5)) == 5
    with pytest.raises(ValueError, match="shape"):
        fusion_bench_tsvm(base, [{**experts[0], "a.weight": torch.zeros(2, 2)}])
