"""The ReplicaSet controller: slow-start batches and status counts (pure), then against the
API server: replicas made exactly once, scale-down order, adoption and release."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from inplace.client import PODS, REPLICASETS, Client
from inplace.client.errors import APIConnectionError
from inplace.controllers.replicaset import (
    ReplicaSetController,
    replica_set_status,
    slow_start_batches,
)
from tests.controllers.conftest import Harness, names, set_phase
from tests.poll import await_until

T0 = 1767225600.0  # 2026-01-01T00:00:00Z


@pytest.mark.parametrize(
    ("count", "batches"),
    [(0, []), (1, [1]), (3, [1, 2]), (10, [1, 2, 4, 3]), (500, [1, 2, 4, 8, 16, 32, 64, 128, 245])],
)
def test_slow_start_batches(count: int, batches: list[int]) -> None:
    assert slow_start_batches(count) == batches
    assert sum(slow_start_batches(count)) == count


def pod(labels: dict[str, str], ready_at: str | None) -> dict[str, Any]:
    conditions = []
    if ready_at is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": ready_at})
    return {"metadata": {"labels": labels}, "status": {"conditions": conditions}}


def test_status_counts_labelled_ready_and_available_pods() -> None:
    rs = {
        "metadata": {"generation": 3},
        "spec": {
            "replicas": 4,
            "minReadySeconds": 10,
            "template": {"metadata": {"labels": {"app": "web", "tier": "a"}}},
        },
        "status": {},
    }
    pods = [
        pod({"app": "web", "tier": "a"}, "2026-01-01T00:00:00Z"),  # available
        pod({"app": "web", "tier": "a"}, "2026-01-01T00:00:55Z"),  # ready, not long enough
        pod({"app": "web"}, "2026-01-01T00:00:00Z"),  # not fully labelled
        pod({"app": "web", "tier": "a"}, None),
    ]
    status = replica_set_status(rs, pods, now=T0 + 60, failure=None, failure_since="")
    assert status == {
        "replicas": 4,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 2,
        "observedGeneration": 3,
    }


def test_a_failure_sets_replica_failure_and_success_removes_it() -> None:
    rs: dict[str, Any] = {"metadata": {}, "spec": {"replicas": 1}, "status": {}}
    failed = replica_set_status(
        rs, [], now=T0, failure=("FailedCreate", "quota"), failure_since="T"
    )
    assert failed["conditions"] == [
        {
            "type": "ReplicaFailure",
            "status": "True",
            "lastTransitionTime": "T",
            "reason": "FailedCreate",
            "message": "quota",
        }
    ]
    rs["status"] = failed
    assert "conditions" not in replica_set_status(rs, [], now=T0, failure=None, failure_since="")


# -- against the API server ----------------------------------------------------------------


def replica_set(name: str, replicas: int, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            },
        },
    }


async def record_creations(client: Client, selector: str, seen: set[str]) -> None:
    """Every pod uid ever created that ``selector`` matches (a watch from now on)."""
    async for event in client.watch(
        PODS, namespace="default", resource_version=None, label_selector=selector
    ):
        if event.type == "ADDED":
            seen.add(event.object["metadata"]["uid"])


async def test_replicas_are_created_exactly_once_and_scaled_down_least_ready_first(
    harness: Harness,
) -> None:
    client = harness.client
    created: set[str] = set()
    watcher = asyncio.create_task(record_creations(client, "app=web", created))
    await asyncio.sleep(0.1)
    await harness.start("replicaset")
    await client.create(REPLICASETS, replica_set("web", 5, {"app": "web"}))

    async def five() -> bool:
        return len(await harness.pods(selector="app=web")) == 5

    await await_until(five, what="5 pods")
    await asyncio.sleep(0.5)  # every event of the creates has been through the controller
    assert len(created) == 5, "a pod was created twice"
    pods = await harness.pods(selector="app=web")
    ready = pods[:2]
    for pod in ready:
        await set_phase(client, pod, "Running")

    async def status_ready() -> bool:
        rs = await client.get(REPLICASETS, "web", namespace="default")
        return bool(rs["status"].get("readyReplicas") == 2)

    await await_until(status_ready, what="readyReplicas 2")
    await client.patch(REPLICASETS, "web", {"spec": {"replicas": 2}}, namespace="default")

    async def two() -> bool:
        return len(await harness.pods(selector="app=web")) == 2

    await await_until(two, what="scaled down to 2")
    assert names(await harness.pods(selector="app=web")) == names(ready)

    async def observed() -> bool:
        rs = await client.get(REPLICASETS, "web", namespace="default")
        return bool(
            rs["status"].get("observedGeneration") == rs["metadata"]["generation"]
            and rs["status"]["replicas"] == 2
        )

    await await_until(observed, what="status observed the scale-down")
    assert len(created) == 5
    watcher.cancel()


async def test_orphans_are_adopted_and_mismatching_pods_released(harness: Harness) -> None:
    client = harness.client
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "orphan", "namespace": "default", "labels": {"app": "db"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    await client.create(PODS, orphan)
    await harness.start("replicaset")
    rs = await client.create(REPLICASETS, replica_set("db", 2, {"app": "db"}))

    async def adopted() -> bool:
        pods = await harness.pods(selector="app=db")
        owner = await client.get(PODS, "orphan", namespace="default")
        refs = owner["metadata"].get("ownerReferences") or []
        return len(pods) == 2 and [r["uid"] for r in refs] == [rs["metadata"]["uid"]]

    await await_until(adopted, what="the orphan adopted, one pod created")
    await client.patch(
        PODS, "orphan", {"metadata": {"labels": {"app": "other"}}}, namespace="default"
    )

    async def released() -> bool:
        pod = await client.get(PODS, "orphan", namespace="default")
        return (
            not pod["metadata"].get("ownerReferences")
            and len(await harness.pods(selector="app=db")) == 2
        )

    await await_until(released, what="released and replaced")


async def test_a_create_lost_with_the_connection_is_not_expected(harness: Harness) -> None:
    """The API server stays unreachable for longer than PodControl sends a lost create again:
    the creates fail with a connection error, and the ReplicaSet must not wait out the
    expectations' five-minute TTL for pods that were never made (found by the chaos storm: 1
    of 2 replicas for minutes)."""
    client = harness.client
    manager = await harness.start("replicaset")
    controller = manager.controllers["replicaset-controller"]
    assert isinstance(controller, ReplicaSetController)
    real_create = controller.pod_control.create
    lost = [2]

    async def flaky_create(owner: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
        if lost[0] > 0:
            lost[0] -= 1
            raise APIConnectionError("POST pods: Server disconnected")
        return await real_create(owner, pod)

    controller.pod_control.create = flaky_create  # type: ignore[method-assign]
    await client.create(REPLICASETS, replica_set("lossy", 3, {"app": "lossy"}))

    async def three() -> bool:
        return len(await harness.pods(selector="app=lossy")) == 3

    await await_until(three, timeout=60, what="3 pods despite the lost creates")
    assert lost == [0]
