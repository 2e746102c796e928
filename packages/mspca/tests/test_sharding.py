"""Batched trials sharded over a Mesh of devices give the one-device results."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from icml26.mspca.sharding import local_devices, pad_trials, padded_count, trial_mesh

# Runs in a fresh interpreter with two host devices; prints one JSON line.
TWO_DEVICES = textwrap.dedent(
    """
    import json
    import jax, numpy as np
    import icml26.mspca
    from icml26.mspca import knockoff_pca_batch, paper_shift_norm, paper_spike, simulate_batch
    from icml26.mspca.knockoff import _estimate_batch
    from icml26.mspca.sharding import map_trials, pad_trials, trial_mesh

    d, n, trials = 90, 100, 5  # odd: padded to 6 over two devices
    c = d / n
    sample = simulate_batch(
        jax.random.split(jax.random.key(0), trials), d, n, np.array([paper_spike(c)]),
        np.array([paper_shift_norm(c, 0.1)]), np.array([0.1]),
    )
    xs = 3.0 * np.asarray(sample.x_tilde)
    keys = jax.random.split(jax.random.key(1), trials)
    out = {"devices": jax.device_count()}
    mesh = trial_mesh()
    sig, _ = map_trials(_estimate_batch, mesh, (pad_trials(xs, 6),))
    out["spec"] = sig.sharding.spec == jax.sharding.PartitionSpec("trials")
    out["on"] = sorted(d.id for d in sig.sharding.device_set)
    for variant in ("eigenvalue", "official_sv"):
        two = knockoff_pca_batch(xs, keys, variant=variant, n_knockoffs=3)
        one = knockoff_pca_batch(xs, keys, variant=variant, n_knockoffs=3, devices=1)
        out[variant] = {
            f: float(np.nanmax(np.abs(np.asarray(getattr(two, f), float)
                                      - np.asarray(getattr(one, f), float))))
            for f in two._fields
        }
        out[variant + "_shape"] = list(two.components.shape)
        same = np.array_equal(np.asarray(two.stable), np.asarray(one.stable))
        out[variant + "_stable"] = bool(same)
    print(json.dumps(out))
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_two_host_devices_give_the_one_device_results():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    proc = subprocess.run(
        [sys.executable, "-c", TWO_DEVICES], env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(out)
    assert out["devices"] == 2
    assert out["spec"] and out["on"] == [0, 1]  # split over the trial axis of the mesh
    for variant in ("eigenvalue", "official_sv"):
        assert out[variant + "_shape"] == [5, 90, 10]  # the padding is dropped
        assert out[variant + "_stable"]
        for field, diff in out[variant].items():
            assert diff <= 1e-12, (variant, field, diff)


def test_one_device_means_no_mesh_and_no_padding():
    assert trial_mesh(1) is None
    assert padded_count(5, None) == 5
    assert len(local_devices()) == jax.local_device_count()


def test_padding_repeats_the_last_trial():
    x = np.arange(6.0).reshape(3, 2)
    padded = np.asarray(pad_trials(x, 4))
    assert padded.shape == (4, 2)
    np.testing.assert_array_equal(padded[3], x[2])
    np.testing.assert_array_equal(np.asarray(pad_trials(x, 3)), x)


@pytest.mark.parametrize("bad", [0, -1, 10_000, "all", [1, 2], []])
def test_bad_devices_are_refused(bad):
    with pytest.raises((ValueError, TypeError)):
        local_devices(bad)
