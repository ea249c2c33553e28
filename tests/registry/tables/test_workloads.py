"""Deployments, ReplicaSets, StatefulSets, DaemonSets, ControllerRevisions, Jobs, CronJobs and
PodDisruptionBudgets, as upstream prints them."""

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


def test_stateful_set() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "creationTimestamp": ago(5 * MINUTE)},
        "spec": {"replicas": 3, "template": TEMPLATE},
        "status": {"replicas": 3, "readyReplicas": 2},
    }
    assert by_name("StatefulSet", obj) == {
        "Name": "web",
        "Ready": "2/3",
        "Age": "5m",
        "Containers": "app,sidecar",
        "Images": "python:3.11,envoy:1",
    }
    obj["status"] = {}
    assert cells("StatefulSet", obj)[1] == "0/3"


def test_daemon_set() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "agent", "creationTimestamp": ago(3 * HOUR)},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "spec": {**TEMPLATE["spec"], "nodeSelector": {"zone": "b", "disk": "ssd"}}
            },
        },
        "status": {
            "desiredNumberScheduled": 3,
            "currentNumberScheduled": 3,
            "numberReady": 2,
            "updatedNumberScheduled": 1,
            "numberAvailable": 2,
        },
    }
    assert by_name("DaemonSet", obj) == {
        "Name": "agent",
        "Desired": 3,
        "Current": 3,
        "Ready": 2,
        "Up-to-date": 1,
        "Available": 2,
        "Node Selector": "disk=ssd,zone=b",
        "Age": "3h",
        "Containers": "app,sidecar",
        "Images": "python:3.11,envoy:1",
        "Selector": "app=agent",
    }
    del obj["spec"]["template"]["spec"]["nodeSelector"]
    del obj["spec"]["selector"]
    obj["status"] = {}
    row = by_name("DaemonSet", obj)
    assert (row["Node Selector"], row["Selector"], row["Desired"]) == ("<none>", "<none>", 0)


def test_controller_revision() -> None:
    obj: dict[str, Any] = {
        "metadata": {
            "name": "web-7d9c",
            "creationTimestamp": ago(DAY),
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1"},
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": "web",
                    "uid": "2",
                    "controller": True,
                },
            ],
        },
        "revision": 4,
        "data": {},
    }
    assert cells("ControllerRevision", obj) == ["web-7d9c", "statefulset.apps/web", 4, "24h"]
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "3", "controller": True}
    ]
    assert cells("ControllerRevision", obj)[1] == "thing/t"
    del obj["metadata"]["ownerReferences"]
    assert cells("ControllerRevision", obj)[1] == "<none>"


def test_cron_job() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "tick", "creationTimestamp": ago(2 * DAY)},
        "spec": {
            "schedule": "*/5 * * * *",
            "timeZone": "Europe/Paris",
            "suspend": False,
            "jobTemplate": {"spec": {"template": TEMPLATE}},
        },
        "status": {
            "active": [{"name": "tick-1"}, {"name": "tick-2"}],
            "lastScheduleTime": ago(90),
        },
    }
    assert by_name("CronJob", obj) == {
        "Name": "tick",
        "Schedule": "*/5 * * * *",
        "Timezone": "Europe/Paris",
        "Suspend": "False",
        "Active": 2,
        "Last Schedule": "90s",
        "Age": "2d",
        "Containers": "app,sidecar",
        "Images": "python:3.11,envoy:1",
        "Selector": "<none>",
    }
    del obj["spec"]["timeZone"]
    del obj["spec"]["suspend"]
    obj["status"] = {}
    row = by_name("CronJob", obj)
    assert (row["Timezone"], row["Suspend"], row["Active"], row["Last Schedule"]) == (
        "<none>",
        "<unset>",
        0,
        "<none>",
    )
