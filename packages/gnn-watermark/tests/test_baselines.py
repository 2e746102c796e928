"""The backdoor-trigger watermark and its ownership ambiguity."""

from __future__ import annotations

import pytest

from icml26.gnn_watermark import (
    random_trigger_graph,
    train_backdoor_watermarked,
    trigger_verification,
)


def test_trigger_graph_follows_the_official_recipe():
    trig = random_trigger_graph(20, 80, 4, edge_prob=0.2, ones_fraction=0.5, target_label=2, seed=1)
    assert (trig.x.sum(1) == 40).all() and set(trig.x.unique().tolist()) == {0.0, 1.0}
    assert (trig.y == 2).all()
    assert not (trig.edge_index[0] == trig.edge_index[1]).any()
    random_labels = random_trigger_graph(50, 80, 4, seed=1)
    assert len(random_labels.y.unique()) > 1
    with pytest.raises(ValueError):
        random_trigger_graph(5, 10, 3, target_label=3)


def test_backdoor_is_learned_and_clean_models_are_measured(
    tiny_graph, tiny_model_config, tiny_train_config, trained
):
    clean, _ = trained
    trig = random_trigger_graph(20, 80, 4, target_label=1, seed=0)
    bd = train_backdoor_watermarked(
        tiny_graph, trig, tiny_model_config, tiny_train_config, seed=0, device="cpu"
    ).model
    v = trigger_verification(bd, trig, 4)
    assert v.trigger_accuracy > 0.9 and v.owned(0.01)
    c = trigger_verification(clean, trig, 4)
    assert 0.0 <= c.trigger_accuracy <= 1.0 and 0.0 <= c.p_value <= 1.0
    with pytest.raises(ValueError, match="features"):
        train_backdoor_watermarked(tiny_graph, random_trigger_graph(5, 10, 4), tiny_model_config)
