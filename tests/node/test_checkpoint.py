"""Per-pod checkpoints (inplace.node.checkpoint)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from inplace.node.checkpoint import CheckpointStore, ContainerCheckpoint, PodCheckpoint
from inplace.node.model import Alloc


def test_checkpoint_round_trip_and_removal(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "cp")
    cp = PodCheckpoint(
        uid="u1",
        namespace="ns",
        name="p",
        allocated={"main": Alloc({"cpu": "1"})},
        actual={"main": Alloc({"cpu": "500m"})},
        containers={"main": ContainerCheckpoint(pid=42, start_time=1.5, restart_count=3)},
        initialized=True,
    )
    store.save(cp)
    (tmp_path / "cp" / "garbage.json").write_text("{not json")
    assert store.load_all() == [cp]
    assert not list((tmp_path / "cp").glob("*.tmp"))
    store.remove("u1")
    store.remove("u1")
    assert store.load_all() == []


def test_a_full_disk_keeps_the_previous_checkpoint_whole_and_leaves_no_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the chaos storm (the data dir's disk filled): a failed save left its `.tmp`
    behind for good, and a short write would have replaced a whole checkpoint by a torn one."""
    store = CheckpointStore(tmp_path / "cp")
    first = PodCheckpoint(uid="u1", namespace="ns", name="p", allocated={}, actual={})
    store.save(first)
    real_write = os.write

    def short_then_full(fd: int, data: Any) -> int:
        if len(data) > 8:
            return real_write(fd, bytes(data[:8]))  # the disk takes 8 bytes, then no more
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", short_then_full)
    second = PodCheckpoint(uid="u1", namespace="ns", name="p2", allocated={}, actual={})
    with pytest.raises(OSError):
        store.save(second)
    monkeypatch.undo()
    assert store.load_all() == [first]
    assert not list((tmp_path / "cp").glob("*.tmp"))
