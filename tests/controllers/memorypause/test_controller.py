"""The memory-pause responder against the real API server: the test plays the node agent
(it writes the ``MemoryPaused`` condition a node would), the responder answers through
``pods/resize``."""

from __future__ import annotations

from typing import Any

from inplace.api.memorypause import paused_message
from inplace.api.timestamps import rfc3339
from inplace.client import DEPLOYMENTS, EVENTS, PODS, REPLICASETS, VERTICALPODAUTOSCALERS, Client
from tests.controllers.conftest import Harness
from tests.poll import await_until


def paused_pod(name: str, owner: str | None = None, **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "labels": {"app": owner.split("-")[0]} if owner is not None else {},
        "annotations": {
            "inplace.dev/oom-kill-disable": "true",
            "inplace.dev/memory-on-pause": "x1.5",
            **annotations,
        },
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": owner,
                "uid": f"uid-{owner}",
                "controller": True,
            }
        ]
    size = {"cpu": "100m", "memory": "100Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": "n1",
            "containers": [
                {
                    "name": "main",
                    "image": "x",
                    "command": ["sleep", "1d"],
                    "resources": {"requests": size, "limits": size},
                }
            ],
        },
    }


async def pause(client: Client, name: str) -> None:
    """Report the pod running and paused at its limit, as a node agent would."""
    now = rfc3339()
    size = {"cpu": "100m", "memory": "100Mi"}
    status = {
        "phase": "Running",
        "conditions": [
            {
                "type": "MemoryPaused",
                "status": "True",
                "reason": "MemoryLimitReached",
                "lastTransitionTime": now,
                "message": paused_message(["main"], "cgroup v1 memory.oom_control"),
            }
        ],
        "containerStatuses": [
            {
                "name": "main",
                "image": "x",
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": now}},
                "allocatedResources": size,
                "resources": {"requests": size, "limits": size},
            }
        ],
    }
    await client.patch(
        PODS,
        name,
        {"status": status},
        patch_type="strategic",
        namespace="default",
        subresource="status",
    )


async def memory_limit(client: Client, name: str) -> str:
    pod = await client.get(PODS, name, namespace="default")
    return str(pod["spec"]["containers"][0]["resources"]["limits"]["memory"])


async def reasons(client: Client, name: str) -> dict[str, str]:
    events = await client.list(EVENTS, namespace="default")
    return {
        e["reason"]: e["message"] for e in events["items"] if e["involvedObject"]["name"] == name
    }


async def test_a_paused_pod_is_bumped_through_pods_resize(harness: Harness) -> None:
    client = harness.client
    await client.create(PODS, paused_pod("spiky"), namespace="default")
    await harness.start("memory-pause")
    await pause(client, "spiky")

    async def bumped() -> bool:
        return await memory_limit(client, "spiky") == "150Mi"

    await await_until(bumped, what="the resize to 150Mi")
    pod = await client.get(PODS, "spiky", namespace="default")
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "100m", "memory": "150Mi"}
    assert pod["metadata"]["generation"] == 2  # one resize, not one per event
    messages = await await_until(lambda: reasons(client, "spiky"), what="an event")
    assert messages["MemoryBumped"] == (
        "memory limit raised for the pause: main 100Mi -> 150Mi (inplace.dev/memory-on-pause x1.5)"
    )


async def test_at_the_cap_it_says_so_and_asks_nothing(harness: Harness) -> None:
    client = harness.client
    body = paused_pod("capped", **{"inplace.dev/memory-max": "100Mi"})
    await client.create(PODS, body, namespace="default")
    await harness.start("memory-pause")
    await pause(client, "capped")

    async def warned() -> dict[str, str] | None:
        found = await reasons(client, "capped")
        return found if "MemoryMaxReached" in found else None

    messages = await await_until(warned, what="MemoryMaxReached")
    assert "inplace.dev/memory-max (100Mi)" in messages["MemoryMaxReached"]
    assert await memory_limit(client, "capped") == "100Mi"


def workload(kind: str, name: str, owner: str | None = None) -> dict[str, Any]:
    """A Deployment or ReplicaSet of no replicas selecting ``app: <name's first word>``."""
    app = name.split("-")[0]
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": owner,
                "uid": f"uid-{owner}",
                "controller": True,
            }
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": meta,
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": "main", "image": "x"}]},
            },
        },
    }


def vpa_on_deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "updatePolicy": {"updateMode": "InPlaceOrRecreate"},
        },
    }


async def test_a_pod_a_vpa_answers_for_is_left_to_it(harness: Harness) -> None:
    client = harness.client
    await client.create(DEPLOYMENTS, workload("Deployment", "web"), namespace="default")
    await client.create(REPLICASETS, workload("ReplicaSet", "web-abc", "web"), namespace="default")
    await client.create(VERTICALPODAUTOSCALERS, vpa_on_deployment("web"), namespace="default")
    # A VPA naming the top controller of "unread", a Deployment that does not exist: it
    # cannot read its target's selector, so it controls no pod and its updater never answers.
    await client.create(REPLICASETS, workload("ReplicaSet", "api-abc", "api"), namespace="default")
    await client.create(VERTICALPODAUTOSCALERS, vpa_on_deployment("api"), namespace="default")
    await client.create(PODS, paused_pod("covered", owner="web-abc"), namespace="default")
    await client.create(PODS, paused_pod("unread", owner="api-abc"), namespace="default")
    await client.create(PODS, paused_pod("alone"), namespace="default")
    manager = await harness.start("memory-pause")
    responder = manager.controllers["memory-pause"]
    await pause(client, "covered")
    await pause(client, "unread")
    await pause(client, "alone")

    async def bumped(name: str) -> bool:
        return await memory_limit(client, name) == "150Mi"

    await await_until(lambda: bumped("alone"), what="the pod no VPA covers bumped")
    await await_until(lambda: bumped("unread"), what="the pod of an unreadable target bumped")
    queue = responder.queue  # type: ignore[attr-defined]
    # Paused before "alone" (watch events keep their order), hence already looked at.
    await await_until(
        lambda: len(queue) == 0 and not queue.is_processing("default/covered"),
        what="the responder done with the covered pod",
    )
    assert await memory_limit(client, "covered") == "100Mi"

    # The VPA stops touching running pods: the responder answers from the VPA's watch event.
    off = {"spec": {"updatePolicy": {"updateMode": "Off"}}}
    await client.patch(VERTICALPODAUTOSCALERS, "web", off, namespace="default")

    async def covered_bumped() -> bool:
        return await memory_limit(client, "covered") == "150Mi"

    await await_until(covered_bumped, what="the pod bumped once its VPA is Off")
