"""Rank helpers read the launcher's environment when no process group is initialised."""

from __future__ import annotations

from icml26.shared import barrier, is_main_process, main_process_first, rank, world_size


def test_single_process_defaults(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "ACCELERATE_PROCESS_INDEX"):
        monkeypatch.delenv(var, raising=False)
    assert (rank(), world_size(), is_main_process()) == (0, 1, True)
    barrier()  # a no-op without a process group
    with main_process_first() as main:
        assert main


def test_launcher_environment(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert (rank(), world_size(), is_main_process()) == (1, 2, False)
