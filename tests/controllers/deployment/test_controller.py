"""The Deployment controller against the API server, with a test playing every kubelet.

A rolling update is watched ReplicaSet by ReplicaSet: at every state the API server ever
held, the ReplicaSets' sizes respect ``maxSurge`` and ``maxUnavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from inplace.client import DEPLOYMENTS, PODS, REPLICASETS, Client
from inplace.controllers.deployment import rollout as r
from tests.controllers.conftest import Harness, set_phase
from tests.poll import await_until


def deployment(
    name: str,
    replicas: int,
    *,
    image: str = "busybox",
    strategy: dict[str, Any] | None = None,
    deadline: int | None = None,
    history: int | None = None,
    cpu: str = "100m",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": image,
                        "resources": {
                            "requests": {"cpu": cpu, "memory": "32Mi"},
                            "limits": {"memory": "64Mi"},
                        },
                    }
                ]
            },
        },
    }
    if strategy is not None:
        spec["strategy"] = strategy
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    if history is not None:
        spec["revisionHistoryLimit"] = history
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


@contextlib.asynccontextmanager
async def kubelet(client: Client, selector: str) -> AsyncIterator[set[str]]:
    """Mark every new pod Running and Ready at once; yields the uids of all pods created."""
    created: set[str] = set()

    async def run() -> None:
        async for event in client.watch(
            PODS, namespace="default", resource_version=None, label_selector=selector
        ):
            pod = event.object
            if event.type == "ADDED":
                created.add(pod["metadata"]["uid"])
                if not pod["metadata"].get("deletionTimestamp"):
                    with contextlib.suppress(Exception):
                        await set_phase(client, pod, "Running")

    task = asyncio.create_task(run())
    await asyncio.sleep(0.1)
    try:
        yield created
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@contextlib.asynccontextmanager
async def replica_set_history(client: Client, selector: str) -> AsyncIterator[list[dict[str, int]]]:
    """Every state of the ReplicaSets' sizes the API server held, in order."""
    history: list[dict[str, int]] = []
    sizes: dict[str, int] = {}

    async def run() -> None:
        async for event in client.watch(
            REPLICASETS, namespace="default", resource_version=None, label_selector=selector
        ):
            name = event.object["metadata"]["name"]
            if event.type == "DELETED":
                sizes.pop(name, None)
            else:
                sizes[name] = int(event.object["spec"].get("replicas") or 0)
            history.append(dict(sizes))

    task = asyncio.create_task(run())
    await asyncio.sleep(0.1)
    try:
        yield history
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def get(client: Client, name: str) -> dict[str, Any]:
    return await client.get(DEPLOYMENTS, name, namespace="default")


async def replica_sets(client: Client, app: str) -> list[dict[str, Any]]:
    result = await client.list(REPLICASETS, namespace="default", label_selector=f"app={app}")
    return sorted(result["items"], key=r.revision_of)


async def complete(client: Client, name: str) -> bool:
    """What ``kubectl rollout status`` waits for."""
    d = await get(client, name)
    st = d.get("status") or {}
    want = d["spec"]["replicas"]
    return bool(
        st.get("observedGeneration", 0) >= d["metadata"]["generation"]
        and st.get("updatedReplicas", 0) == want
        and st.get("replicas", 0) == want
        and st.get("availableReplicas", 0) == want
    )


@pytest.mark.parametrize(
    ("surge", "unavailable"), [(1, 1), (0, 1), (2, 0), ("25%", "25%"), ("50%", "0%")]
)
async def test_rolling_update_respects_surge_and_unavailability(
    harness: Harness, surge: Any, unavailable: Any
) -> None:
    client = harness.client
    await harness.start("deployment,replicaset")
    strategy = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
    }
    d = deployment("web", 4, strategy=strategy)
    async with kubelet(client, "app=web"):
        await client.create(DEPLOYMENTS, d)
        await await_until(lambda: complete(client, "web"), what="first rollout")
        async with replica_set_history(client, "app=web") as history:
            await client.patch(
                DEPLOYMENTS,
                "web",
                {
                    "spec": {
                        "template": {
                            "spec": {"containers": [{"name": "main", "image": "busybox:2"}]}
                        }
                    }
                },
                patch_type="strategic",
                namespace="default",
            )
            await await_until(lambda: complete(client, "web"), what="second rollout")
    max_surge, max_unavailable = r.max_surge(d), r.max_unavailable(d)
    for sizes in history:
        assert sum(sizes.values()) <= 4 + max_surge, history
        assert sum(sizes.values()) >= 4 - max_unavailable, history
    sets = await replica_sets(client, "web")
    assert [r.replicas(s) for s in sets] == [0, 4]
    assert [r.revision_of(s) for s in sets] == [1, 2]
    final = await get(client, "web")
    assert final["metadata"]["annotations"][r.REVISION] == "2"
    progressing = r.condition_of(final["status"], r.PROGRESSING)
    assert progressing is not None and progressing["reason"] == r.NEW_RS_AVAILABLE_REASON


async def test_a_resources_only_change_keeps_the_replica_set_and_the_pods(harness: Harness) -> None:
    client = harness.client
    await harness.start("deployment,replicaset")
    async with kubelet(client, "app=api") as created:
        await client.create(DEPLOYMENTS, deployment("api", 3))
        await await_until(lambda: complete(client, "api"), what="first rollout")
        before = set(created)
        [rs] = await replica_sets(client, "api")
        await client.patch(
            DEPLOYMENTS,
            "api",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "main", "resources": {"requests": {"cpu": "300m"}}}
                            ]
                        }
                    }
                }
            },
            patch_type="strategic",
            namespace="default",
        )

        async def template_updated() -> bool:
            [one] = await replica_sets(client, "api")
            cpu = one["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            return bool(cpu == "300m")

        await await_until(template_updated, what="the replica set's template updated in place")
        await await_until(lambda: complete(client, "api"), what="nothing to roll out")
        await asyncio.sleep(0.3)
        assert created == before, "new pods were created for a resources-only change"
    [after] = await replica_sets(client, "api")
    assert after["metadata"]["name"] == rs["metadata"]["name"]
    assert r.revision_of(after) == 1
    labels = after["spec"]["template"]["metadata"]["labels"]
    assert (
        labels[r.POD_TEMPLATE_HASH]
        == rs["spec"]["template"]["metadata"]["labels"][r.POD_TEMPLATE_HASH]
    )


async def test_recreate_removes_every_old_pod_before_the_new_ones(harness: Harness) -> None:
    client = harness.client
    await harness.start("deployment,replicaset")
    async with kubelet(client, "app=db"):
        await client.create(DEPLOYMENTS, deployment("db", 2, strategy={"type": "Recreate"}))
        await await_until(lambda: complete(client, "db"), what="first rollout")
        async with replica_set_history(client, "app=db") as history:
            await client.patch(
                DEPLOYMENTS,
                "db",
                {"spec": {"template": {"metadata": {"labels": {"app": "db", "v": "2"}}}}},
                patch_type="strategic",
                namespace="default",
            )
            await await_until(lambda: complete(client, "db"), what="recreate rollout")
    for sizes in history:
        assert sum(1 for size in sizes.values() if size) <= 1, f"old and new both up: {sizes}"


async def test_a_rollout_that_makes_no_progress_times_out(harness: Harness) -> None:
    client = harness.client
    await harness.start("deployment,replicaset")
    await client.create(DEPLOYMENTS, deployment("stuck", 1, deadline=1))  # no kubelet: never ready

    async def timed_out() -> bool:
        cond = r.condition_of((await get(client, "stuck")).get("status") or {}, r.PROGRESSING)
        return cond is not None and cond["reason"] == r.TIMED_OUT_REASON

    await await_until(timed_out, timeout=30, what="ProgressDeadlineExceeded")
    cond = r.condition_of((await get(client, "stuck"))["status"], r.PROGRESSING)
    assert cond is not None and cond["status"] == "False"
    assert cond["message"].endswith("has timed out progressing.")


async def test_history_limit_pause_and_scale(harness: Harness) -> None:
    client = harness.client
    await harness.start("deployment,replicaset")
    async with kubelet(client, "app=hist"):
        await client.create(DEPLOYMENTS, deployment("hist", 2, history=1))
        await await_until(lambda: complete(client, "hist"))
        for image in ("busybox:2", "busybox:3"):
            await client.patch(
                DEPLOYMENTS,
                "hist",
                {
                    "spec": {
                        "template": {"spec": {"containers": [{"name": "main", "image": image}]}}
                    }
                },
                patch_type="strategic",
                namespace="default",
            )
            await await_until(lambda: complete(client, "hist"))

        async def two_left() -> bool:
            return len(await replica_sets(client, "hist")) == 2

        await await_until(two_left, what="revisionHistoryLimit 1: the oldest replica set deleted")
        known = {s["metadata"]["name"] for s in await replica_sets(client, "hist")}
        await client.patch(DEPLOYMENTS, "hist", {"spec": {"paused": True}}, namespace="default")
        await client.patch(
            DEPLOYMENTS,
            "hist",
            {
                "spec": {
                    "replicas": 3,
                    "template": {"metadata": {"labels": {"app": "hist", "x": "1"}}},
                }
            },
            patch_type="strategic",
            namespace="default",
        )

        async def scaled_not_rolled() -> bool:
            # (Paused with a changed template, every replica set counts as old, so the
            # history limit may clean the previous revision up meanwhile, as upstream.)
            sets = await replica_sets(client, "hist")
            names = {s["metadata"]["name"] for s in sets}
            return names <= known and r.replicas(sets[-1]) == 3

        await await_until(scaled_not_rolled, what="paused: scaled, not rolled out")
        cond = r.condition_of((await get(client, "hist"))["status"], r.PROGRESSING)
        assert cond is not None and cond["reason"] == r.PAUSED_REASON
        await client.patch(DEPLOYMENTS, "hist", {"spec": {"paused": False}}, namespace="default")
        await await_until(lambda: complete(client, "hist"), what="resumed rollout")
    assert len(await replica_sets(client, "hist")) == 2
