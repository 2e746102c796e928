"""Every run has its own random stream: alone, in any batch, on any device, the same run."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from icml26.gausscbo import GaussCBO, KLDivergence, multi_swarm_cbo, paper_target, run_keys

FIELDS = ("mean", "cov", "energy", "variance", "particles", "sigma0", "distance")


@pytest.fixture(scope="module")
def setup():
    kl = KLDivergence(paper_target("A"), d=2, pad_to=4)
    cbo = GaussCBO(kl, 2, n_particles=8)
    starts = np.random.default_rng(0).uniform(-5, 5, (7, 2))
    return kl, cbo, starts


def test_a_run_alone_equals_the_run_in_any_batch(setup):
    _, cbo, starts = setup
    key = jax.random.key(0)
    full = cbo.run(key, starts, np.eye(2), 40)
    keys = run_keys(key, 7)
    alone = cbo.run(keys[4:5], starts[4:5], np.eye(2), 40)
    middle = cbo.run(keys[1:4], starts[1:4], np.eye(2), 40)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(alone, f)[0], getattr(full, f)[4], err_msg=f)
        np.testing.assert_array_equal(getattr(middle, f), getattr(full, f)[1:4], err_msg=f)
    # the runs do differ from each other (their streams are not shared)
    assert not np.array_equal(full.particles[0], full.particles[1])


@pytest.mark.slow
def test_batch_of_keys_and_bad_keys(setup):
    _, cbo, starts = setup
    keys = run_keys(jax.random.key(5), 3)
    shared = cbo.run(keys, starts[0], np.eye(2), 5)  # a key per run, one shared start
    assert shared.mean.shape == (3, 6, 2)
    assert not np.array_equal(shared.particles[0], shared.particles[1])
    with pytest.raises(ValueError, match="2 keys for 3 runs"):
        cbo.run(keys[:2], starts[:3], np.eye(2), 5)
    with pytest.raises(ValueError, match="devices must lie"):
        cbo.run(jax.random.key(0), starts, np.eye(2), 5, devices=0)
    with pytest.raises(TypeError, match="devices"):
        cbo.run(jax.random.key(0), starts, np.eye(2), 5, devices="cpu")


@pytest.mark.slow
def test_multi_swarm_run_alone_equals_the_run_in_a_batch(setup):
    kl, _, _ = setup
    starts = np.random.default_rng(1).uniform(-5, 5, (3, 2, 2))
    full = multi_swarm_cbo(kl, jax.random.key(2), starts, n_swarms=2, n_particles=4, steps=10)
    head = multi_swarm_cbo(kl, jax.random.key(2), starts[:1], n_swarms=2, n_particles=4,
                           steps=10)  # fmt: skip
    np.testing.assert_array_equal(head.means[0], full.means[0])
    np.testing.assert_array_equal(head.energy[0], full.energy[0])


# Runs in a fresh interpreter with two host devices; prints one JSON line.
TWO_DEVICES = textwrap.dedent(
    """
    import json
    import jax, numpy as np
    from icml26.gausscbo import GaussCBO, KLDivergence, multi_swarm_cbo, paper_target

    kl = KLDivergence(paper_target("A"), d=2, pad_to=4)
    cbo = GaussCBO(kl, 2, n_particles=6)
    starts = np.random.default_rng(0).uniform(-5, 5, (5, 2))  # odd: padded to 6
    key = jax.random.key(3)
    out = {"devices": jax.device_count()}
    two = cbo.run(key, starts, np.eye(2), 30, record_every=3)
    one = cbo.run(key, starts, np.eye(2), 30, record_every=3, devices=1)
    fields = ("mean", "cov", "energy", "variance", "particles", "sigma0", "distance")
    out["cbo"] = {f: float(np.max(np.abs(getattr(two, f) - getattr(one, f)))) for f in fields}
    out["shape"] = list(two.particles.shape)
    ms = np.random.default_rng(1).uniform(-5, 5, (3, 2, 2))
    a = multi_swarm_cbo(kl, key, ms, n_swarms=2, n_particles=4, steps=10)
    b = multi_swarm_cbo(kl, key, ms, n_swarms=2, n_particles=4, steps=10, devices=1)
    out["swarm"] = {f: float(np.max(np.abs(getattr(a, f) - getattr(b, f))))
                    for f in ("means", "covs", "energy")}
    print(json.dumps(out))
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_two_host_devices_give_the_one_device_results():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "JAX_PLATFORMS": "cpu"}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", TWO_DEVICES], env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(out)
    assert out["devices"] == 2
    assert out["shape"] == [5, 6, 5]  # the padding run is dropped
    for group in ("cbo", "swarm"):
        for field, diff in out[group].items():
            assert diff == 0.0, (group, field, diff)
