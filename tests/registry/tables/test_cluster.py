"""Nodes, Namespaces, Events, PriorityClasses, Leases and VPAs, as upstream prints them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.tables.helpers import (
    DAY,
    HOUR,
    MINUTE,
    ago,
    by_name,
    cells,
)

# --- nodes ----------------------------------------------------------------------------------


def node(
    conditions: list[dict[str, Any]], *, labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1", "creationTimestamp": ago(10 * DAY), "labels": labels or {}},
        "spec": spec,
        "status": {
            "conditions": conditions,
            "nodeInfo": {"kubeletVersion": "v1.32.0-inplace"},
        },
    }


@pytest.mark.parametrize(
    ("obj", "status", "roles"),
    [
        (node([{"type": "Ready", "status": "True"}]), "Ready", "<none>"),
        (node([{"type": "Ready", "status": "False"}]), "NotReady", "<none>"),
        (node([{"type": "Ready", "status": "Unknown"}]), "NotReady", "<none>"),
        (node([]), "Unknown", "<none>"),
        (node([{"type": "MemoryPressure", "status": "True"}]), "Unknown", "<none>"),
        (
            node([{"type": "Ready", "status": "True"}], unschedulable=True),
            "Ready,SchedulingDisabled",
            "<none>",
        ),
        (node([], unschedulable=True), "Unknown,SchedulingDisabled", "<none>"),
        (
            node(
                [{"type": "Ready", "status": "True"}],
                labels={
                    "node-role.kubernetes.io/worker": "",
                    "node-role.kubernetes.io/control-plane": "",
                    "node-role.kubernetes.io/": "",
                },
            ),
            "Ready",
            "control-plane,worker",
        ),
        (
            node([{"type": "Ready", "status": "True"}], labels={"kubernetes.io/role": "master"}),
            "Ready",
            "master",
        ),
        (
            node(
                [{"type": "Ready", "status": "True"}],
                labels={"kubernetes.io/role": "", "node-role.kubernetes.io/worker": "x"},
            ),
            "Ready",
            "worker",
        ),
    ],
)
def test_node_status_and_roles(obj: dict[str, Any], status: str, roles: str) -> None:
    row = by_name("Node", obj)
    assert (row["Status"], row["Roles"]) == (status, roles)
    assert row["Age"] == "10d"
    assert row["Version"] == "v1.32.0-inplace"


def test_node_wide_cells() -> None:
    obj = node([{"type": "Ready", "status": "True"}])
    assert cells("Node", obj)[5:] == ["<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]
    obj["status"]["addresses"] = [
        {"type": "Hostname", "address": "host"},
        {"type": "InternalIP", "address": "192.168.1.5"},
        {"type": "InternalIP", "address": "192.168.1.6"},
        {"type": "ExternalIP", "address": "1.2.3.4"},
    ]
    obj["status"]["nodeInfo"].update(
        osImage="Ubuntu 24.04", kernelVersion="6.8.0", containerRuntimeVersion="inplace://0.1"
    )
    assert cells("Node", obj)[5:] == [
        "192.168.1.5",
        "1.2.3.4",
        "Ubuntu 24.04",
        "6.8.0",
        "inplace://0.1",
    ]


# --- the other kinds ------------------------------------------------------------------------


def test_namespace() -> None:
    obj = {
        "metadata": {"name": "prod", "creationTimestamp": ago(90)},
        "status": {"phase": "Active"},
    }
    assert cells("Namespace", obj) == ["prod", "Active", "90s"]


def event(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "metadata": {"name": "web-1.17a", "namespace": "prod"},
        "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{app}"},
        "reason": "ResizeCompleted",
        "type": "Normal",
        "message": "  resized cpu to 500m\n",
        "source": {"component": "inplace-node", "host": "node-a"},
        "firstTimestamp": ago(10 * MINUTE),
        "lastTimestamp": ago(MINUTE),
        "count": 3,
    }
    base.update(fields)
    return base


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            event(),
            [
                "60s",
                "Normal",
                "ResizeCompleted",
                "pod/web-1",
                "spec.containers{app}",
                "inplace-node, node-a",
                "resized cpu to 500m",
                "10m",
                3,
                "web-1.17a",
            ],
        ),
        (
            # events.k8s.io style: eventTime, reporting controller, no count
            event(
                firstTimestamp=None,
                lastTimestamp=None,
                count=None,
                source={},
                eventTime="2025-06-01T11:55:00.123456Z",
                reportingComponent="inplace-scheduler",
                reportingInstance="sched-1",
            ),
            [
                "4m59s",
                "Normal",
                "ResizeCompleted",
                "pod/web-1",
                "spec.containers{app}",
                "inplace-scheduler, sched-1",
                "resized cpu to 500m",
                "4m59s",
                1,
                "web-1.17a",
            ],
        ),
        (
            event(
                series={"count": 7, "lastObservedTime": "2025-06-01T11:59:30.000000Z"},
                source={"component": "inplace-node"},
            ),
            [
                "30s",
                "Normal",
                "ResizeCompleted",
                "pod/web-1",
                "spec.containers{app}",
                "inplace-node",
                "resized cpu to 500m",
                "10m",
                7,
                "web-1.17a",
            ],
        ),
        (
            event(involvedObject={"kind": "Node"}, lastTimestamp=None),
            [
                "10m",
                "Normal",
                "ResizeCompleted",
                "node",
                "",
                "inplace-node, node-a",
                "resized cpu to 500m",
                "10m",
                3,
                "web-1.17a",
            ],
        ),
        (
            event(firstTimestamp=None, lastTimestamp=None),
            [
                "<unknown>",
                "Normal",
                "ResizeCompleted",
                "pod/web-1",
                "spec.containers{app}",
                "inplace-node, node-a",
                "resized cpu to 500m",
                "<unknown>",
                3,
                "web-1.17a",
            ],
        ),
    ],
)
def test_event(obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells("Event", obj) == expected


def test_priority_class() -> None:
    obj = {
        "metadata": {"name": "high", "creationTimestamp": ago(DAY)},
        "value": 1000,
        "globalDefault": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    assert cells("PriorityClass", obj) == ["high", 1000, True, "24h", "PreemptLowerPriority"]
    assert cells("PriorityClass", {"metadata": {"name": "low"}, "value": -5}) == [
        "low",
        -5,
        False,
        "<unknown>",
        "",
    ]


def test_lease() -> None:
    obj = {
        "metadata": {"name": "node-a", "creationTimestamp": ago(HOUR)},
        "spec": {"holderIdentity": "node-a", "leaseDurationSeconds": 40},
    }
    assert cells("Lease", obj) == ["node-a", "node-a", "60m"]
    assert cells("Lease", {"metadata": {"name": "x"}, "spec": {}}) == ["x", "", "<unknown>"]


def test_vertical_pod_autoscaler() -> None:
    obj = {
        "metadata": {"name": "web-vpa", "creationTimestamp": ago(3 * DAY)},
        "spec": {"updatePolicy": {"updateMode": "InPlaceOrRecreate", "minReplicas": 2}},
        "status": {
            "conditions": [
                {"type": "LowConfidence", "status": "False"},
                {"type": "RecommendationProvided", "status": "True"},
            ],
            "recommendation": {
                "containerRecommendations": [
                    {"containerName": "app", "target": {"cpu": "250m", "memory": "262144k"}},
                    {"containerName": "sidecar", "target": {"cpu": "10m", "memory": "50Mi"}},
                ]
            },
        },
    }
    assert cells("VerticalPodAutoscaler", obj) == [
        "web-vpa",
        "InPlaceOrRecreate",
        "250m",
        "262144k",
        "True",
        "3d",
        2,
        None,
    ]
    fresh = {"metadata": {"name": "new", "creationTimestamp": ago(5)}, "spec": {}}
    assert cells("VerticalPodAutoscaler", fresh) == [
        "new",
        None,
        None,
        None,
        None,
        "5s",
        None,
        None,
    ]
