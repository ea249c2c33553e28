"""The pod printer: every cell as upstream's printPod computes it, against hand-built pods."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.tables import (
    to_table,
)
from tests.api.tables.helpers import (
    HOUR,
    INIT,
    INITIALIZED,
    MINUTE,
    NOW,
    READY,
    SIDECAR,
    ago,
    by_name,
    cells,
    last_terminated,
    pod,
    printer,
    running,
    terminated,
    waiting,
)


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
