"""Per-pod checkpoints (inplace.node.checkpoint)."""

from __future__ import annotations

from pathlib import Path

from inplace.node.checkpoint import CheckpointStore, ContainerCheckpoint, PodCheckpoint


def test_checkpoint_round_trip_and_removal(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "cp")
    cp = PodCheckpoint(
        uid="u1",
        namespace="ns",
        name="p",
        allocated={"main": {"requests": {"cpu": "1"}}},
        actual={"main": {"requests": {"cpu": "500m"}}},
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
