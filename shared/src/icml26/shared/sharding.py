"""Batched trials spread over all local devices: a one-axis ``Mesh`` over the trial axis.

A JAX package that ``vmap``s independent trials (mspca's knockoff PCA, gausscbo's
particle runs) can split them between devices with no communication: the inputs are
placed with a ``NamedSharding`` over a ``Mesh`` whose one axis, ``"trials"``, holds the
devices, and each device runs the single-device program on its block
(:func:`map_trials`). The trial count is padded to a multiple of the device
count by repeating the last trial (its copies are dropped from the result), so every
trial computes exactly what it computes on one device.

``devices=None`` uses every local device (``jax.local_devices()``); one device means no
mesh and the plain single-device program. On a CPU, two host devices are made with
``XLA_FLAGS=--xla_force_host_platform_device_count=2`` (set before JAX starts).

Needs JAX (the ``jax`` extra of icml26-shared); ``import icml26.shared`` does not import
this module.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "trials"

__all__ = [
    "AXIS",
    "local_devices",
    "map_trials",
    "pad_trials",
    "padded_count",
    "replicate",
    "shard_trials",
    "trial_mesh",
]


def local_devices(devices: object = None) -> list[jax.Device]:
    """The devices to spread trials over: ``None`` (all local devices), a count (the
    first that many local devices) or a sequence of ``jax.Device``."""
    available = jax.local_devices()
    if devices is None:
        return list(available)
    if isinstance(devices, numbers.Integral) and not isinstance(devices, bool):
        if not 1 <= devices <= len(available):
            raise ValueError(
                f"devices must lie in [1, {len(available)}] (the local devices), got {devices}"
            )
        return list(available[: int(devices)])
    if isinstance(devices, Sequence) and not isinstance(devices, str):
        devs = list(devices)
        if not devs or not all(isinstance(d, jax.Device) for d in devs):
            raise TypeError("devices must be None, a positive int or a non-empty list of devices")
        if len(set(devs)) != len(devs):
            raise ValueError("devices lists a device twice")
        return devs
    raise TypeError(f"devices must be None, a positive int or a list of devices, got {devices!r}")


def trial_mesh(devices: object = None) -> Mesh | None:
    """A one-axis ``Mesh`` (axis ``"trials"``) over the devices; ``None`` for one device."""
    devs = local_devices(devices)
    if len(devs) == 1:
        return None
    return Mesh(np.asarray(devs, dtype=object), (AXIS,))


def padded_count(trials: int, mesh: Mesh | None) -> int:
    """The trial count rounded up to a multiple of the mesh's device count."""
    if mesh is None:
        return trials
    size = mesh.devices.size
    return -(-trials // size) * size


def pad_trials(tree, total: int):
    """Pad every leaf's leading (trial) axis to ``total`` by repeating its last row."""

    def pad(a):
        extra = total - a.shape[0]
        if extra <= 0:
            return a
        return jnp.concatenate([a, jnp.repeat(a[-1:], extra, axis=0)], axis=0)

    return jax.tree.map(pad, tree)


def shard_trials(tree, mesh: Mesh | None):
    """Place every leaf with its leading axis split over the mesh (no-op without mesh)."""
    if mesh is None:
        return tree
    sharding = NamedSharding(mesh, PartitionSpec(AXIS))
    return jax.tree.map(lambda a: jax.device_put(a, sharding), tree)


def replicate(tree, mesh: Mesh | None):
    """Place every leaf on every device of the mesh (no-op without mesh)."""
    if mesh is None:
        return tree
    sharding = NamedSharding(mesh, PartitionSpec())
    return jax.tree.map(lambda a: jax.device_put(a, sharding), tree)


def _put_block(a, *, lo: int, hi: int, device: jax.Device):
    return jax.device_put(a[lo:hi], device)


def map_trials(fn: Callable, mesh: Mesh, sharded: tuple, replicated: tuple = ()):
    """``fn(*sharded, *replicated)`` with the trial axis of ``sharded`` split over the
    mesh: device i runs the single-device program on its block of trials (dispatched
    asynchronously, so the devices work at once) and the blocks are assembled into
    arrays with a ``NamedSharding`` over the mesh's trial axis.

    The leading axis of every ``sharded`` leaf must be a multiple of the device count
    (:func:`pad_trials`). Each block is computed exactly as on one device: nothing is
    communicated, and nothing goes through the SPMD partitioner (whose compile time on
    the vmapped eigensolvers is out of proportion on CPU).
    """
    devs = list(mesh.devices.flat)
    total = jax.tree.leaves(sharded)[0].shape[0]
    if total % len(devs):
        raise ValueError(f"{total} trials do not split over {len(devs)} devices; pad first")
    per = total // len(devs)
    outs = []
    for i, dev in enumerate(devs):
        lo, hi = i * per, (i + 1) * per
        block = jax.tree.map(partial(_put_block, lo=lo, hi=hi, device=dev), sharded)
        outs.append(fn(*block, *jax.device_put(replicated, dev)))
    sharding = NamedSharding(mesh, PartitionSpec(AXIS))

    def assemble(*parts):
        shape = (total, *parts[0].shape[1:])
        return jax.make_array_from_single_device_arrays(shape, sharding, list(parts))

    return jax.tree.map(assemble, *outs)
