"""The dashboard's reading of API objects (inplace.dashboard.model): tables, no I/O."""

from __future__ import annotations

import math
from typing import Any

import pytest

from inplace.dashboard.history import Marker
from inplace.dashboard.model import (
    Owner,
    ResizeState,
    event_marker,
    owner_chain,
    paused_since,
    recommendations,
    resize_state,
    status_markers,
    summarize,
    with_decision,
)

Mi = 2**20


def pod(
    *,
    resources: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    owner: tuple[str, str] | None = None,
    **meta: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": "p",
        "namespace": "ns",
        "uid": "u1",
        "creationTimestamp": "2026-12-03T07:00:00Z",
        **meta,
    }
    if owner:
        metadata["ownerReferences"] = [
            {"kind": owner[0], "name": owner[1], "uid": "o", "controller": True}
        ]
    return {
        "metadata": metadata,
        "spec": {
            "nodeName": "n1",
            "containers": [
                {
                    "name": "main",
                    "resources": resources
                    if resources is not None
                    else {
                        "requests": {"cpu": "250m", "memory": "64Mi"},
                        "limits": {"cpu": "500m", "memory": "128Mi"},
                    },
                }
            ],
        },
        "status": status if status is not None else {"phase": "Running"},
    }


def running(
    actual: dict[str, Any] | None = None, allocated: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    cs: dict[str, Any] = {"name": "main", "restartCount": 0, "state": {"running": {}}}
    if actual is not None:
        cs["resources"] = actual
    if allocated is not None:
        cs["allocatedResources"] = allocated
    return {"phase": "Running", "containerStatuses": [cs], **extra}


SPEC = {
    "requests": {"cpu": "250m", "memory": "64Mi"},
    "limits": {"cpu": "500m", "memory": "128Mi"},
}


def test_summary_numbers_and_words() -> None:
    s = summarize(
        pod(
            annotations={"inplace.dev/resize-policy": "InPlacePreferred"},
            labels={"app": "web"},
            owner=("ReplicaSet", "web-1"),
            status=running(SPEC, {"cpu": "250m", "memory": "64Mi"}),
        )
    )
    assert s.key == "ns/p"
    assert s.node == "n1"
    assert s.status == "Running"
    assert s.qos == "Burstable"
    assert s.policy == "InPlacePreferred"
    assert s.owner == Owner("ReplicaSet", "web-1", "o")
    (c,) = s.containers
    assert (c.request_cpu, c.limit_cpu, c.request_memory, c.limit_memory) == (
        250.0,
        500.0,
        64 * Mi,
        128 * Mi,
    )
    assert (c.allocated_cpu, c.allocated_memory) == (250.0, 64 * Mi)
    assert c.spec == {
        "requests": {"cpu": "250m", "memory": "64Mi"},
        "limits": {"cpu": "500m", "memory": "128Mi"},
    }
    assert (s.requests_cpu, s.requests_memory) == (250.0, 64 * Mi)
    assert s.resize == ResizeState("")
    assert s.holds_node_resources


def test_a_container_without_limits_has_nan_limits_and_requests_default_to_limits() -> None:
    s = summarize(pod(resources={"limits": {"memory": "1Gi"}}))
    (c,) = s.containers
    assert math.isnan(c.limit_cpu) and math.isnan(c.request_cpu)
    assert c.request_memory == c.limit_memory == 2**30  # defaulted from the limit
    assert math.isnan(c.allocated_cpu)


def _cond(type_: str, reason: str = "", message: str = "", status: str = "True") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-12-03T07:00:05Z",
    }


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (running(SPEC), ""),
        (
            running(SPEC, conditions=[_cond("PodResizePending", "Deferred", "no room: memory")]),
            "Deferred",
        ),
        (
            running(SPEC, conditions=[_cond("PodResizePending", "Infeasible", "too big")]),
            "Infeasible",
        ),
        (running(SPEC, conditions=[_cond("PodResizeInProgress")]), "InProgress"),
        (running(SPEC, conditions=[_cond("PodResizeInProgress", "Error", "refused")]), "Error"),
        (running(SPEC, resize="Deferred"), "Deferred"),  # the field before the conditions
        (  # the node still holds the old size: asked, not yet decided
            running({"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": SPEC["limits"]}),
            "Proposed",
        ),
        (running(SPEC, {"cpu": "100m", "memory": "64Mi"}), "Proposed"),  # allocated differs
        (running(), ""),  # not reported yet: nothing to say
        ({"phase": "Succeeded"}, ""),
    ],
)
def test_resize_state(status: dict[str, Any], expected: str) -> None:
    obj = pod(status=status)
    assert resize_state(obj, summarize(obj).containers).state == expected


def test_a_deferred_resize_keeps_its_reason_and_since() -> None:
    obj = pod(status=running(SPEC, conditions=[_cond("PodResizePending", "Deferred", "no room")]))
    state = summarize(obj).resize
    assert state.message == "no room"
    assert state.since == pytest.approx(1796281205.0)


def test_waiting_for_placement_says_why() -> None:
    obj = pod(
        status={
            "phase": "Pending",
            "conditions": [
                _cond("PodScheduled", "Unschedulable", "0/1 nodes are available", "False")
            ],
        }
    )
    obj["spec"].pop("nodeName")
    assert summarize(obj).waiting == ("Unschedulable", "0/1 nodes are available")
    obj["status"] = {"phase": "Pending"}
    assert summarize(obj).waiting == ("Pending", "waiting for the scheduler")
    assert summarize(pod()).waiting is None


def event(reason: str, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p.1", "uid": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u1"},
        "reason": reason,
        "message": f"{reason} happened",
        "lastTimestamp": "2026-12-03T07:00:10Z",
        "count": 1,
        **extra,
    }


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("ResizeStarted", "resize-started"),
        ("ResizeCompleted", "resize-completed"),
        ("ResizeDeferred", "resize-deferred"),
        ("ResizeInfeasible", "resize-infeasible"),
        ("ResizeError", "resize-error"),
        ("MemoryPaused", "paused"),
        ("Preempted", "preempted"),
        ("ResizeEvicted", "moved"),
        ("Scheduled", None),
        ("Pulled", None),
    ],
)
def test_events_that_are_markers(reason: str, kind: str | None) -> None:
    found = event_marker(event(reason))
    if kind is None:
        assert found is None
        return
    assert found is not None
    target, marker, key = found
    assert (target, marker.kind, marker.reason, marker.message) == (
        "u1",
        kind,
        reason,
        f"{reason} happened",
    )
    assert marker.at == pytest.approx(1796281210.0)
    assert key == "event/e1/1"


def test_an_event_without_uid_names_its_pod_and_a_repeat_is_another_marker() -> None:
    e = event("ResizeDeferred", count=2)
    e["involvedObject"].pop("uid")
    found = event_marker(e)
    assert found is not None and found[0] == "ns/p" and found[2] == "event/e1/2"
    assert event_marker({**event("ResizeDeferred"), "involvedObject": {"kind": "Node"}}) is None


def _terminated(reason: str, count: int) -> dict[str, Any]:
    status = running(SPEC)
    cs = status["containerStatuses"][0]
    cs["restartCount"] = count
    cs["state"] = {"running": {"startedAt": "2026-12-03T07:01:00Z"}}
    cs["lastState"] = {
        "terminated": {"reason": reason, "exitCode": 137, "finishedAt": "2026-12-03T07:00:59Z"}
    }
    return pod(status=status)


def test_restarts_and_oom_kills_become_markers_once() -> None:
    before = pod(status=running(SPEC))
    after = _terminated("OOMKilled", 1)
    found = status_markers(before, after, now=0.0)
    assert [(m.kind, m.container, key) for m, key in found] == [
        ("oom-killed", "main", "oom/main/1"),
        ("restarted", "main", "restart/main/1"),
    ]
    assert found[0][0].at == pytest.approx(1796281259.0)
    assert found[1][0].message == "restart 1 after OOMKilled (exit code 137)"
    assert status_markers(after, after, now=0.0) == []
    # a pod first seen with restarts behind it: its last restart is marked
    assert [m.kind for m, _ in status_markers(None, _terminated("Error", 3), now=0.0)] == [
        "restarted"
    ]


def test_an_oom_kill_without_a_restart_is_a_marker_once() -> None:
    before = pod(status=running(SPEC))
    after = pod(status=running(SPEC))
    after["status"]["containerStatuses"][0]["state"] = {
        "terminated": {"reason": "OOMKilled", "exitCode": 137, "finishedAt": "2026-12-03T07:02:00Z"}
    }
    ((marker, key),) = status_markers(before, after, now=0.0)
    assert (marker.kind, marker.container, marker.message) == (
        "oom-killed",
        "main",
        "exit code 137; not restarted",
    )
    assert marker.at == pytest.approx(1796281320.0)
    assert key == "oom/main/ended/2026-12-03T07:02:00Z"
    assert status_markers(after, after, now=0.0) == []


def test_paused_since() -> None:
    paused = pod(status=running(SPEC, conditions=[_cond("MemoryPaused", "MemoryLimitReached")]))
    assert paused_since(paused) == pytest.approx(1796281205.0)
    assert paused_since(pod(status=running(SPEC))) is None


def test_owner_chain() -> None:
    s = summarize(pod(owner=("ReplicaSet", "web-1")))
    owners = {("ReplicaSet", "web-1"): Owner("Deployment", "web")}
    chain = owner_chain(s, lambda kind, ns, name: owners.get((kind, name)))
    assert chain == [Owner("ReplicaSet", "web-1", "o"), Owner("Deployment", "web")]
    assert owner_chain(summarize(pod()), lambda *_: None) == []


def test_recommendations_per_container() -> None:
    vpa = {
        "status": {
            "recommendation": {
                "containerRecommendations": [
                    {
                        "containerName": "main",
                        "lowerBound": {"cpu": "50m", "memory": "100Mi"},
                        "target": {"cpu": "120m", "memory": "160Mi"},
                        "upperBound": {"cpu": "1", "memory": "1Gi"},
                    }
                ]
            }
        }
    }
    assert recommendations(vpa) == {"main": (50.0, 120.0, 1000.0, 100 * Mi, 160 * Mi, 2**30)}
    assert recommendations({"status": {}}) == {}  # no recommender yet: no band


@pytest.mark.parametrize(
    ("markers", "asked_at", "expected"),
    [
        ([], None, "Proposed"),
        ([Marker(10.0, "resize-deferred", "ResizeDeferred", "no room")], None, "Deferred"),
        ([Marker(10.0, "resize-deferred", "ResizeDeferred", "no room")], 11.5, "Deferred"),
        ([Marker(10.0, "resize-deferred", "ResizeDeferred", "old")], 30.0, "Proposed"),
        ([Marker(10.0, "resize-infeasible", "ResizeInfeasible", "too big")], None, "Infeasible"),
        (
            [
                Marker(10.0, "resize-deferred", "ResizeDeferred"),
                Marker(12.0, "resize-started", "ResizeStarted"),
            ],
            None,
            "Proposed",
        ),
        ([Marker(10.0, "restarted", "Restarted")], None, "Proposed"),
    ],
)
def test_a_proposed_resize_is_told_by_its_latest_decision_event(
    markers: list[Marker], asked_at: float | None, expected: str
) -> None:
    told = with_decision(ResizeState("Proposed", "waiting"), markers, asked_at)
    assert told.state == expected
    if expected != "Proposed":
        assert told.message == markers[-1].message
    assert with_decision(ResizeState("InProgress"), markers, asked_at).state == "InProgress"
