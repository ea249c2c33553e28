"""What the pages receive (inplace.dashboard.views): rows, nodes, one pod, workloads."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from inplace.dashboard.history import Marker, PodHistory
from inplace.dashboard.model import Owner, summarize
from inplace.dashboard.views import (
    SPARK_POINTS,
    cluster_view,
    pod_detail,
    pod_row,
    progress_of,
    workloads_view,
)

Mi = 2**20


def pod(
    name: str,
    *,
    node: str = "n1",
    containers: list[tuple[str, dict[str, Any]]] | None = None,
    phase: str = "Running",
    owner: tuple[str, str] | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": True}]
    spec: dict[str, Any] = {
        "containers": [
            {"name": n, "resources": r}
            for n, r in containers
            or [
                (
                    "main",
                    {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"cpu": "200m", "memory": "128Mi"},
                    },
                )
            ]
        ]
    }
    if node:
        spec["nodeName"] = node
    return {
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions or []},
    }


def history_with(samples: dict[str, list[tuple[float, float, float]]]) -> PodHistory:
    history = PodHistory(usage_capacity=1000)
    for container, rows in samples.items():
        for row in rows:
            history.container(container).usage.append(*row)
    return history


def test_a_row_sums_containers_and_has_no_limit_when_one_container_has_none() -> None:
    s = summarize(
        pod(
            "p",
            containers=[
                (
                    "a",
                    {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"cpu": "200m", "memory": "128Mi"},
                    },
                ),
                ("b", {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"memory": "32Mi"}}),
            ],
        )
    )
    history = history_with({"a": [(100.0, 10.0, 10 * Mi)], "b": [(100.0, 5.0, 5 * Mi)]})
    row = pod_row(s, history, now=101.0)
    assert row["cpu"] == {"request": 150.0, "limit": None, "usage": 15.0}
    assert row["memory"] == {"request": 96 * Mi, "limit": 160 * Mi, "usage": 15 * Mi}
    assert row["spark"] == {"t": [100.0], "cpu": [15.0], "memory": [15.0 * Mi]}


def test_a_sparkline_is_thinned_to_a_bound_and_ends_now() -> None:
    s = summarize(pod("p"))
    rows = [(float(t), float(t), float(t) * Mi) for t in range(0, 600, 2)]
    row = pod_row(s, history_with({"main": rows}), now=600.0)
    assert len(row["spark"]["t"]) == SPARK_POINTS
    assert row["spark"]["t"][-1] == 598.0
    assert row["spark"]["t"][0] >= 0.0
    assert pod_row(s, None, now=1.0)["cpu"]["usage"] is None


def test_the_cluster_view_charges_nodes_and_lists_who_waits() -> None:
    node = {
        "metadata": {"name": "n1", "labels": {"inplace.dev/simulated": "true"}},
        "status": {
            "allocatable": {"cpu": "2", "memory": "2Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    deferred = [
        {"type": "PodResizePending", "status": "True", "reason": "Deferred", "message": "no room"}
    ]
    unplaced = pod("c", node="")
    unplaced["status"] = {"phase": "Pending"}
    summaries = [
        summarize(pod("a")),
        summarize(pod("b", conditions=deferred)),
        summarize(unplaced),
        summarize(pod("done", phase="Succeeded")),
    ]
    view = cluster_view([node], summaries, {"n1": (0.0, 120.0, 100 * Mi)})
    (row,) = view["nodes"]
    assert row["name"] == "n1" and row["simulated"] and row["ready"] == "True"
    assert row["pods"] == 2  # the finished pod holds nothing
    assert row["cpu"] == {"allocatable": 2000.0, "requested": 200.0, "used": 120.0}
    assert row["memory"] == {"allocatable": 2**31, "requested": 128 * Mi, "used": 100 * Mi}
    assert [(w["key"], w["for"], w["reason"], w["message"]) for w in view["waiting"]] == [
        ("ns/c", "placement", "Pending", "waiting for the scheduler"),
        ("ns/b", "resize", "Deferred", "no room"),
    ]


def test_one_pod_aligns_usage_and_steps_on_one_axis() -> None:
    s = summarize(pod("p"))
    history = history_with({"main": [(1000.0, 10.0, 40 * Mi), (1010.0, 20.0, 50 * Mi)]})
    sizes = history.container("main").sizes
    sizes.record(900.0, (100.0, 200.0, math.nan, 64 * Mi, 128 * Mi, math.nan))
    sizes.record(1005.0, (100.0, 400.0, 100.0, 64 * Mi, 256 * Mi, 64 * Mi))
    history.add_marker(Marker(1005.0, "resize-completed", "ResizeCompleted", "done"))
    history.add_marker(Marker(10.0, "restarted", "Restarted"))  # outside the window
    history.pause_started(1008.0)
    detail = pod_detail(s, history, now=1020.0, window=100.0, chain=[Owner("Job", "j")], vpa=None)
    (c,) = detail["containers"]
    assert c["t"] == [920.0, 1000.0, 1005.0, 1010.0, 1020.0]  # window start: a size was in force
    assert c["cpu"]["usage"] == [None, 10.0, None, 20.0, None]
    assert c["cpu"]["limit"] == [200.0, 200.0, 400.0, 400.0, 400.0]
    assert c["cpu"]["allocated"] == [None, None, 100.0, 100.0, 100.0]
    assert c["memory"]["limit"][-1] == 256 * Mi
    assert c["cpu"]["target"] == [None] * 5  # no VPA: no band
    assert c["current"]["memory"]["usage"] == 50 * Mi
    assert [m["reason"] for m in detail["markers"]] == ["ResizeCompleted"]
    assert detail["pauses"] == [[1008.0, None]]
    assert detail["owners"] == ["Job/j"]


def test_one_pod_with_a_vpa_has_its_band() -> None:
    s = summarize(pod("p"))
    history = PodHistory(usage_capacity=10)
    history.container("main").recommendation.record(50.0, (10.0, 20.0, 30.0, 1.0, 2.0, 3.0))
    detail = pod_detail(s, history, now=60.0, window=100.0, chain=[], vpa="v")
    (c,) = detail["containers"]
    assert c["t"] == [50.0, 60.0]
    assert (c["cpu"]["lower"], c["cpu"]["target"], c["cpu"]["upper"]) == (
        [10.0] * 2,
        [20.0] * 2,
        [30.0] * 2,
    )
    assert c["current"]["memory"]["target"] == 2.0
    assert detail["vpa"] == "v"


SMALL = {
    "requests": {"cpu": "100m", "memory": "64Mi"},
    "limits": {"cpu": "200m", "memory": "128Mi"},
}
BIG = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "200m", "memory": "256Mi"}}


@pytest.mark.parametrize(
    ("resources", "conditions", "expected"),
    [
        (BIG, [], "current"),
        (SMALL, [], "outdated"),
        (BIG, [{"type": "PodResizeInProgress", "status": "True"}], "resizing"),
        (BIG, [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}], "deferred"),
        (
            SMALL,
            [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
            "infeasible",
        ),
    ],
)
def test_progress_of_a_workload_pod(
    resources: dict[str, Any], conditions: list[dict[str, Any]], expected: str
) -> None:
    template = {"main": (100.0, 200.0, 128.0 * Mi, 256.0 * Mi)}
    s = summarize(pod("p", containers=[("main", resources)], conditions=conditions))
    assert progress_of(s, template) == expected


def test_workloads_count_pods_through_their_replicasets() -> None:
    template = {"spec": {"containers": [{"name": "main", "resources": BIG}]}}
    deployment = {
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"replicas": 2, "template": template},
    }
    job = {
        "metadata": {"name": "crunch", "namespace": "ns"},
        "spec": {"template": template},
        "status": {},
    }
    summaries = [
        summarize(pod("web-1", containers=[("main", BIG)], owner=("ReplicaSet", "web-abc"))),
        summarize(pod("web-2", containers=[("main", SMALL)], owner=("ReplicaSet", "web-abc"))),
        summarize(pod("crunch-x", containers=[("main", BIG)], owner=("Job", "crunch"))),
        summarize(pod("loose")),
    ]
    owners = {("ReplicaSet", "web-abc"): Owner("Deployment", "web")}
    view = workloads_view([deployment], [], [job], summaries, lambda k, ns, n: owners.get((k, n)))
    by_key = {w["key"]: w for w in view["workloads"]}
    web = by_key["Deployment/ns/web"]
    assert web["pods"] == 2
    assert web["progress"]["current"] == 1 and web["progress"]["outdated"] == 1
    assert web["counts"]["desired"] == 2 and web["counts"]["ready"] is None
    assert not web["statusReported"]  # no controller wrote a status: shown as such
    crunch = by_key["Job/ns/crunch"]
    assert crunch["pods"] == 1 and crunch["progress"]["current"] == 1
    assert np.isclose(crunch["template"]["main"]["memory"][1], 256 * Mi)


def test_stateful_and_daemon_sets_are_workloads_with_their_own_counts() -> None:
    template = {"spec": {"containers": [{"name": "main", "resources": BIG}]}}
    sts = {
        "metadata": {"name": "db", "namespace": "ns"},
        "spec": {"replicas": 2, "template": template},
        "status": {"readyReplicas": 2, "updatedReplicas": 1, "availableReplicas": 2},
    }
    ds = {
        "metadata": {"name": "agent", "namespace": "ns"},
        "spec": {"template": template},
        "status": {"desiredNumberScheduled": 3, "numberReady": 3, "updatedNumberScheduled": 3},
    }
    summaries = [
        summarize(pod("db-0", containers=[("main", BIG)], owner=("StatefulSet", "db"))),
        summarize(pod("db-1", containers=[("main", SMALL)], owner=("StatefulSet", "db"))),
        summarize(pod("agent-x", containers=[("main", BIG)], owner=("DaemonSet", "agent"))),
    ]
    view = workloads_view(
        [], [], [], summaries, lambda *_: None, stateful_sets=[sts], daemon_sets=[ds]
    )
    by_key = {w["key"]: w for w in view["workloads"]}
    db = by_key["StatefulSet/ns/db"]
    assert db["pods"] == 2 and db["progress"]["outdated"] == 1
    assert db["counts"] == {"desired": 2, "ready": 2, "updated": 1, "available": 2}
    agent = by_key["DaemonSet/ns/agent"]
    assert agent["pods"] == 1 and agent["counts"]["desired"] == 3


def test_a_workload_lists_the_pods_it_lost_to_a_move() -> None:
    job = {"metadata": {"name": "crunch", "namespace": "ns"}, "spec": {"template": {}}}
    moved = Marker(100.0, "moved", "ResizeEvicted", "evicted to be resized elsewhere")
    older = Marker(50.0, "preempted", "Preempted", "by ns/big")
    view = workloads_view(
        [], [], [job], [], lambda *_: None,
        [(("Job", "ns", "crunch"), "crunch-a", older), (("Job", "ns", "crunch"), "crunch-b", moved),
         (("Job", "ns", "other"), "x", moved)],
    )  # fmt: skip
    (row,) = view["workloads"]
    assert [(d["pod"], d["kind"]) for d in row["departed"]] == [
        ("crunch-b", "moved"),
        ("crunch-a", "preempted"),
    ]
