"""The pod garbage collector's decisions, table by table."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.controllers.podgc import model as m


def pod(
    name: str,
    node: str = "",
    *,
    phase: str = "Running",
    deleting: bool = False,
    created: str = "2026-01-01T00:00:00Z",
    reason: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T01:00:00Z"
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    return {"metadata": meta, "spec": {"nodeName": node}, "status": status}


def node(name: str, ready: str = "True", taints: list[str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"taints": [{"key": k, "effect": "NoExecute"} for k in taints or ()]},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def names(pods: list[Any]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_missing_nodes_are_the_bound_ones_the_cache_lacks() -> None:
    pods = [pod("a", "node-1"), pod("b", "gone"), pod("c"), pod("d", "gone"), pod("e", "other")]
    assert m.missing_nodes(pods, {"node-1"}) == {"gone", "other"}


def test_orphaned_pods_are_those_on_confirmed_gone_nodes() -> None:
    pods = [pod("a", "node-1"), pod("b", "gone", deleting=True), pod("c"), pod("d", "gone")]
    assert names(m.orphaned(pods, {"gone"})) == ["b", "d"]
    assert m.orphaned(pods, set()) == []


@pytest.mark.parametrize(
    ("subject", "collected"),
    [
        (pod("p", deleting=True), True),
        (pod("p"), False),
        (pod("p", "node-1", deleting=True), False),
        (pod("p", phase="Succeeded", deleting=True), True),
    ],
)
def test_unscheduled_terminating(subject: dict[str, Any], collected: bool) -> None:
    assert bool(m.unscheduled_terminating([subject])) is collected


@pytest.mark.parametrize(
    ("the_node", "deleting", "collected"),
    [
        (node("n", "False", [m.OUT_OF_SERVICE]), True, True),
        (node("n", "Unknown", [m.OUT_OF_SERVICE]), True, True),
        (node("n", "False", [m.OUT_OF_SERVICE]), False, False),  # not being deleted
        (node("n", "True", [m.OUT_OF_SERVICE]), True, False),  # ready: its agent finishes it
        (node("n", "False", ["node.kubernetes.io/unreachable"]), True, False),  # no word
        (None, True, False),  # no node: the orphan pass's business
    ],
)
def test_out_of_service_terminating(
    the_node: dict[str, Any] | None, deleting: bool, collected: bool
) -> None:
    nodes = {"n": the_node} if the_node is not None else {}
    subject = pod("p", "n", deleting=deleting)
    assert bool(m.out_of_service_terminating([subject], nodes)) is collected


def test_terminated_beyond_the_threshold_goes_evicted_first_then_oldest() -> None:
    pods = [
        pod("new", "n", phase="Succeeded", created="2026-01-03T00:00:00Z"),
        pod("old", "n", phase="Failed", created="2026-01-01T00:00:00Z"),
        pod("evicted", "n", phase="Failed", reason="Evicted", created="2026-01-05T00:00:00Z"),
        pod("b-tie", "n", phase="Succeeded", created="2026-01-02T00:00:00Z"),
        pod("a-tie", "n", phase="Succeeded", created="2026-01-02T00:00:00Z"),
        pod("running", "n", created="2020-01-01T00:00:00Z"),
        pod("pending", phase="Pending", created="2020-01-01T00:00:00Z"),
        pod("unknown", "n", phase="Unknown", created="2020-01-01T00:00:00Z"),
    ]
    assert names(m.terminated_beyond(pods, 1)) == ["evicted", "old", "a-tie", "b-tie"]
    assert names(m.terminated_beyond(pods, 4)) == ["evicted"]
    assert m.terminated_beyond(pods, 5) == []
    assert m.terminated_beyond(pods, 0) == []  # 0 turns the pass off


def test_quarantine_holds_a_name_for_the_whole_period_from_when_first_missing() -> None:
    q = m.Quarantine(40.0)
    assert q.due({"gone"}, 0.0) == set()
    assert q.due({"gone", "late"}, 30.0) == set()
    assert q.due({"gone", "late"}, 40.0) == {"gone"}
    q.release("gone")  # checked: if still missing, it waits a whole period again
    assert q.due({"gone", "late"}, 70.0) == {"late"}
    assert q.due({"gone", "late"}, 110.0) == {"gone", "late"}


def test_quarantine_forgets_a_name_that_reappears() -> None:
    q = m.Quarantine(40.0)
    q.due({"flaky"}, 0.0)
    assert q.due(set(), 20.0) == set()  # the node showed up in the cache
    assert q.due({"flaky"}, 50.0) == set()  # missing again: a fresh period
    assert q.due({"flaky"}, 90.0) == {"flaky"}
