import math

import numpy as np
import pytest
import torch

from icml26.dpfeature import (
    PatchDataset,
    load_cifar10_binary,
    make_multipatch,
    mu_norm_for_snr,
    snr,
    write_cifar10_binary,
)
from icml26.dpfeature.data import check_labels, digits_patches


@pytest.mark.parametrize("patches", [2, 5])
def test_noise_patches_are_orthogonal_to_mu_and_signal_is_y_mu(patches):
    g = torch.Generator().manual_seed(0)
    direction = torch.randn(300, generator=g)
    data = make_multipatch(
        30, 300, 7.0, sigma_p=2.0, patches=patches, generator=g, mu_direction=direction
    )
    assert data.x.shape == (30, patches, 300)
    assert float(data.mu.norm()) == pytest.approx(7.0, rel=1e-5)
    assert torch.allclose(data.noise @ data.mu, torch.zeros(30, patches - 1), atol=1e-3)
    rows = torch.arange(30)
    assert torch.allclose(data.x[rows, data.signal_patch], data.y[:, None] * data.mu)
    assert int((data.y == 1).sum()) == 15  # balanced
    # noise scale: E‖ξ‖² = σ_p² (d − 1)
    assert float(data.noise.pow(2).sum(-1).mean()) == pytest.approx(4 * 299, rel=0.05)
    assert data.snr == pytest.approx(7.0 / (2.0 * math.sqrt(300)), rel=1e-5)


def test_snr_round_trip_and_bad_values():
    assert snr(mu_norm_for_snr(0.3, 1.5, 2000), 1.5, 2000) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="sigma_p"):
        make_multipatch(10, 20, 1.0, sigma_p=0.0)
    with pytest.raises(ValueError, match="mu_norm"):
        make_multipatch(10, 20, -1.0)
    with pytest.raises(ValueError, match=r"\+1 or -1"):
        check_labels(torch.tensor([1.0, 0.0, -1.0]))
    with pytest.raises(ValueError, match=r"\+1 or -1"):
        PatchDataset(torch.zeros(3, 2, 4), torch.tensor([1, 2, -1]))


def test_cifar10_binary_fixture_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(6, 3, 32, 32), dtype=np.uint8)
    labels = np.array([3, 5, 3, 1, 5, 9])
    path = write_cifar10_binary(tmp_path / "data_batch_1.bin", images, labels)
    assert path.stat().st_size == 6 * 3073  # the official record size
    x, y = load_cifar10_binary(path, patch=16)
    assert x.shape == (6, 4, 3 * 16 * 16) and y.tolist() == labels.tolist()
    # patch 0 is the top-left 16 × 16 block, channels first
    assert torch.allclose(
        x[0, 0], torch.as_tensor(images[0, :, :16, :16] / 255.0, dtype=torch.float32).flatten()
    )
    x2, y2 = load_cifar10_binary(path, classes=(3, 5), patch=32)
    assert x2.shape == (4, 1, 3072) and y2.tolist() == [1.0, -1.0, 1.0, -1.0]
    (tmp_path / "bad.bin").write_bytes(b"\x00" * 100)
    with pytest.raises(ValueError, match="not a CIFAR-10 binary"):
        load_cifar10_binary(tmp_path / "bad.bin")


def test_digits_analogue_raw_and_dataset():
    x, y = digits_patches(2.0, np.random.default_rng(0))
    assert x.shape[1:] == (2, 64) and set(y.tolist()) == {-1.0, 1.0}
    ds = PatchDataset(x, y)
    xi, _ = ds[0]
    assert xi.shape == (2, 64) and len(ds) == x.shape[0]
    # the noise patch has the requested scale, the image patch unit mean square
    assert float(x[:, 1].pow(2).mean()) == pytest.approx(4.0, rel=0.05)
    assert float(x[:, 0].pow(2).sum(1).mean() / 64) == pytest.approx(1.0, rel=1e-4)


def test_digits_scattering_features():
    pytest.importorskip("kymatio")
    x, _ = digits_patches(1.0, np.random.default_rng(0), features="scattering")
    assert x.shape[1] == 2 and x.shape[2] == 9 * 4 * 4  # J = 1, L = 8: 9 channels of 4 × 4
    assert torch.isfinite(x).all()
