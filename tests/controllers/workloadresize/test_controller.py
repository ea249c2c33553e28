"""The workload-resize controller on its own (``--controllers=workload-resize``, as on a real
cluster where upstream's controllers own the workloads), the test playing the kubelet."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from inplace.api.timestamps import rfc3339
from inplace.client import EVENTS, JOBS, NODES, PODS, STATEFULSETS, VERTICALPODAUTOSCALERS, Client
from inplace.controllers.workloadresize.controller import at_update_revision, sized_by_vpa
from inplace.controllers.workloadresize.model import CONDITION
from tests.controllers.conftest import Harness
from tests.poll import await_until

RESOURCES = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
BIGGER = {"requests": {"cpu": "200m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}


def job(name: str, *, policy: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if policy:
        meta["annotations"] = {"inplace.dev/resize-policy": policy}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "metadata": meta,
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": copy.deepcopy(RESOURCES)}
                    ],
                },
            },
        },
    }


def owned_pod(owner: dict[str, Any], index: int) -> dict[str, Any]:
    """What upstream's job controller would have made (this test runs no job controller)."""
    template = owner["spec"]["template"]
    meta = owner["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-{index}",
            "namespace": "default",
            "labels": dict(template["metadata"].get("labels") or {}),
            "annotations": dict(template["metadata"].get("annotations") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": copy.deepcopy(template["spec"]),
    }


async def report(client: Client, name: str, *, pending: str | None = None) -> None:
    """Play the kubelet: the pod runs at its spec's resources, or its resize waits."""
    pod = await client.get(PODS, name, namespace="default")
    now = rfc3339()
    container = pod["spec"]["containers"][0]
    resources = container.get("resources") or {}
    conditions: list[dict[str, Any]] = [
        {"type": "Ready", "status": "True", "lastTransitionTime": now}
    ]
    status_resources = resources
    if pending is not None:
        conditions.append(
            {
                "type": "PodResizePending",
                "status": "True",
                "reason": pending,
                "message": f"the test says {pending}",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        )
        status_resources = RESOURCES
    status = {
        "phase": "Running",
        "conditions": conditions,
        "containerStatuses": [
            {
                "name": "main",
                "image": "busybox",
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
                "allocatedResources": status_resources.get("requests"),
                "resources": status_resources,
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


async def pods_resources(client: Client, names: list[str]) -> list[Any]:
    out = []
    for name in names:
        pod = await client.get(PODS, name, namespace="default")
        out.append(pod["spec"]["containers"][0]["resources"])
    return out


async def condition(client: Client, name: str) -> dict[str, Any] | None:
    j = await client.get(JOBS, name, namespace="default")
    for c in (j.get("status") or {}).get("conditions") or ():
        if c["type"] == CONDITION:
            return dict(c)
    return None


async def test_a_template_change_resizes_the_running_pods(harness: Harness) -> None:
    client = harness.client
    created = await client.create(JOBS, job("work"))
    names = []
    for i in range(2):
        pod = await client.create(PODS, owned_pod(created, i))
        names.append(pod["metadata"]["name"])
        await report(client, pod["metadata"]["name"])
    await harness.start("workload-resize")
    await client.patch(
        JOBS,
        "work",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "resources": BIGGER}]}}}},
        patch_type="strategic",
        namespace="default",
    )

    async def patched() -> bool:
        return await pods_resources(client, names) == [BIGGER, BIGGER]

    await await_until(patched, what="both pods' specs resized")

    async def in_progress() -> bool:
        cond = await condition(client, "work")
        return cond is not None and cond["reason"] == "ResizeInProgress"

    await await_until(in_progress, what="PodsResized False while the kubelet has not resized")
    for name in names:
        await report(client, name)  # the kubelet applied the resize

    async def done() -> bool:
        cond = await condition(client, "work")
        return cond is not None and cond["status"] == "True"

    await await_until(done, what="PodsResized True")
    cond = await condition(client, "work")
    assert cond is not None
    assert cond["message"] == "2/2 pods at the template's resources (2 resized in place, 0 moved)"
    uids = [(await client.get(PODS, n, namespace="default"))["metadata"]["uid"] for n in names]
    assert len(set(uids)) == 2


async def test_a_younger_vpa_does_not_keep_the_pods_of_an_older_off_one(
    harness: Harness,
) -> None:
    """Two VPAs on one Job: the older, ``Off``, controls its pods (the shared rule), so the
    template change resizes them although the younger one is ``Auto``."""
    client = harness.client
    created = await client.create(JOBS, job("covered"))
    for vpa_name, mode in (("older", "Off"), ("younger", "Auto")):
        await client.create(
            VERTICALPODAUTOSCALERS,
            {
                "apiVersion": "autoscaling.k8s.io/v1",
                "kind": "VerticalPodAutoscaler",
                "metadata": {"name": vpa_name, "namespace": "default"},
                "spec": {
                    "targetRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "covered"},
                    "updatePolicy": {"updateMode": mode},
                },
            },
        )
    pod = await client.create(PODS, owned_pod(created, 0))
    name = pod["metadata"]["name"]
    await report(client, name)
    await harness.start("workload-resize")
    await client.patch(
        JOBS,
        "covered",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "resources": BIGGER}]}}}},
        patch_type="strategic",
        namespace="default",
    )

    async def patched() -> bool:
        return await pods_resources(client, [name]) == [BIGGER]

    await await_until(patched, what="the pod resized to the template under an older Off VPA")


async def test_an_in_place_preferred_pod_that_waits_too_long_is_replaced(harness: Harness) -> None:
    client = harness.client
    await client.create(
        NODES,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "roomy"},
            "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}},
        },
    )
    created = await client.create(JOBS, job("mover", policy="InPlacePreferred"))
    stuck = await client.create(PODS, owned_pod(created, 0))
    waiting = await client.create(PODS, owned_pod(created, 1))
    for pod in (stuck, waiting):
        await report(client, pod["metadata"]["name"])
    await harness.start("workload-resize", resize_replace_after=0.5)
    await client.patch(
        JOBS,
        "mover",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "resources": BIGGER}]}}}},
        patch_type="strategic",
        namespace="default",
    )

    async def patched() -> bool:
        names = [stuck["metadata"]["name"], waiting["metadata"]["name"]]
        return await pods_resources(client, names) == [BIGGER, BIGGER]

    await await_until(patched, what="resize patches sent")
    await report(client, stuck["metadata"]["name"], pending="Infeasible")
    await report(client, waiting["metadata"]["name"])

    async def replaced() -> bool:
        pods = await harness.pods()
        return stuck["metadata"]["name"] not in {p["metadata"]["name"] for p in pods}

    await await_until(replaced, what="the pod that waited too long evicted")

    async def counted() -> bool:
        cond = await condition(client, "mover")
        return cond is not None and cond["message"] == (
            "1/1 pods at the template's resources (1 resized in place, 1 moved)"
        )

    await await_until(counted, what="the move counted")


# -- which pods a VPA sizes --------------------------------------------------------------------

SELECTOR = {"matchLabels": {"app": "web"}}
WORKLOAD_OBJECTS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("apps", "Deployment", "web"): {"metadata": {"name": "web"}, "spec": {"selector": SELECTOR}},
    ("apps", "ReplicaSet", "web-1"): {
        "metadata": {
            "name": "web-1",
            "ownerReferences": [{"kind": "Deployment", "name": "web", "controller": True}],
        },
        "spec": {"selector": SELECTOR},
    },
    ("apps", "ReplicaSet", "orphan-1"): {
        "metadata": {
            "name": "orphan-1",
            "ownerReferences": [{"kind": "Deployment", "name": "gone", "controller": True}],
        },
        "spec": {"selector": SELECTOR},
    },
}


def workloads(group: str, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
    return WORKLOAD_OBJECTS.get((group, kind, name)) if namespace == "default" else None


def a_vpa(
    target: str,
    mode: str = "Auto",
    *,
    name: str = "vpa",
    namespace: str = "default",
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "updatePolicy": {"updateMode": mode},
        },
    }


def web_pod(replica_set: str = "web-1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p",
            "namespace": "default",
            "labels": {"app": "web"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": replica_set, "controller": True}],
        },
    }


@pytest.mark.parametrize(
    ("pod", "vpas", "sized"),
    [
        (web_pod(), [a_vpa("web")], True),
        (web_pod(), [a_vpa("web", "Initial")], True),
        (web_pod(), [a_vpa("web", "Off")], False),
        (web_pod("orphan-1"), [a_vpa("gone")], False),
        (
            web_pod(),
            [a_vpa("web", name="a"), a_vpa("web", "Off", name="b", created="2025-01-01T00:00:00Z")],
            False,
        ),
        (
            web_pod(),
            [a_vpa("web", "Off", name="a"), a_vpa("web", name="b", created="2025-01-01T00:00:00Z")],
            True,
        ),
        (web_pod(), [a_vpa("web", namespace="elsewhere")], False),
    ],
    ids=[
        "auto",
        "initial",
        "off",
        "target missing",
        "the oldest is off",
        "the oldest sizes",
        "other namespace",
    ],
)
def test_sized_by_vpa_follows_the_controlling_vpa(
    pod: dict[str, Any], vpas: list[dict[str, Any]], sized: bool
) -> None:
    """The shared rule (``vpa_targets.controlling_vpa``), where the controller used to skip a
    workload that any VPA not ``Off`` named in its targetRef."""
    assert sized_by_vpa(pod, vpas, workloads) is sized


def stateful_set(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 3,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": copy.deepcopy(RESOURCES)}
                    ]
                },
            },
        },
    }


async def test_a_stateful_set_resizes_only_the_pods_at_its_update_revision(
    harness: Harness,
) -> None:
    """As upstream's StatefulSet controller leaves them: db-0 and db-1 at the update revision
    (made from it, or relabelled to it by the in-place rule), db-2 held at the old one by a
    partition. A resources change resizes the first two and leaves db-2 at its size."""
    client = harness.client
    created = await client.create(STATEFULSETS, stateful_set("db"))
    await client.patch(
        STATEFULSETS,
        "db",
        {"status": {"replicas": 3, "updateRevision": "db-new", "currentRevision": "db-old"}},
        namespace="default",
        subresource="status",
    )
    for index, revision in enumerate(("db-new", "db-new", "db-old")):
        pod = owned_pod(created, index)
        pod["metadata"]["ownerReferences"][0].update(apiVersion="apps/v1", kind="StatefulSet")
        pod["metadata"]["labels"]["controller-revision-hash"] = revision
        await client.create(PODS, pod)
        await report(client, pod["metadata"]["name"])
    await harness.start("workload-resize")
    await client.patch(
        STATEFULSETS,
        "db",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "resources": BIGGER}]}}}},
        patch_type="strategic",
        namespace="default",
    )
    names = ["db-0", "db-1", "db-2"]

    async def patched() -> bool:
        return await pods_resources(client, names) == [BIGGER, BIGGER, RESOURCES]

    await await_until(patched, what="db-0 and db-1 resized, db-2 kept at its revision's size")
    for name in names[:2]:
        await report(client, name)

    async def done() -> bool:
        sts = await client.get(STATEFULSETS, "db", namespace="default")
        for c in (sts.get("status") or {}).get("conditions") or ():
            if c["type"] == CONDITION:
                return bool(c["status"] == "True")
        return False

    await await_until(done, what="PodsResized True on the StatefulSet")
    assert await pods_resources(client, ["db-2"]) == [RESOURCES]

    async def told() -> list[str]:
        events = await client.list(EVENTS, namespace="default")
        return [
            e["message"]
            for e in events["items"]
            if e["reason"] == "ResizeRequested" and e["involvedObject"]["name"] == "db-0"
        ]

    (message,) = await await_until(told, what="an event on db-0")
    assert message.startswith("Resizing in place to the template of StatefulSet db: main (")
    assert "limits memory=256Mi" in message


def test_a_pod_is_at_the_update_revision_as_its_controller_counts_it() -> None:
    sts = {"status": {"updateRevision": "db-2"}}
    ds = {"metadata": {"annotations": {"deprecated.daemonset.template.generation": "3"}}}

    def labelled(**labels: str) -> dict[str, Any]:
        return {"metadata": {"labels": labels}}

    assert at_update_revision("StatefulSet", sts, labelled(**{"controller-revision-hash": "db-2"}))
    assert not at_update_revision(
        "StatefulSet", sts, labelled(**{"controller-revision-hash": "db-1"})
    )
    assert not at_update_revision("StatefulSet", {}, labelled(**{"controller-revision-hash": ""}))
    assert at_update_revision("DaemonSet", ds, labelled(**{"pod-template-generation": "3"}))
    assert not at_update_revision("DaemonSet", ds, labelled(**{"pod-template-generation": "2"}))
    assert at_update_revision("ReplicaSet", {}, labelled())
