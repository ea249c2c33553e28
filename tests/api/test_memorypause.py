"""The ``MemoryPaused`` condition's format: what the node writes is what a responder reads."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from inplace.api.memorypause import (
    memory_paused,
    paused_containers,
    paused_message,
    paused_since,
)


def pod_with(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"status": {"conditions": list(conditions)}}


@pytest.mark.parametrize("names", [["main"], ["main", "side"], ["a-b.c"]])
def test_names_round_trip(names: list[str]) -> None:
    message = paused_message(names, "cgroup v1 memory.oom_control", "a resize is pending")
    assert message.endswith("by cgroup v1 memory.oom_control; a resize is pending")
    cond = {"type": "MemoryPaused", "status": "True", "message": message}
    assert paused_containers(pod_with(cond)) == names


def test_not_paused() -> None:
    message = paused_message(["main"], "x")
    assert paused_containers(pod_with()) == []
    assert paused_containers(pod_with({"type": "MemoryPaused", "status": "False"})) == []
    gone = {"type": "MemoryPaused", "status": "False", "message": message}
    assert memory_paused(pod_with(gone)) is None
    assert paused_containers({}) == []
    assert paused_containers(pod_with({"type": "MemoryPaused", "status": "True"})) == []


def test_paused_since() -> None:
    cond = {
        "type": "MemoryPaused",
        "status": "True",
        "lastTransitionTime": "2026-01-02T03:04:05Z",
        "message": paused_message(["main"], "x"),
    }
    assert paused_since(pod_with(cond)) == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert paused_since(pod_with({**cond, "lastTransitionTime": "never"})) is None
    assert paused_since(pod_with()) is None
