import numpy as np
import pytest
import torch

from icml26.carve import BM25Retrieval, CardRetrieval, ties_merge


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
    assert bm25.predict(["speech voice"], n_models=1).tolist() == [0]
    with pytest.raises(ValueError):
        CardRetrieval(np.zeros((0, 3)))
