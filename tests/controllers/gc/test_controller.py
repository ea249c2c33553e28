"""The garbage collector against the API server: background, foreground (in order), orphan,
dangling references."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from inplace.client import (
    CONTROLLERREVISIONS,
    CRONJOBS,
    DAEMONSETS,
    DEPLOYMENTS,
    JOBS,
    PERSISTENTVOLUMECLAIMS,
    PODS,
    REPLICASETS,
    STATEFULSETS,
    APINotFoundError,
    Client,
    Resource,
)
from inplace.controllers.gc.controller import custom_resource_of
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


# -- the revisioned workloads and CronJobs as owners ---------------------------------------------

_TEMPLATE = {
    "metadata": {"labels": {"app": "owned"}},
    "spec": {"containers": [{"name": "main", "image": "busybox"}]},
}


def _owner_ref(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _stateful_set(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 0,
            "serviceName": name,
            "selector": {"matchLabels": {"app": "owned"}},
            "template": _TEMPLATE,
        },
    }


def _daemon_set(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "owned"}}, "template": _TEMPLATE},
    }


def _revision(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": "default", "ownerReferences": [_owner_ref(owner)]},
        "revision": 1,
        "data": {"spec": {"template": {**_TEMPLATE, "$patch": "replace"}}},
    }


def _claim(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "ownerReferences": [_owner_ref(owner)]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


async def test_a_stateful_sets_pods_revisions_and_claims_follow_it(harness: Harness) -> None:
    """Background: the pod, the ControllerRevision and the claim a StatefulSet owns go with it
    (a claim is owned when ``persistentVolumeClaimRetentionPolicy.whenDeleted`` is Delete)."""
    client = harness.client
    await harness.start("garbagecollector")
    sts = await client.create(STATEFULSETS, _stateful_set("web"))
    await client.create(PODS, bare_pod("web-0", [_owner_ref(sts)]))
    await client.create(CONTROLLERREVISIONS, _revision("web-1", sts))
    await client.create(PERSISTENTVOLUMECLAIMS, _claim("data-web-0", sts))
    await client.delete(STATEFULSETS, "web", namespace="default", propagation_policy="Background")
    for resource, name in ((PODS, "web-0"), (CONTROLLERREVISIONS, "web-1")):
        await await_until(
            lambda r=resource, n=name: gone(client, r, n), what=f"{resource.kind} {name} collected"
        )
    # A claim keeps its kubernetes.io/pvc-protection finalizer until the protection
    # controller (not running here) removes it: deleted is Terminating.
    await await_until(
        lambda: _deleting(client, PERSISTENTVOLUMECLAIMS, "data-web-0"), what="the claim deleted"
    )


async def _deleting(client: Client, resource: Resource, name: str) -> bool:
    try:
        obj = await client.get(resource, name, namespace="default")
    except APINotFoundError:
        return True
    return bool(obj["metadata"].get("deletionTimestamp"))


async def test_a_daemon_set_in_the_foreground_goes_after_its_pods(harness: Harness) -> None:
    client = harness.client
    await harness.start("garbagecollector")
    ds = await client.create(DAEMONSETS, _daemon_set("agent"))
    await client.create(PODS, bare_pod("agent-a", [_owner_ref(ds)]))
    await client.create(CONTROLLERREVISIONS, _revision("agent-1", ds))
    async with deletions(client, [PODS, CONTROLLERREVISIONS, DAEMONSETS]) as order:
        await client.delete(
            DAEMONSETS, "agent", namespace="default", propagation_policy="Foreground"
        )
        await await_until(lambda: gone(client, DAEMONSETS, "agent"), what="the DaemonSet gone")
        await asyncio.sleep(0.1)
    assert order[-1] == "DaemonSet/agent", order
    assert sorted(order[:-1]) == ["ControllerRevision/agent-1", "Pod/agent-a"], order


async def test_orphaning_a_cron_job_keeps_its_jobs(harness: Harness) -> None:
    client = harness.client
    await harness.start("garbagecollector")
    cron_job = await client.create(
        CRONJOBS,
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "tick", "namespace": "default"},
            "spec": {
                "schedule": "*/5 * * * *",
                "suspend": True,
                "jobTemplate": {
                    "spec": {
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "main", "image": "busybox"}],
                            }
                        }
                    }
                },
            },
        },
    )
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "tick-1",
            "namespace": "default",
            "ownerReferences": [_owner_ref(cron_job)],
        },
        "spec": {"suspend": True, "template": cron_job["spec"]["jobTemplate"]["spec"]["template"]},
    }
    await client.create(JOBS, job)
    await client.create(JOBS, {**job, "metadata": {**job["metadata"], "name": "tick-2"}})
    await client.delete(CRONJOBS, "tick", namespace="default", propagation_policy="Orphan")
    await await_until(lambda: gone(client, CRONJOBS, "tick"), what="the CronJob deleted")
    for name in ("tick-1", "tick-2"):
        kept = await client.get(JOBS, name, namespace="default")
        assert not kept["metadata"].get("ownerReferences")
    await client.delete(JOBS, "tick-2", namespace="default")
    # A Job whose CronJob is gone (deleted in the background) is collected.
    cron_job = await client.create(
        CRONJOBS, {**cron_job, "metadata": {"name": "tock", "namespace": "default"}}
    )
    await client.create(
        JOBS,
        {
            **job,
            "metadata": {
                "name": "tock-1",
                "namespace": "default",
                "ownerReferences": [_owner_ref(cron_job)],
            },
        },
    )
    await client.delete(CRONJOBS, "tock", namespace="default", propagation_policy="Background")
    await await_until(lambda: gone(client, JOBS, "tock-1"), what="the Job collected")


def test_a_crd_names_its_resource_at_the_storage_version_once_accepted() -> None:
    crd: dict[str, Any] = {
        "spec": {
            "group": "e2e.example.com",
            "scope": "Namespaced",
            "names": {"plural": "databases", "kind": "Database"},
            "versions": [{"name": "v1beta1"}, {"name": "v1", "storage": True}],
        },
        "status": {"conditions": [{"type": "NamesAccepted", "status": "True"}]},
    }
    resource = custom_resource_of(crd)
    assert resource is not None
    assert (resource.group, resource.version, resource.plural, resource.kind) == (
        "e2e.example.com",
        "v1",
        "databases",
        "Database",
    )
    assert resource.namespaced
    crd["status"]["conditions"][0]["status"] = "False"
    assert custom_resource_of(crd) is None  # not served yet
