import math

import pytest

from icml26.shared import Plateau


def test_stops_on_plateau_after_patience_windows():
    rule = Plateau(window=10, patience=2, min_delta=0.05, cap=10_000)
    losses = [1.0 / (1 + i) for i in range(50)] + [0.02] * 200
    stopped_at = next(i for i, v in enumerate(losses) if rule.update(v))
    assert rule.reason == "plateau"
    # the loss is flat from step 50; two stale windows of ten end it within 30 more steps
    assert 50 < stopped_at + 1 <= 80
    assert rule.summary()["steps"] == stopped_at + 1


def test_cap_ends_a_loss_that_keeps_falling():
    rule = Plateau(window=5, patience=2, min_delta=0.0, cap=35)
    for i in range(100):
        if rule.update(1.0 / (1 + i)):
            break
    assert rule.reason == "cap" and rule.steps == 35


def test_negative_losses_use_the_best_magnitude():
    rule = Plateau(window=1, patience=2, min_delta=0.1, cap=100)
    # -10 → -10.5 is a 5 % improvement, under the 10 % bar: stale twice, then stop
    assert [rule.update(v) for v in (-10.0, -10.5, -10.9)] == [False, False, True]
    fresh = Plateau(window=1, patience=1, min_delta=0.1, cap=100)
    assert [fresh.update(v) for v in (-10.0, -12.0, -12.1)] == [False, False, True]


def test_non_finite_loss_and_bad_settings_are_clear_errors():
    with pytest.raises(FloatingPointError, match="step 1"):
        rule = Plateau(window=1, patience=1, min_delta=0.1, cap=5)
        rule.update(1.0)
        rule.update(math.nan)
    with pytest.raises(ValueError, match="min_delta"):
        Plateau(window=1, patience=1, min_delta=1.5, cap=5)
    with pytest.raises(ValueError, match="patience"):
        Plateau(window=1, patience=0, min_delta=0.1, cap=5)
    with pytest.raises(ValueError, match="cap"):
        Plateau(window=1, patience=1, min_delta=0.1, cap=True)
