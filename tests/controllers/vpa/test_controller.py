"""The live VPA controller against the real API server, the test playing the kubelet.

No node agent runs here, so no usage arrives: what drives the recommender is what a kubelet
reports in pod status, an OOM kill or a pause at the memory limit, which is exactly the
reaction path (record the bump, write the recommendation, resize in place at once)."""

from __future__ import annotations

from typing import Any

from inplace.api.annotations import MEMORY_FLOOR, MEMORY_FLOOR_TIME, ORIGINAL_RESOURCES
from inplace.api.memorypause import paused_message
from inplace.api.quantity import Quantity
from inplace.api.timestamps import rfc3339
from inplace.client import (
    EVENTS,
    NODES,
    PODS,
    REPLICASETS,
    VERTICALPODAUTOSCALERCHECKPOINTS,
    VERTICALPODAUTOSCALERS,
    APINotFoundError,
    Client,
)
from inplace.controllers.vpa.controller import _lent_to_the_rescuer
from tests.controllers.conftest import Harness
from tests.poll import await_until

FAST = {
    "vpa_recommender_interval": 0.2,
    "vpa_updater_interval": 0.2,
    "vpa_checkpoint_interval": 0.3,
    "vpa_metrics_interval": 0.5,
}
REQUESTS = {"cpu": "100m", "memory": "100Mi"}


async def setup(
    client: Client,
    name: str,
    mode: str = "InPlaceOrRecreate",
    recommenders: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A node, a ReplicaSet with one running pod on it, and a VPA for the ReplicaSet (naming
    ``recommenders`` when given)."""
    try:
        await client.get(NODES, "n1")
    except APINotFoundError:
        await client.create(
            NODES,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n1"},
                "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}},
            },
        )
    labels = {"app": name}
    rs = await client.create(
        REPLICASETS,
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "app", "image": "x"}]},
                },
            },
        },
    )
    pod = await client.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-1",
                "namespace": "default",
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": name,
                        "uid": rs["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "nodeName": "n1",
                "containers": [
                    {
                        "name": "app",
                        "image": "x",
                        "resources": {"requests": REQUESTS, "limits": {"memory": "200Mi"}},
                    }
                ],
            },
        },
    )
    await client.create(
        VERTICALPODAUTOSCALERS,
        {
            "apiVersion": "autoscaling.k8s.io/v1",
            "kind": "VerticalPodAutoscaler",
            "metadata": {"name": f"{name}-vpa", "namespace": "default"},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name},
                "updatePolicy": {"updateMode": mode, "minReplicas": 1},
                **({"recommenders": recommenders} if recommenders is not None else {}),
            },
        },
    )
    return pod


async def report(
    client: Client, pod: dict[str, Any], *, oom: bool = False, paused: bool = False
) -> None:
    """Play the kubelet: running at the spec's size, after an OOM kill, or paused."""
    now = rfc3339()
    current = await client.get(PODS, pod["metadata"]["name"], namespace="default")
    status: dict[str, Any] = {
        "name": "app",
        "image": "x",
        "imageID": "",
        "ready": True,
        "restartCount": 1 if oom else 0,
        "state": {"running": {"startedAt": now}},
        "resources": current["spec"]["containers"][0]["resources"],
    }
    if oom:
        status["lastState"] = {
            "terminated": {
                "exitCode": 137,
                "reason": "OOMKilled",
                "startedAt": now,
                "finishedAt": now,
            }
        }
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": now}]
    if paused:
        conditions.append(
            {
                "type": "MemoryPaused",
                "status": "True",
                "reason": "MemoryLimitReached",
                "message": paused_message(["app"], "the test"),
                "lastTransitionTime": now,
            }
        )
    await client.patch(
        PODS,
        pod["metadata"]["name"],
        {
            "status": {
                "phase": "Running",
                "startTime": now,
                "conditions": conditions,
                "containerStatuses": [status],
            }
        },
        patch_type="strategic",
        namespace="default",
        subresource="status",
    )


async def memory_of(client: Client, name: str) -> tuple[Quantity, Quantity]:
    pod = await client.get(PODS, name, namespace="default")
    resources = pod["spec"]["containers"][0]["resources"]
    return Quantity.parse(resources["requests"]["memory"]), Quantity.parse(
        resources["limits"]["memory"]
    )


async def vpa_status(client: Client, name: str) -> dict[str, Any]:
    obj = await client.get(VERTICALPODAUTOSCALERS, name, namespace="default")
    status: dict[str, Any] = obj.get("status") or {}
    return status


async def test_an_oom_kill_is_answered_by_an_in_place_resize(harness: Harness) -> None:
    client = harness.client
    pod = await setup(client, "oom")
    await report(client, pod)
    await harness.start("vertical-pod-autoscaler", **FAST)
    await report(client, pod, oom=True)

    async def resized() -> bool:
        request, _ = await memory_of(client, "oom-1")
        return request > Quantity.parse("100Mi")

    await await_until(resized, timeout=30, what="the pod resized after the OOM kill")
    request, limit = await memory_of(client, "oom-1")
    # The bump: max(100Mi + 100Mi, 100Mi x 1.2) = 200Mi, plus the memory margin; the limit
    # keeps its 2:1 ratio to the request (RequestsAndLimits).
    assert request >= Quantity.parse("200Mi")
    assert limit.value() == 2 * request.value()
    status = await vpa_status(client, "oom-vpa")
    target = status["recommendation"]["containerRecommendations"][0]["target"]
    assert Quantity.parse(target["memory"]) == request
    provided = [c for c in status["conditions"] if c["type"] == "RecommendationProvided"]
    assert provided[0]["status"] == "True"

    async def events() -> set[str]:
        listing = await client.list(EVENTS, namespace="default")
        return {e["reason"] for e in listing["items"]}

    await await_until(
        lambda: _has(events, {"InPlaceResizedByVPA", "InPlaceResizedPod"}), what="events"
    )
    # History is checkpointed, the OOM kill's floor with it (an annotation, as upstream's
    # status has no field for it), and kept by the later writes, which patch the object.
    await await_until(
        lambda: _exists(client, "oom-vpa-app"), timeout=10, what="VerticalPodAutoscalerCheckpoint"
    )

    async def rewritten() -> bool:
        obj = await client.get(VERTICALPODAUTOSCALERCHECKPOINTS, "oom-vpa-app", namespace="default")
        return obj["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]

    first = await client.get(VERTICALPODAUTOSCALERCHECKPOINTS, "oom-vpa-app", namespace="default")
    await await_until(rewritten, timeout=10, what="the checkpoint written again")
    obj = await client.get(VERTICALPODAUTOSCALERCHECKPOINTS, "oom-vpa-app", namespace="default")
    annotations = obj["metadata"].get("annotations") or {}
    assert int(annotations[MEMORY_FLOOR]) == 200 * 2**20  # max(100Mi + 100Mi, 100Mi x 1.2)
    assert MEMORY_FLOOR_TIME in annotations


async def test_a_pause_at_the_limit_is_answered_too(harness: Harness) -> None:
    client = harness.client
    pod = await setup(client, "paused")
    await report(client, pod)
    await harness.start("vertical-pod-autoscaler", **FAST)
    await report(client, pod, paused=True)

    async def resized() -> bool:
        _, limit = await memory_of(client, "paused-1")
        return limit > Quantity.parse("200Mi")

    await await_until(resized, timeout=30, what="the paused pod's limit raised")


async def test_off_records_but_never_resizes(harness: Harness) -> None:
    client = harness.client
    pod = await setup(client, "off", mode="Off")
    await report(client, pod)
    await harness.start("vertical-pod-autoscaler", **FAST)
    await report(client, pod, oom=True)

    async def recommended() -> bool:
        recs = (await vpa_status(client, "off-vpa")).get("recommendation")
        return bool(recs)

    await await_until(recommended, timeout=30, what="a recommendation")
    request, _ = await memory_of(client, "off-1")
    assert request == Quantity.parse("100Mi")


async def test_a_missing_target_is_config_unsupported(harness: Harness) -> None:
    client = harness.client
    await client.create(
        VERTICALPODAUTOSCALERS,
        {
            "apiVersion": "autoscaling.k8s.io/v1",
            "kind": "VerticalPodAutoscaler",
            "metadata": {"name": "lost", "namespace": "default"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gone"}},
        },
    )
    await harness.start("vertical-pod-autoscaler", **FAST)

    async def unsupported() -> dict[str, Any] | None:
        for cond in (await vpa_status(client, "lost")).get("conditions") or ():
            if cond["type"] == "ConfigUnsupported":
                return dict(cond)
        return None

    cond = await await_until(unsupported, timeout=30, what="ConfigUnsupported")
    assert (
        cond["message"] == "Cannot read targetRef. Reason: Deployment default/gone does not exist"
    )


async def test_a_named_recommender_acts_for_the_vpas_naming_it_alone(harness: Harness) -> None:
    """``vpa_recommender_name``: the VPA naming it is recommended for, resized and
    checkpointed; the VPA without recommenders (the default recommender's) and the one naming
    another get no status, no checkpoint and no resize, though their pods were OOM-killed."""
    client = harness.client
    others = {
        "plain": await setup(client, "plain"),
        "other": await setup(client, "other", recommenders=[{"name": "other"}]),
    }
    mine = await setup(client, "mine", recommenders=[{"name": "inplace"}])
    for pod in [*others.values(), mine]:
        await report(client, pod)
    await harness.start("vertical-pod-autoscaler", vpa_recommender_name="inplace", **FAST)
    for pod in [*others.values(), mine]:
        await report(client, pod, oom=True)

    async def resized() -> bool:
        request, _ = await memory_of(client, "mine-1")
        return request > Quantity.parse("100Mi")

    await await_until(resized, timeout=30, what="the chosen VPA's pod resized")
    await await_until(lambda: _exists(client, "mine-vpa-app"), timeout=10, what="its checkpoint")
    assert (await vpa_status(client, "mine-vpa"))["recommendation"]
    for name in others:
        assert await vpa_status(client, f"{name}-vpa") == {}
        assert not await _exists(client, f"{name}-vpa-app")
        request, _ = await memory_of(client, f"{name}-1")
        assert request == Quantity.parse("100Mi")


async def _has(events: Any, wanted: set[str]) -> bool:
    return wanted <= await events()


async def _exists(client: Client, name: str) -> bool:
    try:
        await client.get(VERTICALPODAUTOSCALERCHECKPOINTS, name, namespace="default")
    except APINotFoundError:
        return False
    return True


def test_a_donor_of_the_rescuer_is_left_alone_while_in_range() -> None:
    vpa = {
        "status": {
            "recommendation": {
                "containerRecommendations": [
                    {
                        "containerName": "app",
                        "target": {"memory": "400Mi"},
                        "lowerBound": {"memory": "200Mi"},
                        "upperBound": {"memory": "1Gi"},
                    }
                ]
            }
        }
    }

    def pod(memory: str, donor: bool) -> dict[str, Any]:
        annotations = {ORIGINAL_RESOURCES: "{}"} if donor else {}
        return {
            "metadata": {"annotations": annotations},
            "spec": {
                "containers": [{"name": "app", "resources": {"requests": {"memory": memory}}}]
            },
        }

    assert _lent_to_the_rescuer(pod("250Mi", donor=True), vpa)
    assert not _lent_to_the_rescuer(pod("150Mi", donor=True), vpa)  # below the lower bound
    assert not _lent_to_the_rescuer(pod("250Mi", donor=False), vpa)
