"""The garbage collector against the API server: background, foreground (in order), orphan,
dangling references."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from inplace.client import DEPLOYMENTS, PODS, REPLICASETS, APINotFoundError, Client, Resource
from tests.controllers.conftest import Harness
from tests.controllers.deployment.test_controller import deployment
from tests.controllers.test_replicaset import replica_set
from tests.poll import await_until


async def gone(client: Client, resource: Resource, name: str) -> bool:
    try:
        await client.get(resource, name, namespace="default")
    except APINotFoundError:
        return True
    return False


def bare_pod(name: str, owners: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "ownerReferences": owners},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


async def test_background_deletes_the_dependents_after_the_owner(harness: Harness) -> None:
    client = harness.client
    await harness.start("replicaset,garbagecollector")
    await client.create(REPLICASETS, replica_set("bg", 2, {"app": "bg"}))
    await await_until(lambda: _count(harness, "app=bg", 2), what="2 pods")
    await client.delete(REPLICASETS, "bg", namespace="default", propagation_policy="Background")
    await await_until(lambda: _count(harness, "app=bg", 0), what="pods collected")


async def test_orphan_keeps_the_dependents_without_their_reference(harness: Harness) -> None:
    client = harness.client
    await harness.start("replicaset,garbagecollector")
    await client.create(REPLICASETS, replica_set("or", 2, {"app": "or"}))
    await await_until(lambda: _count(harness, "app=or", 2), what="2 pods")
    await client.delete(REPLICASETS, "or", namespace="default", propagation_policy="Orphan")
    await await_until(lambda: gone(client, REPLICASETS, "or"), what="the owner deleted")
    pods = await harness.pods(selector="app=or")
    assert len(pods) == 2
    assert all(not p["metadata"].get("ownerReferences") for p in pods)


@contextlib.asynccontextmanager
async def deletions(client: Client, resources: list[Resource]) -> AsyncIterator[list[str]]:
    order: list[str] = []

    async def follow(resource: Resource) -> None:
        async for event in client.watch(resource, namespace="default", resource_version=None):
            if event.type == "DELETED":
                order.append(f"{resource.kind}/{event.object['metadata']['name']}")

    tasks = [asyncio.create_task(follow(r)) for r in resources]
    await asyncio.sleep(0.1)
    try:
        yield order
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_foreground_deletes_leaves_first_and_the_owner_last(harness: Harness) -> None:
    client = harness.client
    await harness.start("deployment,replicaset,garbagecollector")
    await client.create(DEPLOYMENTS, deployment("fg", 3))
    await await_until(lambda: _count(harness, "app=fg", 3), what="3 pods")
    async with deletions(client, [PODS, REPLICASETS, DEPLOYMENTS]) as order:
        await client.delete(DEPLOYMENTS, "fg", namespace="default", propagation_policy="Foreground")
        owner = await client.get(DEPLOYMENTS, "fg", namespace="default")
        assert owner["metadata"]["deletionTimestamp"]
        assert "foregroundDeletion" in owner["metadata"]["finalizers"]
        await await_until(lambda: gone(client, DEPLOYMENTS, "fg"), what="the deployment gone")
        await asyncio.sleep(0.1)
    kinds = [entry.split("/")[0] for entry in order]
    assert kinds == ["Pod", "Pod", "Pod", "ReplicaSet", "Deployment"], order


async def test_dangling_references_are_collected_and_dead_ones_dropped(harness: Harness) -> None:
    client = harness.client
    live = await client.create(REPLICASETS, replica_set("live", 0, {"app": "live"}))
    ghost = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ghost", "uid": "0000-ghost"}
    alive = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "live",
        "uid": live["metadata"]["uid"],
    }
    await client.create(PODS, bare_pod("lonely", [ghost]))
    await client.create(PODS, bare_pod("shared", [ghost, alive]))
    unknown = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "0000-w"}
    await client.create(PODS, bare_pod("foreign", [unknown]))
    await harness.start("garbagecollector")
    await await_until(lambda: gone(client, PODS, "lonely"), what="the dangling pod collected")

    async def dropped() -> bool:
        pod = await client.get(PODS, "shared", namespace="default")
        return [r["uid"] for r in pod["metadata"]["ownerReferences"]] == [alive["uid"]]

    await await_until(dropped, what="the dead reference dropped")
    await asyncio.sleep(0.3)
    assert not await gone(client, PODS, "foreign"), (
        "an owner of unknown kind is never presumed dead"
    )


async def _count(harness: Harness, selector: str, want: int) -> bool:
    return len(await harness.pods(selector=selector)) == want
