"""Error-bar helpers: the bars drawn are the per-seed spread, and captions reach report.md."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.shared import Stat, errorbar_bars, errorbar_lines, new_figure, save_figure, spread


def test_spread_sd_and_iqr():
    assert spread(Stat.of([1.0, 3.0])) == pytest.approx((2.0, np.sqrt(2), np.sqrt(2)))
    assert spread([5.0]) == (5.0, 0.0, 0.0)
    centre, lo, hi = spread([1.0, 2.0, 3.0, 4.0, 100.0], kind="iqr")
    assert (centre, centre - lo, centre + hi) == (3.0, 2.0, 4.0)


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")]])
def test_spread_refuses_empty_or_nan(bad):
    with pytest.raises(ValueError, match="finite"):
        spread(bad)


def test_spread_refuses_unknown_kind():
    with pytest.raises(ValueError, match="sd"):
        spread([1.0], kind="sem")


def test_errorbar_lines_draws_the_seed_spread():
    _fig, ax = new_figure()
    container = errorbar_lines(ax, [1, 2], [Stat.of([0.0, 2.0]), Stat.of([5.0, 5.0])], label="m")
    line, _caps, (bars,) = container
    assert list(line.get_ydata()) == [1.0, 5.0]
    segments = bars.get_segments()
    assert segments[0][:, 1].tolist() == pytest.approx([1 - np.sqrt(2), 1 + np.sqrt(2)])
    assert segments[1][:, 1].tolist() == [5.0, 5.0]


def test_errorbar_lengths_must_match():
    _fig, ax = new_figure()
    with pytest.raises(ValueError, match="points"):
        errorbar_lines(ax, [1, 2, 3], [Stat.of(1.0)])
    with pytest.raises(ValueError, match="labels"):
        errorbar_bars(ax, ["a"], [Stat.of(1.0), Stat.of(2.0)])


def test_errorbar_bars_and_caption(tmp_path):
    fig, ax = new_figure()
    bars = errorbar_bars(ax, ["a", "b"], [Stat.of([1.0, 3.0]), Stat.of([2.0])])
    assert [b.get_height() for b in bars] == [2.0, 2.0]
    path = save_figure(fig, tmp_path / "f", caption="Two bars.")
    assert path.name == "f.png" and path.caption == "Two bars." and path.stat().st_size > 0
