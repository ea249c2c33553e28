"""Per-pod checkpoints (inplace.node.checkpoint)."""

from __future__ import annotations

import json
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
    (tmp_path / "cp" / "torn.0.json").write_text('{"seq": 3, "crc": 1, "checkpoint": {}}')
    assert store.load_all() == [cp]
    assert CheckpointStore(tmp_path / "cp").load_all() == [cp]  # a new agent's reading
    store.remove("u1")
    store.remove("u1")
    assert not list((tmp_path / "cp").glob("u1*"))
    assert store.load_all() == []


def test_saves_alternate_between_two_slots_and_the_newest_whole_one_wins(
    tmp_path: Path,
) -> None:
    """Each save overwrites the slot not holding the newest record, padded over a longer
    one; a new agent (a fresh store) goes on from the newest."""
    store = CheckpointStore(tmp_path / "cp")
    long = PodCheckpoint(uid="u1", namespace="ns", name="a-much-longer-name-than-the-next")
    short = PodCheckpoint(uid="u1", namespace="ns", name="p")
    for cp in (long, long, short, short):
        store.save(cp)
    assert sorted(p.name for p in (tmp_path / "cp").iterdir()) == ["u1.0.json", "u1.1.json"]
    assert store.load_all() == [short]
    restarted = CheckpointStore(tmp_path / "cp")
    third = PodCheckpoint(uid="u1", namespace="ns", name="third")
    restarted.save(third)
    assert CheckpointStore(tmp_path / "cp").load_all() == [third]
    # the newest slot torn (the agent died in the middle of a write): the other one wins
    newest = max((tmp_path / "cp").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    newest.write_bytes(newest.read_bytes()[:20].ljust(newest.stat().st_size))
    assert CheckpointStore(tmp_path / "cp").load_all() == [short]


def test_a_checkpoint_of_the_previous_scheme_is_read_and_replaced(tmp_path: Path) -> None:
    """An agent upgraded in place finds ``<uid>.json`` (one file, replaced by rename)."""
    (tmp_path / "cp").mkdir()
    old = PodCheckpoint(uid="u1", namespace="ns", name="p", allocated={"c": Alloc({"cpu": "1"})})
    (tmp_path / "cp" / "u1.json").write_text(json.dumps(old.to_json()))
    store = CheckpointStore(tmp_path / "cp")
    assert store.load_all() == [old]
    new = PodCheckpoint(uid="u1", namespace="ns", name="p", allocated={"c": Alloc({"cpu": "2"})})
    store.save(new)
    assert not (tmp_path / "cp" / "u1.json").exists()
    assert CheckpointStore(tmp_path / "cp").load_all() == [new]


def test_a_full_disk_keeps_the_previous_checkpoint_whole_and_leaves_no_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the chaos storm (the data dir's disk filled): a failed save left its `.tmp`
    behind for good, and a short write would have replaced a whole checkpoint by a torn one."""
    store = CheckpointStore(tmp_path / "cp")
    first = PodCheckpoint(uid="u1", namespace="ns", name="p", allocated={}, actual={})
    store.save(first)
    real_pwrite = os.pwrite

    def short(fd: int, data: Any, offset: int) -> int:
        return real_pwrite(fd, bytes(data[:8]), offset)  # the disk takes 8 bytes, no more

    monkeypatch.setattr(os, "pwrite", short)
    second = PodCheckpoint(uid="u1", namespace="ns", name="p2", allocated={}, actual={})
    with pytest.raises(OSError):
        store.save(second)
    monkeypatch.undo()
    assert store.load_all() == [first]
    third = PodCheckpoint(uid="u1", namespace="ns", name="p3", allocated={}, actual={})
    store.save(third)  # the disk has room again: written over the torn slot
    assert CheckpointStore(tmp_path / "cp").load_all() == [third]
