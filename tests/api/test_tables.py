"""Table responses: every cell as upstream's printers compute it, against hand-built objects."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from inplace.api.kinds import REGISTRY
from inplace.api.tables import (
    DEFAULT_TABLE,
    TablePrinter,
    column_definitions,
    human_duration,
    to_table,
)

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
SECOND = 1.0
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR
MS = 0.001


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def printer(kind: str) -> TablePrinter:
    """The printer the served kind called `kind` names in its strategy; Name and Age for a
    kind the server does not serve (as for a CRD without printer columns)."""
    served = [k for k in REGISTRY.kinds if k.kind == kind]
    return served[0].strategy.table if served else DEFAULT_TABLE


def cells(kind: str, obj: dict[str, Any]) -> list[Any]:
    table = to_table(printer(kind), [obj], now=NOW)
    row: list[Any] = table["rows"][0]["cells"]
    assert len(row) == len(table["columnDefinitions"])
    return row


def by_name(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return dict(
        zip((c["name"] for c in column_definitions(printer(kind))), cells(kind, obj), strict=True)
    )


# --- human_duration (upstream duration_test.go) ---------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (SECOND, "1s"),
        (70 * SECOND, "70s"),
        (190 * SECOND, "3m10s"),
        (70 * MINUTE, "70m"),
        (47 * HOUR, "47h"),
        (49 * HOUR, "2d1h"),
        ((8 * 24 + 2) * HOUR, "8d"),
        (367 * 24 * HOUR, "367d"),
        ((365 * 2 * 24 + 25) * HOUR, "2y1d"),
        ((365 * 8 * 24 + 2) * HOUR, "8y"),
        # boundaries
        (-2 * SECOND, "<invalid>"),
        (-2 * SECOND + 1e-9, "0s"),
        (0, "0s"),
        (SECOND - MS, "0s"),
        (2 * MINUTE - MS, "119s"),
        (2 * MINUTE, "2m"),
        (2 * MINUTE + SECOND, "2m1s"),
        (10 * MINUTE - MS, "9m59s"),
        (10 * MINUTE, "10m"),
        (10 * MINUTE + SECOND, "10m"),
        (3 * HOUR - MS, "179m"),
        (3 * HOUR, "3h"),
        (3 * HOUR + MINUTE, "3h1m"),
        (8 * HOUR - MS, "7h59m"),
        (8 * HOUR, "8h"),
        (8 * HOUR + 59 * MINUTE, "8h"),
        (2 * DAY - MS, "47h"),
        (2 * DAY, "2d"),
        (2 * DAY + HOUR, "2d1h"),
        (8 * DAY - MS, "7d23h"),
        (8 * DAY, "8d"),
        (8 * DAY + 23 * HOUR, "8d"),
        (2 * 365 * DAY - MS, "729d"),
        (2 * 365 * DAY, "2y"),
        (2 * 365 * DAY + 23 * HOUR, "2y"),
        (2 * 365 * DAY + 23 * HOUR + 59 * MINUTE, "2y"),
        (2 * 365 * DAY + DAY - MS, "2y"),
        (2 * 365 * DAY + DAY, "2y1d"),
        (3 * 365 * DAY, "3y"),
        (4 * 365 * DAY, "4y"),
        (5 * 365 * DAY, "5y"),
        (6 * 365 * DAY, "6y"),
        (7 * 365 * DAY, "7y"),
        (8 * 365 * DAY - MS, "7y364d"),
        (8 * 365 * DAY, "8y"),
        (8 * 365 * DAY + 364 * DAY, "8y"),
        (9 * 365 * DAY, "9y"),
        # a little in the future is clock skew, not an error
        (-1.5, "0s"),
        (-0.5, "0s"),
        (5 * SECOND, "5s"),
        (150 * SECOND, "2m30s"),
        (3 * HOUR, "3h"),
        (4 * DAY, "4d"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert human_duration(seconds) == expected


# --- column definitions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "default", "wide"),
    [
        (
            "Pod",
            ["Name", "Ready", "Status", "Restarts", "Age"],
            ["IP", "Node", "Nominated Node", "Readiness Gates"],
        ),
        (
            "Node",
            ["Name", "Status", "Roles", "Age", "Version"],
            ["Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"],
        ),
        ("Namespace", ["Name", "Status", "Age"], []),
        (
            "Event",
            ["Last Seen", "Type", "Reason", "Object", "Message"],
            ["Subobject", "Source", "First Seen", "Count", "Name"],
        ),
        (
            "Deployment",
            ["Name", "Ready", "Up-to-date", "Available", "Age"],
            ["Containers", "Images", "Selector"],
        ),
        (
            "ReplicaSet",
            ["Name", "Desired", "Current", "Ready", "Age"],
            ["Containers", "Images", "Selector"],
        ),
        (
            "Job",
            ["Name", "Status", "Completions", "Duration", "Age"],
            ["Containers", "Images", "Selector"],
        ),
        (
            "PodDisruptionBudget",
            ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"],
            [],
        ),
        ("PriorityClass", ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"], []),
        ("Lease", ["Name", "Holder", "Age"], []),
        (
            "VerticalPodAutoscaler",
            ["Name", "Mode", "CPU", "Mem", "Provided", "Age"],
            ["MinReplicas", "OOMSeconds"],
        ),
        ("Widget", ["Name", "Age"], []),
    ],
)
def test_columns_and_priorities(kind: str, default: list[str], wide: list[str]) -> None:
    columns = column_definitions(printer(kind))
    assert [c["name"] for c in columns if c["priority"] == 0] == default
    assert [c["name"] for c in columns if c["priority"] == 1] == wide
    for c in columns:
        assert set(c) == {"name", "type", "format", "description", "priority"}
        assert c["description"]


def test_column_order_is_upstreams_including_wide_columns() -> None:
    names = [c["name"] for c in column_definitions(printer("Event"))]
    assert names == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Subobject",
        "Source",
        "Message",
        "First Seen",
        "Count",
        "Name",
    ]
    pod = column_definitions(printer("Pod"))
    assert pod[0] == {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": pod[0]["description"],
        "priority": 0,
    }
    assert pod[0]["description"].startswith("Name must be unique within a namespace.")
    types = {c["name"]: c["type"] for c in column_definitions(printer("ReplicaSet"))}
    assert types["Desired"] == "integer"
    assert {c["name"]: c["type"] for c in column_definitions(printer("PriorityClass"))}[
        "Global-Default"
    ] == "boolean"
    assert {c["name"]: c["type"] for c in column_definitions(printer("VerticalPodAutoscaler"))}[
        "Age"
    ] == "date"


def test_column_definitions_are_fresh_copies() -> None:
    column_definitions(printer("Pod"))[0]["name"] = "mutated"
    assert column_definitions(printer("Pod"))[0]["name"] == "Name"


# --- pods -----------------------------------------------------------------------------------


def pod(
    *,
    containers: int = 1,
    init: list[dict[str, Any]] | None = None,
    status: dict[str, Any] | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "creationTimestamp": ago(3 * HOUR), **metadata},
        "spec": {
            "containers": [{"name": f"c{i}", "image": "busybox"} for i in range(containers)],
            **({"initContainers": init} if init is not None else {}),
        },
        "status": status or {},
    }


def running(ready: bool = True, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "name": "c0",
        "ready": ready,
        "restartCount": restarts,
        "state": {"running": {"startedAt": ago(HOUR)}},
        **extra,
    }


def waiting(reason: str, restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "name": "c0",
        "ready": False,
        "restartCount": restarts,
        "state": {"waiting": {"reason": reason}},
        **extra,
    }


def terminated(
    reason: str = "", exit_code: int = 0, signal: int = 0, **extra: Any
) -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": exit_code}
    if reason:
        state["reason"] = reason
    if signal:
        state["signal"] = signal
    return {
        "name": "c0",
        "ready": False,
        "restartCount": 0,
        "state": {"terminated": state},
        **extra,
    }


def last_terminated(seconds_ago: float) -> dict[str, Any]:
    return {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(seconds_ago)}}


READY = {"type": "Ready", "status": "True"}
INITIALIZED = {"type": "Initialized", "status": "True"}
SIDECAR = {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
INIT = [{"name": "i0", "image": "busybox"}, {"name": "i1", "image": "busybox"}]


@pytest.mark.parametrize(
    ("name", "obj", "ready", "status", "restarts"),
    [
        (
            "running",
            pod(status={"phase": "Running", "containerStatuses": [running()]}),
            "1/1",
            "Running",
            "0",
        ),
        ("pending, nothing reported", pod(status={"phase": "Pending"}), "0/1", "Pending", "0"),
        ("no status at all", pod(), "0/1", "", "0"),
        (
            "container creating",
            pod(status={"phase": "Pending", "containerStatuses": [waiting("ContainerCreating")]}),
            "0/1",
            "ContainerCreating",
            "0",
        ),
        (
            "crash loop with last restart time",
            pod(
                status={
                    "phase": "Running",
                    "containerStatuses": [
                        waiting("CrashLoopBackOff", 3, lastState=last_terminated(5 * MINUTE))
                    ],
                }
            ),
            "0/1",
            "CrashLoopBackOff",
            "3 (5m ago)",
        ),
        (
            "restarted and running again",
            pod(
                status={
                    "phase": "Running",
                    "containerStatuses": [running(restarts=2, lastState=last_terminated(90))],
                }
            ),
            "1/1",
            "Running",
            "2 (90s ago)",
        ),
        (
            "restarts without a recorded time",
            pod(status={"phase": "Running", "containerStatuses": [running(restarts=2)]}),
            "1/1",
            "Running",
            "2",
        ),
        (
            "running but not ready",
            pod(status={"phase": "Running", "containerStatuses": [running(ready=False)]}),
            "0/1",
            "Running",
            "0",
        ),
        (
            "one of two ready",
            pod(
                containers=2,
                status={
                    "phase": "Running",
                    "containerStatuses": [running(), running(ready=False, name="c1")],
                },
            ),
            "1/2",
            "Running",
            "0",
        ),
        (
            "first init container running",
            pod(
                init=INIT,
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [running(ready=False, name="i0")],
                    "containerStatuses": [waiting("PodInitializing")],
                },
            ),
            "0/1",
            "Init:0/2",
            "0",
        ),
        (
            "second init container running",
            pod(
                init=INIT,
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [
                        terminated("Completed", name="i0"),
                        running(ready=False, name="i1"),
                    ],
                },
            ),
            "0/1",
            "Init:1/2",
            "0",
        ),
        (
            "init container waiting with PodInitializing counts as pending",
            pod(
                init=INIT,
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [waiting("PodInitializing", name="i0")],
                },
            ),
            "0/1",
            "Init:0/2",
            "0",
        ),
        (
            "init crash loop",
            pod(
                init=INIT,
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [
                        waiting("CrashLoopBackOff", 4, name="i0", lastState=last_terminated(10))
                    ],
                    "containerStatuses": [waiting("PodInitializing")],
                },
            ),
            "0/1",
            "Init:CrashLoopBackOff",
            "4 (10s ago)",
        ),
        (
            "init error",
            pod(
                init=INIT,
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [terminated("Error", 1, name="i0")],
                },
            ),
            "0/1",
            "Init:Error",
            "0",
        ),
        (
            "init exit code without reason",
            pod(
                init=INIT,
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [terminated("", 2, name="i0")],
                },
            ),
            "0/1",
            "Init:ExitCode:2",
            "0",
        ),
        (
            "init signal without reason",
            pod(
                init=INIT,
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [terminated("", 137, 9, name="i0")],
                },
            ),
            "0/1",
            "Init:Signal:9",
            "0",
        ),
        (
            "initialized pod: upstream keeps the init reason, counts main containers",
            pod(
                init=INIT,
                status={
                    "phase": "Running",
                    "conditions": [INITIALIZED],
                    "initContainerStatuses": [waiting("CrashLoopBackOff", 1, name="i0")],
                    "containerStatuses": [running()],
                },
            ),
            "1/1",
            "Init:CrashLoopBackOff",
            "0",
        ),
        (
            "completed",
            pod(status={"phase": "Succeeded", "containerStatuses": [terminated("Completed")]}),
            "0/1",
            "Completed",
            "0",
        ),
        (
            "completed container next to a running one, pod ready",
            pod(
                containers=2,
                status={
                    "phase": "Running",
                    "conditions": [READY],
                    "containerStatuses": [terminated("Completed"), running(name="c1")],
                },
            ),
            "1/2",
            "Running",
            "0",
        ),
        (
            "completed container next to a running one, pod not ready",
            pod(
                containers=2,
                status={
                    "phase": "Running",
                    "containerStatuses": [terminated("Completed"), running(name="c1")],
                },
            ),
            "1/2",
            "NotReady",
            "0",
        ),
        (
            "first container's reason wins",
            pod(
                containers=2,
                status={
                    "phase": "Running",
                    "containerStatuses": [waiting("ImagePullBackOff"), waiting("ErrImagePull")],
                },
            ),
            "0/2",
            "ImagePullBackOff",
            "0",
        ),
        (
            "oom killed",
            pod(status={"phase": "Running", "containerStatuses": [terminated("OOMKilled", 137)]}),
            "0/1",
            "OOMKilled",
            "0",
        ),
        (
            "exit code without reason",
            pod(status={"phase": "Failed", "containerStatuses": [terminated("", 3)]}),
            "0/1",
            "ExitCode:3",
            "0",
        ),
        (
            "signal without reason",
            pod(status={"phase": "Failed", "containerStatuses": [terminated("", 143, 15)]}),
            "0/1",
            "Signal:15",
            "0",
        ),
        (
            "evicted",
            pod(status={"phase": "Failed", "reason": "Evicted", "message": "low on memory"}),
            "0/1",
            "Evicted",
            "0",
        ),
        (
            "terminating",
            pod(
                status={"phase": "Running", "containerStatuses": [running()]},
                deletionTimestamp=ago(5),
            ),
            "1/1",
            "Terminating",
            "0",
        ),
        (
            "deleted after finishing is not terminating",
            pod(
                status={"phase": "Succeeded", "containerStatuses": [terminated("Completed")]},
                deletionTimestamp=ago(5),
            ),
            "0/1",
            "Completed",
            "0",
        ),
        (
            "node lost and deleted",
            pod(
                status={"phase": "Running", "reason": "NodeLost", "containerStatuses": [running()]},
                deletionTimestamp=ago(5),
            ),
            "1/1",
            "Unknown",
            "0",
        ),
        (
            "node lost",
            pod(
                status={"phase": "Running", "reason": "NodeLost", "containerStatuses": [running()]}
            ),
            "1/1",
            "NodeLost",
            "0",
        ),
        (
            "scheduling gated",
            pod(
                status={
                    "phase": "Pending",
                    "conditions": [
                        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
                    ],
                }
            ),
            "0/1",
            "SchedulingGated",
            "0",
        ),
        (
            "sidecar counts as a container",
            pod(
                init=[SIDECAR],
                status={
                    "phase": "Running",
                    "conditions": [INITIALIZED, READY],
                    "initContainerStatuses": [
                        running(
                            name="proxy", started=True, restarts=1, lastState=last_terminated(30)
                        )
                    ],
                    "containerStatuses": [running()],
                },
            ),
            "2/2",
            "Running",
            "1 (30s ago)",
        ),
        (
            "sidecar not started yet",
            pod(
                init=[SIDECAR, INIT[0]],
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [
                        running(name="proxy", ready=False, started=False),
                        waiting("PodInitializing", name="i0"),
                    ],
                },
            ),
            "0/2",
            "Init:0/2",
            "0",
        ),
        (
            "sidecar started, regular init container next",
            pod(
                init=[SIDECAR, INIT[0]],
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [
                        running(name="proxy", started=True),
                        running(name="i0", ready=False),
                    ],
                },
            ),
            "1/2",
            "Init:1/2",
            "0",
        ),
    ],
)
def test_pod_ready_status_restarts(
    name: str, obj: dict[str, Any], ready: str, status: str, restarts: str
) -> None:
    row = by_name("Pod", obj)
    assert (row["Ready"], row["Status"], row["Restarts"]) == (ready, status, restarts), name
    assert row["Name"] == "p"
    assert row["Age"] == "3h"


def test_pod_restarts_use_latest_finish_across_containers() -> None:
    obj = pod(
        containers=2,
        status={
            "phase": "Running",
            "containerStatuses": [
                running(restarts=1, lastState=last_terminated(2 * HOUR)),
                running(name="c1", restarts=2, lastState=last_terminated(20 * MINUTE)),
            ],
        },
    )
    assert by_name("Pod", obj)["Restarts"] == "3 (20m ago)"


def test_pod_wide_cells() -> None:
    obj = pod(status={"phase": "Running", "containerStatuses": [running()]})
    assert cells("Pod", obj)[5:] == ["<none>", "<none>", "<none>", "<none>"]
    obj["spec"]["nodeName"] = "node-a"
    obj["spec"]["readinessGates"] = [{"conditionType": "a"}, {"conditionType": "b"}]
    obj["status"].update(
        podIP="10.0.0.2",
        podIPs=[{"ip": "10.0.0.1"}],
        nominatedNodeName="node-b",
        conditions=[{"type": "a", "status": "True"}, {"type": "b", "status": "False"}],
    )
    assert cells("Pod", obj)[5:] == ["10.0.0.1", "node-a", "node-b", "1/2"]
    del obj["status"]["podIPs"]
    assert cells("Pod", obj)[5] == "10.0.0.2"


def test_pod_age_unknown_without_creation_timestamp() -> None:
    obj = pod()
    del obj["metadata"]["creationTimestamp"]
    assert by_name("Pod", obj)["Age"] == "<unknown>"


def test_finished_pods_carry_a_completed_row_condition() -> None:
    done = pod(status={"phase": "Succeeded"})
    failed = pod(status={"phase": "Failed"})
    live = pod(status={"phase": "Running"})
    rows = to_table(printer("Pod"), [done, failed, live], now=NOW)["rows"]
    assert rows[0]["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]
    assert rows[1]["conditions"][0]["reason"] == "Failed"
    assert "conditions" not in rows[2]


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


TEMPLATE = {
    "spec": {
        "containers": [
            {"name": "app", "image": "python:3.11"},
            {"name": "sidecar", "image": "envoy:1"},
        ]
    }
}


def test_deployment() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "creationTimestamp": ago(2 * DAY)},
        "spec": {
            "replicas": 3,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
            },
            "template": TEMPLATE,
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    }
    assert cells("Deployment", obj) == [
        "web",
        "2/3",
        3,
        2,
        "2d",
        "app,sidecar",
        "python:3.11,envoy:1",
        "app=web,tier in (a,b)",
    ]
    obj["spec"]["selector"] = {"matchExpressions": [{"key": "x", "operator": "Bogus"}]}
    del obj["spec"]["replicas"]
    obj["status"] = {}
    row = cells("Deployment", obj)
    assert row[1:4] == ["0/1", 0, 0]
    assert row[-1] == "<invalid>"


def test_replica_set() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "web-5d8f", "creationTimestamp": ago(5 * HOUR)},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
        "status": {"replicas": 1},
    }
    assert cells("ReplicaSet", obj) == [
        "web-5d8f",
        0,
        1,
        0,
        "5h",
        "app,sidecar",
        "python:3.11,envoy:1",
        "app=web",
    ]
    obj["spec"]["selector"] = {}
    assert cells("ReplicaSet", obj)[-1] == "<none>"


def job(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "train", "creationTimestamp": ago(HOUR)},
        "spec": {
            "completions": 1,
            "parallelism": 1,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
            "template": {"spec": {"containers": [{"name": "t", "image": "py"}]}},
        },
        "status": status,
    }


@pytest.mark.parametrize(
    ("obj", "status", "completions", "duration"),
    [
        (job(), "Running", "0/1", ""),
        (job(startTime=ago(20 * MINUTE), active=1), "Running", "0/1", "20m"),
        (
            job(
                startTime=ago(50 * MINUTE),
                completionTime=ago(5 * MINUTE),
                succeeded=1,
                conditions=[{"type": "Complete", "status": "True"}],
            ),
            "Complete",
            "1/1",
            "45m",
        ),
        (
            job(startTime=ago(90), failed=3, conditions=[{"type": "Failed", "status": "True"}]),
            "Failed",
            "0/1",
            "90s",
        ),
        (job(conditions=[{"type": "Suspended", "status": "True"}]), "Suspended", "0/1", ""),
        (job(conditions=[{"type": "Suspended", "status": "False"}]), "Running", "0/1", ""),
        (
            job(conditions=[{"type": "FailureTarget", "status": "True"}]),
            "FailureTarget",
            "0/1",
            "",
        ),
    ],
)
def test_job(obj: dict[str, Any], status: str, completions: str, duration: str) -> None:
    row = by_name("Job", obj)
    assert (row["Status"], row["Completions"], row["Duration"]) == (status, completions, duration)
    assert row["Containers"] == "t"
    assert row["Selector"] == "batch.kubernetes.io/controller-uid=u1"


def test_job_completions_and_terminating() -> None:
    obj = job(succeeded=2)
    del obj["spec"]["completions"]
    obj["spec"]["parallelism"] = 4
    assert by_name("Job", obj)["Completions"] == "2/1 of 4"
    obj["spec"]["parallelism"] = 1
    assert by_name("Job", obj)["Completions"] == "2/1"
    obj["metadata"]["deletionTimestamp"] = ago(1)
    assert by_name("Job", obj)["Status"] == "Terminating"
    obj["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    assert by_name("Job", obj)["Status"] == "Complete"


def test_pod_disruption_budget() -> None:
    obj = {
        "metadata": {"name": "web-pdb", "creationTimestamp": ago(30)},
        "spec": {"minAvailable": 2},
        "status": {"disruptionsAllowed": 1},
    }
    assert cells("PodDisruptionBudget", obj) == ["web-pdb", "2", "N/A", 1, "30s"]
    obj["spec"] = {"maxUnavailable": "25%"}
    obj["status"] = {}
    assert cells("PodDisruptionBudget", obj) == ["web-pdb", "N/A", "25%", 0, "30s"]


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


def test_unknown_kind_gets_name_and_age() -> None:
    obj = {"metadata": {"name": "cfg", "creationTimestamp": ago(45 * DAY)}}
    assert cells("Widget", obj) == ["cfg", "45d"]
    assert [c["name"] for c in column_definitions(printer("Widget"))] == ["Name", "Age"]


@pytest.mark.parametrize(
    "kind",
    [
        "Pod",
        "Node",
        "Namespace",
        "Event",
        "Deployment",
        "ReplicaSet",
        "Job",
        "PodDisruptionBudget",
        "PriorityClass",
        "Lease",
        "VerticalPodAutoscaler",
        "Widget",
    ],
)
def test_every_printer_survives_an_empty_object(kind: str) -> None:
    row = cells(kind, {})
    assert len(row) == len(column_definitions(printer(kind)))


# --- the Table envelope ---------------------------------------------------------------------


def test_table_envelope_with_partial_object_metadata() -> None:
    a = pod(status={"phase": "Running"}, resourceVersion="7", labels={"app": "web"})
    b = pod(status={"phase": "Pending"}, name="q")
    table = to_table(
        printer("Pod"),
        [a, b],
        now=NOW,
        list_metadata={"resourceVersion": "99", "continue": "", "remainingItemCount": 3},
    )
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "99", "remainingItemCount": 3}
    assert table["columnDefinitions"] == column_definitions(printer("Pod"))
    assert [r["cells"][0] for r in table["rows"]] == ["p", "q"]
    assert table["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": a["metadata"],
    }


def test_table_include_object_modes() -> None:
    obj = pod(resourceVersion="5")
    full = to_table(printer("Pod"), [obj], now=NOW, include_object="Object")
    assert full["rows"][0]["object"] == obj
    assert full["metadata"] == {"resourceVersion": "5"}  # a GET reports the object's version
    none = to_table(printer("Pod"), [obj], now=NOW, include_object="None")
    assert none["rows"][0]["object"] is None
    assert none["rows"][0]["cells"] == full["rows"][0]["cells"]


def test_empty_list_and_naive_now() -> None:
    table = to_table(
        printer("Node"), [], now=NOW.replace(tzinfo=None), list_metadata={"resourceVersion": "1"}
    )
    assert table["rows"] == []
    assert table["metadata"] == {"resourceVersion": "1"}
    obj = {"metadata": {"name": "n", "creationTimestamp": ago(HOUR)}}
    assert (
        to_table(printer("Lease"), [obj], now=NOW.replace(tzinfo=None))["rows"][0]["cells"][2]
        == "60m"
    )


def test_to_table_does_not_mutate_objects() -> None:
    obj = pod(status={"phase": "Succeeded", "containerStatuses": [terminated("Completed")]})
    snapshot = repr(obj)
    to_table(printer("Pod"), [obj], now=NOW, include_object="Object")
    assert repr(obj) == snapshot
