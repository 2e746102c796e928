"""CUDA paths (deselected by default; `nox -s gpu-gnn-watermark`)."""

from __future__ import annotations

import pytest
import torch

from icml26.gnn_watermark import ridge_explanation, train_watermarked, verify_ownership

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def test_explanation_on_cuda_matches_cpu():
    torch.manual_seed(0)
    x = (torch.rand(4, 30, 200) < 0.2).double()
    y = torch.softmax(torch.randn(4, 30, 5, dtype=torch.float64), -1)
    torch.testing.assert_close(ridge_explanation(x.cuda(), y.cuda()).cpu(), ridge_explanation(x, y))


def test_watermarking_runs_on_cuda(tiny_graph, tiny_key, tiny_model_config, tiny_train_config):
    wm = train_watermarked(
        tiny_graph, tiny_key, tiny_model_config, tiny_train_config, device="cuda"
    )
    assert next(wm.model.parameters()).is_cuda
    v = verify_ownership(wm.model, tiny_graph, tiny_key, num_null_subgraphs=30, num_null_tuples=100)
    assert v.alignment > 0.8


def test_official_fine_tuning_and_pruning_run_on_cuda(tiny_graph, tiny_key, trained):
    import copy

    from icml26.gnn_watermark import OFFICIAL_FINETUNE, accuracy, prune

    _, wm = trained
    model = copy.deepcopy(wm.model).cuda()
    tuned, nodes = OFFICIAL_FINETUNE.run(model, tiny_graph, lr=1e-4, exclude=tiny_key.nodes)
    assert next(tuned.parameters()).is_cuda and len(nodes) == 6
    cpu_tuned, _ = OFFICIAL_FINETUNE.run(wm.model, tiny_graph, lr=1e-4, exclude=tiny_key.nodes)
    assert abs(accuracy(tuned, tiny_graph) - accuracy(cpu_tuned, tiny_graph)) <= 0.02
    assert next(prune(model, 0.3).parameters()).is_cuda
