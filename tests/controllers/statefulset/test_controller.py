"""The StatefulSet controller against the API server, the test playing the kubelet: pods made
in order with their claims, scaled down from the top, rolled out from the top down to the
partition, resized in place instead of replaced, failed pods made again, orphans adopted,
the revision history trimmed, claims handed to their pods under ``whenScaled: Delete``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from inplace.client import (
    CONTROLLERREVISIONS,
    EVENTS,
    PERSISTENTVOLUMECLAIMS,
    PODS,
    STATEFULSETS,
    APINotFoundError,
    Client,
)
from tests.controllers.conftest import Harness, names, set_phase
from tests.poll import await_until

Obj = dict[str, Any]
REVISION = "controller-revision-hash"


def container(image: str = "busybox", memory: str = "64Mi") -> Obj:
    return {
        "name": "main",
        "image": image,
        "command": ["sleep", "3600"],
        "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"memory": memory}},
    }


def statefulset(name: str = "web", replicas: int = 3, **spec: Any) -> Obj:
    body: Obj = {
        "replicas": replicas,
        "serviceName": "nginx",
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"terminationGracePeriodSeconds": 1, "containers": [container()]},
        },
    }
    body.update(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


WWW = {
    "metadata": {"name": "www"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


@contextlib.asynccontextmanager
async def kubelet(client: Client, app: str, *, ready: bool = True) -> AsyncIterator[Obj]:
    """Report every pod of ``app`` Running and Ready as it appears (unless ``ready`` is off);
    yields the names in the order they were created and deleted."""
    seen: Obj = {"created": [], "deleted": []}

    async def run() -> None:
        async for event in client.watch(
            PODS, namespace="default", resource_version=None, label_selector=f"app={app}"
        ):
            pod = event.object
            name = pod["metadata"]["name"]
            if event.type == "ADDED":
                seen["created"].append(name)
                if ready:
                    with contextlib.suppress(APINotFoundError):
                        await set_phase(client, pod, "Running")
            elif event.type == "DELETED":
                seen["deleted"].append(name)

    task = asyncio.create_task(run())
    await asyncio.sleep(0.1)
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def get_set(client: Client, name: str = "web") -> Obj:
    return await client.get(STATEFULSETS, name, namespace="default")


async def pods_of(harness: Harness, app: str = "web") -> dict[str, Obj]:
    pods = await harness.pods(selector=f"app={app}")
    return {p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}


async def settled(harness: Harness, replicas: int, app: str = "web") -> Obj:
    """The set once its status says ``replicas`` pods, all ready and at one revision."""

    async def check() -> Obj | None:
        st = (await get_set(harness.client, app)).get("status") or {}
        done = (
            st.get("replicas") == replicas
            and st.get("readyReplicas") == replicas
            and st.get("updatedReplicas") == replicas
            and st.get("currentRevision") == st.get("updateRevision")
            and len(await pods_of(harness, app)) == replicas
        )
        return st if done else None

    status: Obj = await await_until(check, what=f"{app} settled at {replicas}")
    return status


async def events(client: Client, reason: str) -> list[str]:
    result = await client.list(EVENTS, namespace="default")
    return [e["message"] for e in result["items"] if e.get("reason") == reason]


async def test_pods_are_made_in_order_each_after_its_claim(harness: Harness) -> None:
    client = harness.client
    await harness.start("statefulset")
    await client.create(STATEFULSETS, statefulset(volumeClaimTemplates=[WWW]))
    first = await await_until(lambda: pods_of(harness), what="web-0")
    assert list(first) == ["web-0"]
    pod = first["web-0"]
    labels = pod["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "web-0"
    assert labels["apps.kubernetes.io/pod-index"] == "0"
    assert labels[REVISION].startswith("web-")
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("web-0", "nginx")
    assert {"name": "www", "persistentVolumeClaim": {"claimName": "www-web-0"}} in pod["spec"][
        "volumes"
    ]
    claim = await client.get(PERSISTENTVOLUMECLAIMS, "www-web-0", namespace="default")
    assert claim["metadata"]["labels"] == {"app": "web"}
    assert "ownerReferences" not in claim["metadata"]  # Retain: nobody owns it
    # web-0 is not Running and Ready: nothing more is made.
    await asyncio.sleep(0.3)
    assert list(await pods_of(harness)) == ["web-0"]

    async with kubelet(client, "web") as seen:
        await set_phase(client, pod, "Running")
        status = await settled(harness, 3)
    assert seen["created"] == ["web-0", "web-1", "web-2"]  # web-0 listed, then made
    revisions = await client.list(CONTROLLERREVISIONS, namespace="default")
    (revision,) = revisions["items"]
    assert status["currentRevision"] == revision["metadata"]["name"]
    assert status["availableReplicas"] == 3 and status["collisionCount"] == 0
    wanted = {f"create Pod web-{i} in StatefulSet web successful" for i in range(3)}
    wanted |= {f"create Claim www-web-{i} Pod web-{i} in StatefulSet web success" for i in range(3)}
    await await_until(
        lambda: _when(events(client, "SuccessfulCreate"), lambda found: wanted <= set(found)),
        what="upstream's create events (posted in the background)",
    )


async def test_parallel_makes_every_pod_at_once(harness: Harness) -> None:
    client = harness.client
    await harness.start("statefulset")
    await client.create(STATEFULSETS, statefulset(podManagementPolicy="Parallel"))
    found = await await_until(
        lambda: _when(pods_of(harness), lambda p: len(p) == 3), what="3 pods, none ready"
    )
    assert sorted(found) == ["web-0", "web-1", "web-2"]


async def _when(awaitable: Any, test: Any) -> Any:
    value = await awaitable
    return value if test(value) else None


async def test_scale_down_removes_the_highest_ordinal_first_and_keeps_claims(
    harness: Harness,
) -> None:
    client = harness.client
    await harness.start("statefulset")
    async with kubelet(client, "web") as seen:
        await client.create(STATEFULSETS, statefulset(volumeClaimTemplates=[WWW]))
        await settled(harness, 3)
        await client.patch(STATEFULSETS, "web", {"spec": {"replicas": 1}}, namespace="default")
        await settled(harness, 1)
    assert seen["deleted"] == ["web-2", "web-1"]
    claims = await client.list(PERSISTENTVOLUMECLAIMS, namespace="default")
    assert names(claims["items"]) == ["www-web-0", "www-web-1", "www-web-2"]
    await await_until(
        lambda: _when(
            events(client, "SuccessfulDelete"),
            lambda found: "delete Pod web-2 in StatefulSet web successful" in found,
        ),
        what="upstream's delete event",
    )


async def test_a_rolling_update_replaces_from_the_top_down_to_the_partition(
    harness: Harness,
) -> None:
    client = harness.client
    await harness.start("statefulset")
    async with kubelet(client, "web") as seen:
        await client.create(STATEFULSETS, statefulset())
        before = await settled(harness, 3)
        old = await pods_of(harness)
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
        template = statefulset()["spec"]["template"]
        template["spec"]["containers"] = [container(image="busybox:2")]
        await client.patch(
            STATEFULSETS,
            "web",
            {"spec": {"template": template, "updateStrategy": strategy}},
            namespace="default",
        )

        async def partitioned() -> Obj | None:
            st = (await get_set(client)).get("status") or {}
            ok = st.get("updatedReplicas") == 2 and st.get("readyReplicas") == 3
            return st if ok and len(await pods_of(harness)) == 3 else None

        status = await await_until(partitioned, what="web-2 and web-1 updated")
    assert seen["deleted"] == ["web-2", "web-1"]
    now = await pods_of(harness)
    assert now["web-0"]["metadata"]["uid"] == old["web-0"]["metadata"]["uid"]
    assert now["web-0"]["metadata"]["labels"][REVISION] == before["currentRevision"]
    for name in ("web-1", "web-2"):
        assert now[name]["metadata"]["uid"] != old[name]["metadata"]["uid"]
        assert now[name]["metadata"]["labels"][REVISION] == status["updateRevision"]
        assert now[name]["spec"]["containers"][0]["image"] == "busybox:2"
    # The partition holds web-0 at the current revision: the rollout is not complete.
    assert status["currentRevision"] == before["currentRevision"] != status["updateRevision"]


async def test_a_resources_change_moves_the_pods_in_place(harness: Harness) -> None:
    client = harness.client
    await harness.start("statefulset")
    async with kubelet(client, "web") as seen:
        await client.create(STATEFULSETS, statefulset())
        before = await settled(harness, 3)
        old = await pods_of(harness)
        template = statefulset()["spec"]["template"]
        template["spec"]["containers"] = [container(memory="128Mi")]
        await client.patch(
            STATEFULSETS, "web", {"spec": {"template": template}}, namespace="default"
        )

        async def moved() -> Obj | None:
            st = (await get_set(client)).get("status") or {}
            changed = st.get("updateRevision") != before["updateRevision"]
            return st if changed and st.get("currentRevision") == st["updateRevision"] else None

        status = await await_until(moved, what="every pod at the new revision")
    assert seen["deleted"] == []
    now = await pods_of(harness)
    for name, pod in now.items():
        assert pod["metadata"]["uid"] == old[name]["metadata"]["uid"]
        assert pod["metadata"]["labels"][REVISION] == status["updateRevision"]
    assert status["updatedReplicas"] == status["currentReplicas"] == 3
    moves = await await_until(
        lambda: _when(events(client, "InPlaceResize"), lambda found: len(found) == 3),
        what="an InPlaceResize event per pod (posted in the background)",
    )
    assert all(message.startswith("Moved pod web-") for message in moves)
    assert await events(client, "SuccessfulDelete") == []


async def test_a_failed_pod_is_deleted_and_made_again(harness: Harness) -> None:
    client = harness.client
    await harness.start("statefulset")
    async with kubelet(client, "web") as seen:
        await client.create(STATEFULSETS, statefulset(replicas=2))
        await settled(harness, 2)
        failed = (await pods_of(harness))["web-1"]
        await set_phase(client, failed, "Failed")

        async def remade() -> bool:
            pod = (await pods_of(harness)).get("web-1")
            return pod is not None and pod["metadata"]["uid"] != failed["metadata"]["uid"]

        await await_until(remade, what="web-1 made again")
        await settled(harness, 2)
    assert seen["created"] == ["web-0", "web-1", "web-1"]


async def test_orphans_named_after_the_set_are_adopted(harness: Harness) -> None:
    client = harness.client
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [container()]},
    }
    stranger = {**orphan, "metadata": {**orphan["metadata"], "name": "other-0"}}
    made = await client.create(PODS, orphan)
    await client.create(PODS, stranger)
    await set_phase(client, made, "Running")
    await harness.start("statefulset")
    # OnDelete: the orphan, at no revision, is not then replaced by a rolling update.
    await client.create(STATEFULSETS, statefulset(replicas=1, updateStrategy={"type": "OnDelete"}))

    async def adopted() -> Obj | None:
        pod = await client.get(PODS, "web-0", namespace="default")
        return pod if pod["metadata"].get("ownerReferences") else None

    pod = await await_until(adopted, what="web-0 adopted")
    assert pod["metadata"]["uid"] == made["metadata"]["uid"]
    (ref,) = pod["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["controller"]) == ("StatefulSet", "web", True)
    other = await client.get(PODS, "other-0", namespace="default")
    assert not other["metadata"].get("ownerReferences")


async def test_the_revision_history_is_trimmed_to_its_limit(harness: Harness) -> None:
    client = harness.client
    await harness.start("statefulset")
    async with kubelet(client, "web"):
        await client.create(STATEFULSETS, statefulset(replicas=1, revisionHistoryLimit=1))
        await settled(harness, 1)
        for image in ("busybox:2", "busybox:3", "busybox:4"):
            template = statefulset()["spec"]["template"]
            template["spec"]["containers"] = [container(image=image)]
            await client.patch(
                STATEFULSETS, "web", {"spec": {"template": template}}, namespace="default"
            )
            await await_until(
                lambda image=image: _image_is(harness, image), what=f"web-0 at {image}"
            )
            await settled(harness, 1)

    async def trimmed() -> list[Obj] | None:
        items = (await client.list(CONTROLLERREVISIONS, namespace="default"))["items"]
        return items if len(items) == 2 else None

    revisions = await await_until(trimmed, what="the live revision and one of history")
    assert sorted(r["revision"] for r in revisions) == [3, 4]


async def _image_is(harness: Harness, image: str) -> bool:
    pod = (await pods_of(harness)).get("web-0")
    return pod is not None and pod["spec"]["containers"][0]["image"] == image


async def test_when_scaled_delete_hands_the_claim_to_its_pod(harness: Harness) -> None:
    client = harness.client
    await harness.start("statefulset")
    policy = {"whenScaled": "Delete", "whenDeleted": "Retain"}
    async with kubelet(client, "web"):
        await client.create(
            STATEFULSETS,
            statefulset(
                replicas=2, volumeClaimTemplates=[WWW], persistentVolumeClaimRetentionPolicy=policy
            ),
        )
        await settled(harness, 2)
        doomed = (await pods_of(harness))["web-1"]
        await client.patch(STATEFULSETS, "web", {"spec": {"replicas": 1}}, namespace="default")
        await settled(harness, 1)
    claim = await client.get(PERSISTENTVOLUMECLAIMS, "www-web-1", namespace="default")
    (ref,) = claim["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"]) == ("Pod", "web-1", doomed["metadata"]["uid"])
    kept = await client.get(PERSISTENTVOLUMECLAIMS, "www-web-0", namespace="default")
    assert not kept["metadata"].get("ownerReferences")
