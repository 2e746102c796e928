import numpy as np
import pytest

from icml26.mspca import load_matrix, shifted_digits


def test_shifted_digits(rng):
    data = shifted_digits(rng, fraction=0.1, strength=2.0)
    n, d = data.x.shape
    assert n == 1797 and d < 64  # constant pixels dropped
    assert np.allclose(data.x_clean.mean(axis=0), 0.0, atol=1e-12)
    assert abs(data.mask.mean() - 0.1) < 0.03
    assert np.allclose(data.x[~data.mask], data.x_clean[~data.mask])
    assert np.allclose(data.x[data.mask] - data.x_clean[data.mask], data.shift)
    with pytest.raises(ValueError, match="fraction"):
        shifted_digits(rng, fraction=0.0)


def test_load_matrix_formats(tmp_path, rng):
    x = rng.normal(size=(6, 3))
    np.save(tmp_path / "a.npy", x)
    np.savetxt(tmp_path / "a.csv", x, delimiter=",")
    np.savetxt(tmp_path / "a.tsv", x.T, delimiter="\t")
    assert np.array_equal(load_matrix(tmp_path / "a.npy"), x)
    assert np.allclose(load_matrix(tmp_path / "a.csv"), x)
    assert np.allclose(load_matrix(tmp_path / "a.tsv", samples_as="columns"), x)


def test_load_matrix_refuses_pickles_headers_and_nan(tmp_path):
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="not a plain numeric"):
        load_matrix(tmp_path / "obj.npy")
    (tmp_path / "h.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="no header"):
        load_matrix(tmp_path / "h.csv")
    (tmp_path / "n.csv").write_text("1,nan\n1,2\n")
    with pytest.raises(ValueError, match="NaN"):
        load_matrix(tmp_path / "n.csv")
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    with pytest.raises(ValueError, match="unsupported"):
        load_matrix(tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="no such file"):
        load_matrix(tmp_path / "missing.npy")
