"""Node health, taints and taint-based eviction, tabled."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.controllers.nodelifecycle import model as m


def node(
    ready: str | None, *, taints: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready is not None:
        conditions.append(
            {"type": "Ready", "status": ready, "lastHeartbeatTime": "2026-01-01T00:00:00Z"}
        )
    return {
        "metadata": {"name": "n"},
        "spec": {**spec, **({"taints": taints} if taints else {})},
        "status": {"conditions": conditions},
    }


@pytest.mark.parametrize(
    ("the_node", "wanted"),
    [
        (node("True"), set()),
        (node(None), {(m.NOT_READY, "NoSchedule")}),  # never reported: not schedulable
        (node("False"), {(m.NOT_READY, "NoExecute"), (m.NOT_READY, "NoSchedule")}),
        (node("Unknown"), {(m.UNREACHABLE, "NoExecute"), (m.UNREACHABLE, "NoSchedule")}),
        (node("True", unschedulable=True), {(m.UNSCHEDULABLE, "NoSchedule")}),
    ],
)
def test_desired_taints(the_node: dict[str, Any], wanted: set[tuple[str, str]]) -> None:
    assert m.desired_taints(the_node) == wanted


def test_pressure_conditions_taint_no_schedule() -> None:
    pressured = node("True")
    pressured["status"]["conditions"][0]["status"] = "True"
    assert m.desired_taints(pressured) == {(m.MEMORY_PRESSURE, "NoSchedule")}


def test_merge_taints_keeps_foreign_taints_and_stamps_no_execute() -> None:
    foreign = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    old_not_ready = {"key": m.NOT_READY, "effect": "NoExecute", "timeAdded": "T0"}
    wanted = {(m.UNREACHABLE, "NoExecute"), (m.UNREACHABLE, "NoSchedule")}
    merged = m.merge_taints([foreign, old_not_ready], wanted, "T1")
    assert merged == [
        foreign,
        {"key": m.UNREACHABLE, "effect": "NoExecute", "timeAdded": "T1"},
        {"key": m.UNREACHABLE, "effect": "NoSchedule"},
    ]
    assert m.merge_taints(merged, wanted, "T2") is None  # nothing to change
    assert m.merge_taints(merged, set(), "T2") == [foreign]


def test_unknown_conditions_keep_heartbeats_and_add_missing_ones() -> None:
    conditions = m.unknown_conditions(node("True"), "NOW")
    assert conditions is not None
    by_type = {c["type"]: c for c in conditions}
    assert by_type["Ready"]["status"] == "Unknown"
    assert by_type["Ready"]["reason"] == "NodeStatusUnknown"
    assert by_type["Ready"]["message"] == "Kubelet stopped posting node status."
    assert by_type["Ready"]["lastHeartbeatTime"] == "2026-01-01T00:00:00Z"
    assert by_type["Ready"]["lastTransitionTime"] == "NOW"
    assert by_type["DiskPressure"]["reason"] == "NodeStatusNeverUpdated"
    again = {**node("True"), "status": {"conditions": conditions}}
    assert m.unknown_conditions(again, "LATER") is None


NO_EXECUTE = {"key": m.UNREACHABLE, "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}
T0 = 1767225600.0  # 2026-01-01T00:00:00Z


def toleration(key: str | None, seconds: int | None, **extra: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"operator": "Exists", "effect": "NoExecute", **extra}
    if key is not None:
        t["key"] = key
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


@pytest.mark.parametrize(
    ("tolerations", "taints", "now", "delay"),
    [
        ([], [NO_EXECUTE], T0 + 1, 0.0),  # not tolerated: now
        ([toleration(m.UNREACHABLE, 300)], [NO_EXECUTE], T0 + 100, 200.0),
        ([toleration(m.UNREACHABLE, 300)], [NO_EXECUTE], T0 + 400, 0.0),
        ([toleration(m.UNREACHABLE, None)], [NO_EXECUTE], T0, None),  # forever
        ([toleration(None, None)], [NO_EXECUTE], T0, None),  # tolerates everything
        # the smallest tolerationSeconds among the tolerations used wins
        ([toleration(m.UNREACHABLE, None), toleration(m.UNREACHABLE, 5)], [NO_EXECUTE], T0, 5.0),
        ([toleration(m.UNREACHABLE, 0)], [NO_EXECUTE], T0, 0.0),
        ([], [{"key": m.UNREACHABLE, "effect": "NoSchedule"}], T0, None),
        ([toleration(m.NOT_READY, 300)], [NO_EXECUTE], T0, 0.0),  # wrong key
    ],
)
def test_eviction_delay(
    tolerations: list[dict[str, Any]], taints: list[dict[str, Any]], now: float, delay: float | None
) -> None:
    assert m.eviction_delay(tolerations, taints, now) == delay


@pytest.mark.parametrize(
    ("tol", "taint", "match"),
    [
        (
            {"key": "a", "operator": "Equal", "value": "1"},
            {"key": "a", "value": "1", "effect": "NoSchedule"},
            True,
        ),
        (
            {"key": "a", "operator": "Equal", "value": "2"},
            {"key": "a", "value": "1", "effect": "NoSchedule"},
            False,
        ),
        ({"key": "a", "value": "1"}, {"key": "a", "value": "1", "effect": "NoExecute"}, True),
        (
            {"key": "a", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "a", "effect": "NoExecute"},
            False,
        ),
        ({"operator": "Exists"}, {"key": "anything", "effect": "NoExecute"}, True),
    ],
)
def test_tolerates(tol: dict[str, Any], taint: dict[str, Any], match: bool) -> None:
    assert m.tolerates(tol, taint) is match
