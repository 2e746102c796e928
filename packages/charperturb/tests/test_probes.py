import numpy as np
import pytest

from icml26.charperturb.probes import (
    attention_noise_mass,
    edit_distance,
    linear_cka,
    restoration_error,
    visible_attention_kl,
    visible_token_index,
)


def _causal_uniform(n):
    a = np.tril(np.ones((n, n)))
    return a / a.sum(1, keepdims=True)


def test_noise_mass_of_uniform_attention():
    a = _causal_uniform(4)
    noise = np.array([False, True, False, True])
    # visible rows 0 and 2: row 0 sees itself only (0 on noise), row 2 sees 1 of 3 noise
    assert attention_noise_mass(a, noise) == pytest.approx((0 + 1 / 3) / 2)
    stacked = np.stack([a, a])
    assert attention_noise_mass(stacked, noise).shape == (2,)


def test_kl_is_zero_when_noise_is_ignored():
    clean = _causal_uniform(3)
    noisy = np.zeros((5, 5))
    visible = [0, 2, 4]
    for i, r in enumerate(visible):  # noisy rows put the clean pattern on visible keys
        noisy[r, visible] = clean[i]
    noisy[[1, 3], 0] = 1.0
    assert visible_attention_kl(clean, noisy, visible) == pytest.approx(0.0, abs=1e-9)
    shifted = noisy.copy()
    shifted[4, [0, 2, 4]] = [0.8, 0.1, 0.1]
    assert visible_attention_kl(clean, shifted, visible) > 0.05


def test_linear_cka_invariances_and_range():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 8))
    q, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    assert linear_cka(x, 3.0 * x @ q + 1.0) == pytest.approx(1.0)
    assert linear_cka(x, rng.normal(size=(50, 8))) < 0.5


def test_visible_token_index():
    offsets = [(0, 2), (2, 3), (3, 6)]
    assert visible_token_index(offsets, [0, 1, 2, 4]).tolist() == [0, 0, 1, 2]
    with pytest.raises(ValueError):
        visible_token_index(offsets, [7])


def test_edit_distance():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance("", "abc") == 3
    assert restoration_error("abc", "abc") == 0.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: attention_noise_mass(np.ones((2, 3)), [True, False]), "shape"),
        (lambda: attention_noise_mass(np.eye(2), [True, True]), "every position"),
        (lambda: attention_noise_mass(np.full((2, 2), np.nan), [True, False]), "non-finite"),
        (lambda: visible_attention_kl(np.eye(2), np.eye(3), [0]), "one noisy position"),
        (lambda: visible_attention_kl(np.eye(2), np.eye(3), [2, 1]), "increasing"),
        (lambda: linear_cka(np.ones((5, 2)), np.ones((5, 2))), "constant"),
        (lambda: linear_cka(np.ones((5, 2)), np.ones((4, 2))), "arrays"),
    ],
)
def test_bad_probe_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
