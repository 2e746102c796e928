"""Trials sharded over two host devices give the one-device results exactly."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

jax = pytest.importorskip("jax")

from icml26.shared.sharding import local_devices, pad_trials, padded_count, trial_mesh  # noqa: E402

TWO_DEVICES = textwrap.dedent(
    """
    import json
    import jax, jax.numpy as jnp, numpy as np
    from icml26.shared.sharding import map_trials, pad_trials, padded_count, trial_mesh

    @jax.jit
    def run(x, key):  # a vmapped per-trial program with its own random stream
        def one(xi, ki):
            return jnp.linalg.eigvalsh(xi @ xi.T) + jax.random.normal(ki, (xi.shape[0],))
        return jax.vmap(one)(x, key)

    trials = 5  # odd: padded to 6 over two devices
    x = np.random.default_rng(0).normal(size=(trials, 6, 4))
    keys = jax.random.split(jax.random.key(1), trials)
    mesh = trial_mesh()
    total = padded_count(trials, mesh)
    two = map_trials(run, mesh, (pad_trials(jnp.asarray(x), total), pad_trials(keys, total)))
    one = run(jnp.asarray(x), keys)
    print(json.dumps({
        "devices": jax.device_count(), "total": total,
        "spec": str(two.sharding.spec), "on": sorted(d.id for d in two.sharding.device_set),
        "diff": float(np.max(np.abs(np.asarray(two)[:trials] - np.asarray(one)))),
    }))
    """
)


@pytest.mark.distributed
def test_two_host_devices_match_one_device():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "JAX_PLATFORMS": "cpu"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", TWO_DEVICES], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["devices"] == 2 and out["total"] == 6 and out["on"] == [0, 1]
    assert "trials" in out["spec"]
    assert out["diff"] == 0.0


def test_one_device_means_no_mesh_and_no_padding():
    assert trial_mesh(1) is None
    assert padded_count(5, None) == 5
    assert len(local_devices(1)) == 1


def test_pad_repeats_the_last_trial():
    x = jax.numpy.arange(6.0).reshape(3, 2)
    padded = pad_trials(x, 4)
    assert padded.shape == (4, 2) and padded[3].tolist() == [4.0, 5.0]


def test_bad_devices_are_rejected():
    with pytest.raises(ValueError, match="devices must lie"):
        local_devices(0)
    with pytest.raises(TypeError):
        local_devices("cpu")
