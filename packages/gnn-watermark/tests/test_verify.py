"""The ownership test: match counts, nulls, and verdicts on watermarked and unrelated models."""

from __future__ import annotations

import math

import pytest
import torch

from icml26.gnn_watermark import (
    NullDistribution,
    analytic_null,
    build_model,
    clean_model_null,
    count_matches,
    leave_one_out_p,
    recommended_watermark_size,
    train_clean,
    verify_ownership,
)


def test_count_matches_with_and_without_zeros():
    signs = torch.tensor([[1, -1, 0, 1, 0], [1, -1, 0, -1, 1], [1, -1, 0, 1, 0]])
    assert int(count_matches(signs)) == 2  # features 0 and 1
    assert int(count_matches(signs, ignore_zeros=False)) == 3  # + the all-zero feature 2
    batched = torch.stack([signs, -signs])
    assert count_matches(batched).tolist() == [2, 2]


def test_analytic_null_and_size_rule():
    mu, sigma = analytic_null(300, 5)
    assert mu == pytest.approx(18.75) and sigma == pytest.approx(math.sqrt(300 / 16 * 15 / 16))
    # official find_min_n_uncertain at confidence 0.999999: t = 39, LB = 0 -> ceil(39·300/261)
    assert recommended_watermark_size(300, 5) == 45


def test_clean_null_uses_student_t_and_a_poisson_floor():
    null = NullDistribution((6.0, 6.0, 6.0, 6.0), "clean")
    assert null.sd == pytest.approx(math.sqrt(6.0))
    assert null.p(6.0) == pytest.approx(0.5)
    # t with 3 df and the prediction factor √(1 + 1/4) are far wider than the normal
    assert 0.03 < null.p(12.0) < 0.1  # the normal tail at z = 2.45 would be 0.007
    assert leave_one_out_p([5.0, 6.0, 7.0, 30.0])[3] < leave_one_out_p([5.0, 6.0, 7.0, 30.0])[0]
    with pytest.raises(ValueError):
        NullDistribution((1.0,), "clean")


def test_watermarked_model_verifies_and_clean_model_does_not(tiny_graph, tiny_key, trained):
    clean, wm = trained
    others = [
        train_clean(tiny_graph, wm.model.config, None, seed=s, device="cpu").model for s in (11, 12)
    ]
    null = clean_model_null([clean, *others], tiny_graph, tiny_key)
    v_wm = verify_ownership(
        wm.model, tiny_graph, tiny_key, clean_null=null, num_null_subgraphs=30, num_null_tuples=100
    )
    v_clean = verify_ownership(
        clean, tiny_graph, tiny_key, num_null_subgraphs=30, num_null_tuples=100
    )
    assert v_wm.alignment > 0.8 and v_wm.mi > v_clean.mi + 5
    assert v_wm.z_subgraph > 4 and v_wm.p_subgraph < 1e-4
    # three clean models: the Student-t null (2 df) is wide, so p stays above 0.01
    assert v_wm.z_clean > 4 and v_wm.p_clean < 0.05 and v_wm.owned(0.05)
    assert v_clean.p_subgraph > 0.01 and v_clean.alignment < 0.75
    # the official "with zeros" count is never below the honest count
    assert v_clean.mi_with_zeros >= v_clean.mi and v_wm.informative_features <= 80


def test_unrelated_random_model_is_not_significant(tiny_graph, tiny_key):
    random_model = build_model(80, 4, seed=123, device="cpu")
    v = verify_ownership(
        random_model, tiny_graph, tiny_key, num_null_subgraphs=30, num_null_tuples=100
    )
    assert v.p_subgraph > 0.01 and not v.owned(0.01)


def test_verification_rejects_bad_input(tiny_graph, tiny_key, trained):
    _, wm = trained
    with pytest.raises(TypeError, match="WatermarkKey"):
        verify_ownership(wm.model, tiny_graph, {"subgraphs": []})
    featureless = tiny_graph.clone()
    featureless.x = None
    with pytest.raises(ValueError, match="no node features"):
        verify_ownership(wm.model, featureless, tiny_key)


def test_dense_features_warn_and_sparse_ones_do_not(tiny_graph, tiny_key, trained):
    import warnings

    from icml26.gnn_watermark import DenseFeaturesWarning, ModelConfig, generate_key, pyg_generator

    dense = pyg_generator("sbm", block_sizes=[60, 60], num_channels=12)
    with pytest.warns(DenseFeaturesWarning, match="nonzero"):
        key = generate_key(dense, num_subgraphs=2, subgraph_size=15, watermark_size=4)
    model = build_model(12, 2, ModelConfig(hidden=8), device="cpu")
    with pytest.warns(DenseFeaturesWarning):
        v = verify_ownership(model, dense, key, subgraph_null=False)
    assert 0 <= v.mi_watermark <= 4
    _, wm = trained
    with warnings.catch_warnings():
        warnings.simplefilter("error", DenseFeaturesWarning)
        v = verify_ownership(wm.model, tiny_graph, tiny_key, subgraph_null=False)
    # agreement with w on every subgraph implies agreement among the subgraphs
    assert v.mi_watermark <= v.mi and v.mi_watermark > 0
