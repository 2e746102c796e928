import torch
import torch.nn.functional as F

from icml26.carve import Anchor, CarveRouter, ContinualRouter, Strategy


def test_anchor_losses_are_asymmetric():
    r = CarveRouter(8, 4, adapter_hidden=0)
    r.register(["a", "b", "c"])
    anchor = Anchor(r, n_old=2)
    assert anchor.embedding_loss(r).item() < 1e-6 and anchor.projection_loss(r).item() == 0.0
    with torch.no_grad():
        r.model_embeddings.weight[2] += 5.0  # a new row moves: no anchor loss
    assert anchor.embedding_loss(r).item() < 1e-6
    with torch.no_grad():
        r.model_embeddings.weight[0] = -r.model_embeddings.weight[0]  # an old row flips
        r.projection.weight += 0.1
    assert abs(anchor.embedding_loss(r).item() - 1.0) < 1e-5  # (2 + 0) / 2
    assert abs(anchor.projection_loss(r).item() - 0.01) < 1e-6


def _old_row_drift(hub, xs_train, strategy, fast):
    learner = ContinualRouter(hub, xs_train[0].shape[1], train=fast, strategy=strategy, seed=0,
                              device="cpu")  # fmt: skip
    learner.learn(0, xs_train[0])
    n_old = hub.n_registered(0)
    before = learner.router.model_embeddings.weight[:n_old].detach().clone()
    learner.learn(1, xs_train[1])
    after = learner.router.model_embeddings.weight[:n_old].detach()
    return float((1 - F.cosine_similarity(before, after, dim=-1)).mean())


def test_anchoring_keeps_old_embeddings_fixed_during_its_phase(tiny_hub, tiny_features, fast_train):
    _, xs_train, _ = tiny_features
    # the whole experience in phase 1 (anchors on) vs the same schedule without anchors
    anchored = Strategy("anchored", replay=None, two_phase=True, phase1_fraction=0.99)
    free = Strategy("free", replay=None, two_phase=True, phase1_fraction=0.99,
                    anchor_embedding=0.0, anchor_projection=0.0)  # fmt: skip
    drift_anchored = _old_row_drift(tiny_hub, xs_train, anchored, fast_train)
    drift_free = _old_row_drift(tiny_hub, xs_train, free, fast_train)
    assert drift_anchored < 1e-3
    assert drift_free > 20 * drift_anchored
