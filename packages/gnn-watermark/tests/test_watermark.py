"""The embedding objective and the training loop."""

from __future__ import annotations

import pytest
import torch

from icml26.gnn_watermark import accuracy, pcgrad_backward, watermark_alignment, watermark_loss


def test_watermark_loss_is_the_official_hinge():
    beta = torch.tensor([[0.2, -0.01, 0.3], [0.0, 0.05, -0.2]])
    w = torch.tensor([1.0, -1.0, 0.0])
    # entries: 0.2 -> 0; 0.01 -> 0.04; 0 -> 0.05; -0.05 -> 0.10 ; mean over 4 = 0.0475
    assert float(watermark_loss(beta, w, 0.05)) == pytest.approx(0.0475)
    assert watermark_alignment(beta, w) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        watermark_loss(beta, torch.ones(4), 0.05)


def test_pcgrad_projects_conflicting_gradients():
    p = torch.nn.Parameter(torch.zeros(2))
    g1, g2 = torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 1.0])  # g1·g2 < 0
    conflicted = pcgrad_backward([(p * g1).sum(), (p * g2).sum()], [p])
    pg1 = g1 - (g1 @ g2) / (g2 @ g2) * g2
    pg2 = g2 - (g2 @ g1) / (g1 @ g1) * g1
    torch.testing.assert_close(p.grad, (pg1 + pg2) / 2)
    assert conflicted == [True, True]
    q = torch.nn.Parameter(torch.zeros(2))
    pcgrad_backward([(q * g1).sum(), (q * torch.tensor([1.0, 1.0])).sum()], [q])
    torch.testing.assert_close(q.grad, torch.tensor([1.0, 0.5]))  # no conflict: plain mean


def test_watermarking_keeps_accuracy_and_embeds_signs(tiny_graph, trained):
    clean, wm = trained
    assert accuracy(clean, tiny_graph) > 0.8
    assert accuracy(wm.model, tiny_graph) > 0.8  # still a good classifier with the watermark
    assert wm.history["wmk_alignment"][-1] > wm.history["wmk_alignment"][0]
    assert wm.history["loss_extra"][-1] < wm.history["loss_extra"][0]
