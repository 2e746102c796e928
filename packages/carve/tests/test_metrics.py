import numpy as np
import pytest

from icml26.carve import AccuracyMatrix, routing_accuracy


def test_family_and_domain_accuracy_come_from_the_hierarchy():
    model_family = np.array([0, 0, 1, 2])
    model_domain = np.array([0, 0, 0, 1])
    gold = np.array([0, 0, 2, 3])
    pred = np.array([0, 1, 0, 2])  # exact, same family, same domain only, wrong domain
    acc = routing_accuracy(pred, gold, model_domain[gold], model_family, model_domain)
    assert acc == {"model": 0.25, "family": 0.5, "domain": 0.75}
    with pytest.raises(ValueError):
        routing_accuracy(pred, gold[:3], model_domain[gold][:3], model_family, model_domain)
    with pytest.raises(ValueError, match="indices"):
        routing_accuracy(
            np.array([9, 0, 0, 0]), gold, model_domain[gold], model_family, model_domain
        )


def test_average_accuracy_and_forgetting():
    acc = AccuracyMatrix(3)
    table = {(0, 0): 0.9, (1, 0): 0.6, (1, 1): 0.8, (2, 0): 0.5, (2, 1): 0.7, (2, 2): 0.85}
    for (t, k), v in table.items():
        acc.record(t, k, {"model": v, "family": v, "domain": v})
    assert acc.average("domain") == pytest.approx((0.5 + 0.7 + 0.85) / 3)
    assert acc.forgetting("domain") == pytest.approx(((0.9 - 0.5) + (0.8 - 0.7)) / 2)
    assert acc.forgetting("domain", after=1) == pytest.approx(0.3)
    assert acc.forgetting("model", after=0) == 0.0
    with pytest.raises(ValueError):
        acc.record(0, 1, {"model": 1, "family": 1, "domain": 1})
    with pytest.raises(ValueError, match="not recorded"):
        AccuracyMatrix(2).average("domain")
