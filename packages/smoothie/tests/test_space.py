"""Schedules, the three spaces, the distance kernel and the forward-process properties."""

import itertools
import math

import numpy as np
import pytest
import torch

from icml26.smoothie import (
    ArctanSchedule,
    EmbeddingSpace,
    SimplexSpace,
    SmoothieSpace,
    SynonymTask,
    TessSchedule,
    fit_sigmas,
    pairwise_sq_distances,
    synonym_task,
)
from icml26.smoothie.data import PAPER_HALF_INFORMATION_T, fit_coef_d, normalize_embeddings
from icml26.smoothie.evaluation import (
    half_information_time,
    input_information,
    latent_entropy,
    matched_time,
    synonym_mass_ratio,
    token_recovery,
)
from icml26.smoothie.space import check_embeddings


@pytest.fixture(scope="module")
def task():
    return synonym_task(SynonymTask(dim=32, n_train=8, n_test=64), np.random.default_rng(0))


@pytest.fixture(scope="module")
def smoothie(task):
    smin, smax = fit_sigmas(task.embeddings)
    return SmoothieSpace(ArctanSchedule(sigma_min=smin, sigma_max=smax))


def test_arctan_endpoints_and_monotone():
    s = ArctanSchedule()  # the official defaults
    t = torch.linspace(0, 1, 101)
    sb = s.sigma_bar(t)
    assert torch.all(sb[1:] >= sb[:-1])

    def formula(t):  # the official code's σ̄ at the clipped ends
        return (200 / 1.5 - 1) * 2 / math.pi * math.atan(math.sqrt(t / (1 - t)) / 9) + 1

    assert sb[0].item() == pytest.approx(formula(0.0005), rel=1e-5)
    assert sb[-1].item() == pytest.approx(formula(0.9995), rel=1e-5)
    assert 1.0 < sb[0].item() < 1.25 and sb[-1].item() > 100
    mu, std = s.params(t)
    assert mu.shape == (101, 1, 1)
    assert torch.all(mu[1:] <= mu[:-1]) and torch.all(std[1:] >= std[:-1])
    assert torch.allclose(mu.squeeze(), sb**-2)
    assert torch.allclose(std.squeeze() ** 2 + mu.squeeze() ** 2, torch.ones(101), atol=1e-6)


def test_tess_schedule_endpoints():
    mu, std = TessSchedule(5.0).params(torch.tensor([0.0, 1.0]))
    assert mu[0].item() == pytest.approx(1.0) and std[0].item() == pytest.approx(0.0, abs=1e-6)
    assert mu[1].item() == pytest.approx(0.0, abs=1e-3) and std[1].item() == pytest.approx(5.0)


def test_sigma_min_must_be_below_sigma_max():
    with pytest.raises(ValueError, match="sigma_min must be below sigma_max"):
        ArctanSchedule(sigma_min=3.0, sigma_max=2.0)
    with pytest.raises(ValueError, match="positive"):
        ArctanSchedule(sigma_min=-1.0)


def test_distance_kernel_matches_cdist():
    g = torch.Generator().manual_seed(0)
    x, e = torch.randn(3, 7, 16, generator=g), torch.randn(50, 16, generator=g)
    want = torch.cdist(x.reshape(-1, 16).double(), e.double()).pow(2).reshape(3, 7, 50)
    assert torch.allclose(pairwise_sq_distances(x.double(), e.double()), want, atol=1e-8)
    # float32, as sampled: within 1e-4 of cdist (relative), and the folded scale
    got = pairwise_sq_distances(x, e)
    assert got.shape == (3, 7, 50) and got.dtype == torch.float32
    assert float(((got.double() - want).abs() / want.clamp_min(1.0)).max()) < 1e-4
    scaled = pairwise_sq_distances(x.double(), e.double(), scale=-0.5 / 0.7**2)
    assert torch.allclose(scaled, -want / (2 * 0.7**2), atol=1e-8)
    assert torch.equal(x, x.clone())  # inputs untouched


def test_spaces_share_the_input_map(task, smoothie):
    e = task.embeddings
    x = torch.randn(2, 5, e.shape[0])
    assert torch.equal(smoothie.model_input(x, e), SimplexSpace().model_input(x, e))
    assert torch.allclose(smoothie.model_input(x, e), torch.softmax(x, -1) @ e)
    y = torch.randn(2, 5, e.shape[1])
    assert torch.equal(EmbeddingSpace().model_input(y, e), y)


def test_smoothie_clean_latent_is_negative_scaled_distance(task, smoothie):
    e, tok = task.embeddings, task.test_trg[:2]
    x0 = smoothie.clean(tok, e)
    assert x0.shape == (*tok.shape, e.shape[0])
    d = torch.cdist(e[tok].reshape(-1, e.shape[1]), e).pow(2).reshape(x0.shape)
    assert torch.allclose(x0, -d / (2 * smoothie.sigma_min**2), atol=1e-3)
    assert torch.equal(x0.argmax(-1), tok)


def test_simplex_relatent_goes_through_the_nearest_token(task):
    e = task.embeddings
    sx = SimplexSpace()
    tok = task.test_trg[:3]
    lat = sx.relatent(e[tok] + 0.01, e)
    assert torch.equal(lat, sx.clean(tok, e))
    assert set(lat.unique().tolist()) == {-5.0, 5.0}


def test_recovery_entropy_and_monotone(task, smoothie):
    e, tok = task.embeddings, task.test_trg
    g = torch.Generator().manual_seed(1)
    assert token_recovery(smoothie, e, tok, 0.0, g) > 0.99
    ents = [latent_entropy(smoothie, e, tok, t) for t in np.linspace(0, 1, 11)]
    assert all(b >= a - 1e-9 for a, b in itertools.pairwise(ents))
    assert ents[-1] >= 0.95 * math.log(e.shape[0])
    assert ents[0] < 0.1 * math.log(e.shape[0])


def test_synonym_smoothing_which_the_simplex_lacks(task, smoothie):
    e, tok, conc = task.embeddings, task.test_trg, task.concept_of
    g = torch.Generator().manual_seed(2)
    rec = token_recovery(smoothie, e, tok, 0.5, g)
    assert 0.05 < rec < 0.999
    ratio = synonym_mass_ratio(smoothie, e, tok, conc, 0.5, generator=g)
    assert ratio >= 5
    sx = SimplexSpace()
    t_sx = matched_time(sx, e, tok, rec)
    assert abs(token_recovery(sx, e, tok, t_sx, torch.Generator().manual_seed(0)) - rec) < 0.05
    assert 0.7 < synonym_mass_ratio(sx, e, tok, conc, t_sx, generator=g) < 1.5


def test_theorem_4_1_special_case_orthogonal_equal_norm():
    """Orthogonal, equal-norm embeddings: the Smoothie latent is affine in the simplex latent."""
    v, r = 20, 3.0
    e = r * torch.eye(v)
    tok = torch.arange(v).reshape(4, 5)
    sm = SmoothieSpace(ArctanSchedule(sigma_min=1.2, sigma_max=50.0))
    sx = SimplexSpace(TessSchedule(5.0))
    a_sm, a_sx = sm.clean(tok, e).reshape(-1), sx.clean(tok, e).reshape(-1)
    slope, icpt = np.polyfit(a_sx.numpy(), a_sm.numpy(), 1)
    assert np.allclose(slope * a_sx.numpy() + icpt, a_sm.numpy(), atol=1e-5)
    assert slope == pytest.approx(r**2 / (1.2**2) / (2 * 5.0), rel=1e-5)
    # and not affine for a table with structure
    e2 = torch.randn(v, 8, generator=torch.Generator().manual_seed(0))
    b_sm = sm.clean(tok, e2).reshape(-1).numpy()
    fit = np.polyval(np.polyfit(a_sx.numpy(), b_sm, 1), a_sx.numpy())
    assert not np.allclose(fit, b_sm, atol=1e-2)


def test_embedding_table_errors():
    with pytest.raises(ValueError, match="NaN"):
        check_embeddings(torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match="rows but the vocabulary has"):
        check_embeddings(torch.zeros(3, 2), vocab_size=4)
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        check_embeddings(np.zeros((3, 2)))


def test_input_information_endpoints(task, smoothie):
    emb, groups = task.embeddings, task.concept_of
    assert input_information(smoothie, emb, 0.0, groups) == 1.0
    # at t = 1 the input shows nothing: chance is 1/60 of the concepts
    assert input_information(smoothie, emb, 1.0, groups) < 3 / 60
    for space in (EmbeddingSpace(), SimplexSpace()):
        assert input_information(space, emb, 0.0, groups) == 1.0
        assert input_information(space, emb, 1.0, groups) < 3 / 60
    with pytest.raises(ValueError, match="one entry per embedding row"):
        input_information(smoothie, emb, 0.5, groups[:-1])


def test_fit_coef_d_puts_half_information_at_target(task):
    emb, groups = task.embeddings, task.concept_of
    d, smin, smax = fit_coef_d(emb, groups)
    space = SmoothieSpace(ArctanSchedule(d, 1.0, smin, smax))
    assert half_information_time(space, emb, groups) == pytest.approx(0.75, abs=0.01)
    assert (smin, smax) == pytest.approx(fit_sigmas(emb, coef_d=d), rel=1e-9)
    assert 3.0 < d < 7.0  # the paper's d = 9 keeps this table's concepts far longer
    paper_d = SmoothieSpace(ArctanSchedule(9.0, 1.0, *fit_sigmas(emb)))
    assert half_information_time(paper_d, emb, groups) > 0.85
    # the forward-process properties still hold with the re-fitted d
    g = torch.Generator().manual_seed(0)
    assert token_recovery(space, emb, task.test_trg, 0.0, g) > 0.99
    ratio = synonym_mass_ratio(space, emb, task.test_trg, task.concept_of, 0.5, generator=g)
    assert ratio >= 5
    later = fit_coef_d(emb, groups, target=0.85)[0]
    assert later > d  # a later half-information time needs a larger d
    with pytest.raises(ValueError, match="target must lie in"):
        fit_coef_d(emb, groups, target=1.5)


@pytest.mark.slow
def test_paper_half_information_time_on_a_bert_sized_table():
    """The reference: the paper's defaults on V = 28,996 random-like normalised 768-d rows."""
    rng = np.random.default_rng(10)
    table = normalize_embeddings(
        torch.tensor(rng.standard_normal((28996, 768)), dtype=torch.float32)
    )
    t_half = half_information_time(SmoothieSpace(ArctanSchedule()), table, draws=1, max_rows=256)
    assert t_half == pytest.approx(PAPER_HALF_INFORMATION_T, abs=0.02)
