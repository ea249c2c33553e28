"""The scheduler against an in-process API server: placement, binding, events, resizes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from inplace.client import EVENTS, NODES, PODDISRUPTIONBUDGETS, PODS, Client, ClusterConfig
from inplace.scheduler import Scheduler, SchedulerConfig
from inplace.scheduler.framework import pod_info
from inplace.scheduler.plugins import DefaultBinder
from tests.poll import await_until

from .helpers import node, pod

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def client(apiserver) -> AsyncIterator[Client]:  # type: ignore[no-untyped-def]
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as c:
        yield c


@pytest.fixture
async def scheduler(client: Client) -> AsyncIterator[Scheduler]:
    sched = Scheduler(client, config=SchedulerConfig())
    task = asyncio.create_task(sched.run())
    await await_until(lambda: sched.synced)
    try:
        yield sched
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _api_pod(p: dict) -> dict:  # type: ignore[type-arg]
    """A pod as a user would create it (no uid, status or generation)."""
    out = {**p, "metadata": dict(p["metadata"])}
    for field in ("uid", "generation", "creationTimestamp"):
        out["metadata"].pop(field, None)
    out.pop("status", None)
    return out


async def test_places_pods_and_records_events(client: Client, scheduler: Scheduler) -> None:
    await client.create(NODES, node("n1", cpu="2", memory="4Gi"))
    await client.create(NODES, node("n2", cpu="2", memory="4Gi"))
    await await_until(lambda: len(scheduler.cache) == 2)
    for i in range(6):
        await client.create(PODS, _api_pod(pod(f"p{i}", cpu="500m", memory="512Mi")))
    await await_until(lambda: scheduler.bound == 6)
    pods = (await client.list(PODS, namespace="default"))["items"]
    nodes = sorted(p["spec"]["nodeName"] for p in pods)
    assert nodes.count("n1") == 3 and nodes.count("n2") == 3  # LeastAllocated spreads
    for p in pods:
        cond = [c for c in p["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert cond[0]["status"] == "True"

    async def scheduled_events() -> list[dict]:  # type: ignore[type-arg]
        items = (await client.list(EVENTS, namespace="default"))["items"]
        return [e for e in items if e["reason"] == "Scheduled"]

    async with asyncio.timeout(10):
        while len(await scheduled_events()) < 6:
            await asyncio.sleep(0.05)
    event = (await scheduled_events())[0]
    assert event["message"].startswith("Successfully assigned default/p")
    assert event["involvedObject"]["kind"] == "Pod"


async def test_a_pod_resized_after_the_decision_is_not_bound_with_it(client: Client) -> None:
    """The binder sends the resourceVersion the placement was decided on: a resize landing
    between the decision and the binding makes the binding fail (and the pod is retried at
    its new size) instead of binding a size the node was never checked for."""
    created = await client.create(PODS, _api_pod(pod("raced", cpu="100m", memory="64Mi")))
    decided = pod_info(created)
    bigger = {"requests": {"cpu": "1500m", "memory": "64Mi"}}
    await client.patch(
        PODS,
        "raced",
        {"spec": {"containers": [{"name": "main", "resources": bigger}]}},
        namespace="default",
        subresource="resize",
    )
    status = await DefaultBinder(client).bind(decided, "n1")
    assert not status.ok
    assert "Precondition failed: ResourceVersion in precondition" in status.message()
    assert not (await client.get(PODS, "raced", namespace="default"))["spec"].get("nodeName")
    current = pod_info(await client.get(PODS, "raced", namespace="default"))
    assert (await DefaultBinder(client).bind(current, "n1")).ok


async def test_unschedulable_then_node_added(client: Client, scheduler: Scheduler) -> None:
    await client.create(NODES, node("small", cpu="1", memory="1Gi"))
    await await_until(lambda: len(scheduler.cache) == 1)
    await client.create(PODS, _api_pod(pod("big", cpu="2", memory="1Gi")))
    await await_until(lambda: scheduler.queue.unschedulable_count == 1)

    async def failed() -> list[dict]:  # type: ignore[type-arg]
        items = (await client.list(EVENTS, namespace="default"))["items"]
        return [e for e in items if e["reason"] == "FailedScheduling"]

    expected = "0/1 nodes are available: 1 Insufficient cpu."
    async with asyncio.timeout(10):  # (an earlier attempt may have raced the node's arrival)
        while expected not in [e["message"] for e in await failed()]:
            await asyncio.sleep(0.05)
    async with asyncio.timeout(10):
        while True:
            got = await client.get(PODS, "big", namespace="default")
            conds = got["status"].get("conditions", [])
            cond = [c for c in conds if c["type"] == "PodScheduled"]
            if cond and cond[0]["message"] == expected:
                break
            await asyncio.sleep(0.05)
    assert cond[0]["reason"] == "Unschedulable"
    # A node that can take it arrives: the pod moves at once (no polling, no timer).
    await client.create(NODES, node("large", cpu="4", memory="4Gi"))
    await await_until(lambda: scheduler.bound == 1)
    got = await client.get(PODS, "big", namespace="default")
    assert got["spec"]["nodeName"] == "large"


async def test_resize_approved_and_deferred_until_room(
    client: Client, scheduler: Scheduler
) -> None:
    await client.create(NODES, node("n1", cpu="2", memory="4Gi"))
    await await_until(lambda: len(scheduler.cache) == 1)
    await client.create(PODS, _api_pod(pod("a", cpu="1", memory="1Gi")))
    await client.create(PODS, _api_pod(pod("b", cpu="1", memory="1Gi")))
    await await_until(lambda: scheduler.bound == 2)
    # The "node agent": report allocatedResources for both.
    for name in ("a", "b"):
        await client.patch(
            PODS,
            name,
            {
                "status": {
                    "phase": "Running",
                    "containerStatuses": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "imageID": "",
                            "ready": True,
                            "restartCount": 0,
                            "allocatedResources": {"cpu": "1", "memory": "1Gi"},
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                        }
                    ],
                }
            },
            namespace="default",
            subresource="status",
        )
    resize = {
        "spec": {
            "containers": [
                {"name": "main", "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}}}
            ]
        }
    }
    await client.patch(
        PODS, "a", resize, patch_type="strategic", namespace="default", subresource="resize"
    )

    async def condition(name: str, kind: str) -> dict | None:  # type: ignore[type-arg]
        got = await client.get(PODS, name, namespace="default")
        for c in got["status"].get("conditions", []):
            if c["type"] == kind:
                return c  # type: ignore[no-any-return]
        return None

    async with asyncio.timeout(10):
        while (await condition("a", "PodResizePending")) is None:
            await asyncio.sleep(0.05)
    pending = await condition("a", "PodResizePending")
    assert pending is not None and pending["reason"] == "Deferred"
    assert "Insufficient cpu: requested 500m, free 0" in pending["message"]
    # Deleting b makes room: the deferred resize is approved at once.
    await client.delete(PODS, "b", namespace="default", grace_period_seconds=0)
    async with asyncio.timeout(10):
        while (await condition("a", "PodResizeScheduled")) is None:
            await asyncio.sleep(0.05)
    got = await client.get(PODS, "a", namespace="default")
    approved = await condition("a", "PodResizeScheduled")
    assert approved is not None
    assert approved["status"] == "True"
    assert approved["observedGeneration"] == got["metadata"]["generation"]
    # The Deferred verdict stays until a node agent allocates the resize and clears it (as
    # upstream's kubelet owns PodResizePending): the approval writes only its own condition.
    assert (await condition("a", "PodResizePending") or {}).get("reason") == "Deferred"
    assert scheduler.metrics.resize_decisions.labels(decision="approved")._value.get() == 1


async def test_pdb_blocks_in_place_preferred_eviction(client: Client, scheduler: Scheduler) -> None:
    await client.create(NODES, node("n1", cpu="2", memory="4Gi"))
    await client.create(NODES, node("n2", cpu="4", memory="4Gi"))
    # Fill n2 a bit so the resizing pod lands on n1... keep it simple: pin with nodeName.
    p = _api_pod(
        pod(
            "web",
            cpu="1",
            memory="1Gi",
            labels={"app": "web"},
            owner=True,
            policy="InPlacePreferred",
            node_name="n1",
        )
    )
    p["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid"}
    ]
    await client.create(PODS, p)
    await client.create(PODS, _api_pod(pod("other", cpu="1", memory="1Gi", node_name="n1")))
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web-pdb", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }
    created = await client.create(PODDISRUPTIONBUDGETS, pdb)
    created["status"] = {
        "observedGeneration": created["metadata"]["generation"],
        "disruptionsAllowed": 0,
        "currentHealthy": 1,
        "desiredHealthy": 1,
        "expectedPods": 1,
    }
    await client.update(PODDISRUPTIONBUDGETS, created, subresource="status")
    await client.patch(
        PODS,
        "web",
        {
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "imageID": "",
                        "ready": True,
                        "restartCount": 0,
                        "allocatedResources": {"cpu": "1", "memory": "1Gi"},
                    }
                ],
            }
        },
        namespace="default",
        subresource="status",
    )
    await client.patch(
        PODS,
        "web",
        {"spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "2"}}}]}},
        patch_type="strategic",
        namespace="default",
        subresource="resize",
    )

    async def pending() -> dict | None:  # type: ignore[type-arg]
        got = await client.get(PODS, "web", namespace="default")
        for c in got["status"].get("conditions", []):
            if c["type"] == "PodResizePending":
                return c  # type: ignore[no-any-return]
        return None

    async with asyncio.timeout(10):
        while (cond := await pending()) is None or "web-pdb" not in cond["message"]:
            await asyncio.sleep(0.05)
    assert cond["reason"] == "Deferred"
    # The budget allows a disruption: the eviction is retried at once and goes through.
    latest = await client.get(PODDISRUPTIONBUDGETS, "web-pdb", namespace="default")
    latest["status"]["disruptionsAllowed"] = 1
    await client.update(PODDISRUPTIONBUDGETS, latest, subresource="status")

    async def gone_or_deleting() -> bool:
        try:
            got = await client.get(PODS, "web", namespace="default")
        except Exception:
            return True
        return bool(got["metadata"].get("deletionTimestamp"))

    async with asyncio.timeout(10):
        while not await gone_or_deleting():
            await asyncio.sleep(0.05)


async def test_metrics_endpoint(scheduler: Scheduler) -> None:
    import aiohttp

    from inplace.scheduler.metrics import serve_metrics

    from ..conftest import free_port

    port = free_port()
    runner = await serve_metrics(scheduler.metrics, port=port, healthy=lambda: scheduler.synced)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/healthz") as r:
                assert r.status == 200 and await r.text() == "ok"
            async with session.get(f"http://127.0.0.1:{port}/metrics") as r:
                text = await r.text()
        for name in (
            "scheduler_schedule_attempts_total",
            "scheduler_scheduling_attempt_duration_seconds_bucket",
            "scheduler_pending_pods",
            "inplace_resize_decisions_total",
        ):
            assert name in text
    finally:
        await runner.cleanup()


def test_main_argv() -> None:
    from inplace.scheduler.main import build_parser

    args = build_parser().parse_args(
        ["--kubeconfig", "/tmp/k", "--metrics-port", "0", "--scoring", "MostAllocated"]
    )
    assert args.kubeconfig == "/tmp/k" and args.metrics_port == 0
    assert args.scoring == "MostAllocated" and args.percentage_of_nodes_to_score == 0


def test_main_reports_a_bad_kubeconfig(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from inplace.scheduler.main import main

    missing = tmp_path / "nope.kubeconfig"
    assert main(["--kubeconfig", str(missing), "--metrics-port", "0"]) == 1
    assert "inplace scheduler:" in capsys.readouterr().out
