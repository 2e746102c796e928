"""Key generation, the JSON round trip, and refusing tampered or mismatched keys."""

from __future__ import annotations

import json

import pytest
import torch

from icml26.gnn_watermark import KeyMismatchError, WatermarkKey, generate_key, sbm_bow


def test_key_follows_the_official_construction(tiny_graph, tiny_key):
    nodes = tiny_key.nodes
    assert nodes.shape == (4, 16)
    assert len(set(nodes.reshape(-1).tolist())) == 64  # disjoint
    assert tiny_graph.train_mask[nodes.reshape(-1)].all()
    w = tiny_key.w
    assert (w != 0).sum() == 12 and (w == 1).sum() == 6 and (w == -1).sum() == 6
    # positions are the features most often nonzero among the subgraph nodes
    counts = (tiny_graph.x[nodes.reshape(-1)] != 0).sum(0)
    assert counts[w != 0].min() >= counts[w == 0].max()


def test_json_round_trip(tmp_path, tiny_graph, tiny_key):
    path = tiny_key.save(tmp_path / "secret" / "key.json")
    loaded = WatermarkKey.load(path)
    assert loaded == tiny_key
    loaded.check(tiny_graph)
    assert (
        generate_key(tiny_graph, num_subgraphs=4, subgraph_size=16, watermark_size=12, seed=5)
        == tiny_key
    )


def test_tampered_key_is_refused(tmp_path, tiny_key):
    doc = json.loads(tiny_key.to_json())
    doc["watermark"][int(tiny_key.positions[0])] *= -1
    path = tmp_path / "key.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="modified"):
        WatermarkKey.load(path)
    with pytest.raises(ValueError, match="not a watermark key"):
        WatermarkKey.from_json('{"format": "something else"}')
    with pytest.raises(ValueError, match="invalid JSON"):
        WatermarkKey.from_json("{nope")


def test_key_for_another_graph_is_refused(tiny_graph, tiny_key):
    other_dim = sbm_bow(400, 4, 90, p_in=0.04, topic_features=12, common_features=10, seed=3)
    with pytest.raises(KeyMismatchError, match="80 node features, the graph has 90"):
        tiny_key.check(other_dim)
    changed = tiny_graph.clone()
    changed.x = changed.x.clone()
    changed.x[tiny_key.nodes[0, 0]] = 1 - changed.x[tiny_key.nodes[0, 0]]
    with pytest.raises(KeyMismatchError, match="differ"):
        tiny_key.check(changed)


def test_bad_key_requests_raise(tiny_graph):
    with pytest.raises(ValueError, match="more than"):
        generate_key(tiny_graph, num_subgraphs=20, subgraph_size=50)
    with pytest.raises(ValueError, match=">= 3"):
        generate_key(tiny_graph, subgraph_size=2)
    featureless = tiny_graph.clone()
    featureless.x = None
    with pytest.raises(ValueError, match="no node features"):
        generate_key(featureless)
    with pytest.raises(ValueError, match="disjoint"):
        WatermarkKey(((0, 1, 2), (2, 3, 4)), (1, -1), 0, 10, "")
    assert torch.equal(
        torch.tensor([1.0, -1.0]), WatermarkKey(((0, 1, 2), (3, 4, 5)), (1, -1), 0, 10, "").w
    )
