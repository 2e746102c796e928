import numpy as np
import pytest
import torch

from icml26.carve import BM25Retrieval, CardRetrieval, routing_accuracy, ties_merge
from icml26.carve.metrics import NO_ROUTE


def test_ties_merge_trims_elects_and_averages():
    base = {"w": torch.zeros(4)}
    a = {"w": torch.tensor([1.0, -2.0, 0.1, 3.0])}
    b = {"w": torch.tensor([3.0, 1.0, -0.1, -1.0])}
    merged = ties_merge(base, [a, b], density=1.0)["w"]
    # sign of the sum wins; only agreeing deltas are averaged
    torch.testing.assert_close(merged, torch.tensor([2.0, -2.0, 0.0, 3.0]))
    trimmed = ties_merge(base, [a, b], density=0.5)["w"]  # keep the top-2 of each
    torch.testing.assert_close(trimmed, torch.tensor([3.0, -2.0, 0.0, 3.0]))
    with pytest.raises(ValueError):
        ties_merge(base, [a], density=0.0)


def test_zero_shot_retrievers_route_by_card(tiny_hub, tiny_features):
    enc, _, _ = tiny_features
    cards = ["detector for cars in street photos", "speech synthesis voice reader"]
    dense = CardRetrieval(enc.encode(cards))
    assert dense.predict(enc.encode(["cars in photos", "a voice reader"])).tolist() == [0, 1]
    bm25 = BM25Retrieval(cards)
    assert bm25.predict(["street photos with cars", "speech voice"]).tolist() == [0, 1]
    # no query term in any card of the first model: an explicit "no route", not model 0
    assert bm25.predict(["speech voice", "cars"], n_models=1).tolist() == [NO_ROUTE, 0]
    assert bm25.predict(["zebra giraffe"]).tolist() == [NO_ROUTE]
    assert bm25.predict([]).shape == (0,)
    with pytest.raises(TypeError, match="single string"):
        bm25.predict("cars")
    with pytest.raises(ValueError):
        CardRetrieval(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="NaN"):
        dense.predict(np.full((1, enc.dim), np.nan, dtype=np.float32))
    with pytest.raises(ValueError, match="all-zero"):
        dense.predict(np.zeros((1, enc.dim), dtype=np.float32))


def test_no_route_is_wrong_at_every_level(tiny_hub):
    split = tiny_hub.experiences[0].test
    gold = split.model[:4]
    pred = gold.copy()
    pred[:2] = NO_ROUTE
    acc = routing_accuracy(pred, gold, split.domain[:4], tiny_hub.model_family,
                           tiny_hub.model_domain)  # fmt: skip
    assert acc == {"model": 0.5, "family": 0.5, "domain": 0.5}
