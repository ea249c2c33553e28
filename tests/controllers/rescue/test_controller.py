"""The rescue controller against the real API server: the test plays the scheduler (the
``PodScheduled`` verdict, the binding) and the node agent (what it holds after a resize),
and serves ``metrics.k8s.io``; the controller manager runs only the rescuer."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from inplace.client import EVENTS, PODS, Client
from inplace.controllers.manager import ControllerManager, select_controllers
from inplace.controllers.rescue.controller import RescueController
from inplace.controllers.rescue.model import Size
from tests.poll import await_until

from .apicluster import APICluster, api_cluster, create_node, create_pod, set_status
from .builders import node, pending, running

OPTIONS = {"rescue_usage_interval": 0.2, "rescue_min_history": 0.3}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[APICluster, Client]]:
    async with api_cluster(tmp_path) as api, api.client() as client:
        yield api, client


@contextlib.asynccontextmanager
async def rescuer(
    client: Client, prime: Callable[[RescueController], None] | None = None, **options: Any
) -> AsyncIterator[RescueController]:
    """The controller manager running only the rescuer; ``prime`` sees the controller
    before its first pass."""
    manager = ControllerManager(client, select_controllers("rescue"), options=OPTIONS | options)
    manager.build()
    if prime is not None:
        controller = manager.controllers["rescue-controller"]
        assert isinstance(controller, RescueController)
        prime(controller)
    task = asyncio.create_task(manager.run())
    try:
        await await_until(lambda: manager.synced.is_set() or task.done(), what="synced")
        if task.done():
            task.result()
        controller = manager.controllers["rescue-controller"]
        assert isinstance(controller, RescueController)
        yield controller
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def get(client: Client, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = await client.get(PODS, name, namespace="default")
    return pod


def cpu_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"])


async def events(client: Client, name: str) -> list[tuple[str, str]]:
    items = (await client.list(EVENTS, namespace="default"))["items"]
    return [
        (e["reason"], e["message"])
        for e in items
        if e["involvedObject"]["name"] == name and e["source"]["component"] == "rescue-controller"
    ]


async def apply_resize(client: Client, name: str) -> dict[str, Any]:
    """Play the node agent: hold what the spec asks."""
    pod = await get(client, name)
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    status = {
        "containerStatuses": [
            {"name": "main", "allocatedResources": requests, "resources": {"requests": requests}}
        ],
        "conditions": [{"type": "PodResizeInProgress", "$patch": "delete"}],
    }
    return await set_status(client, pod, status)


async def bind(client: Client, name: str, node_name: str = "node-1") -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": "default"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
    await client.create(PODS, body, namespace="default", subresource="binding")


async def test_shrink_for_a_pending_pod_then_grow_back(
    cluster: tuple[APICluster, Client],
) -> None:
    api, client = cluster
    await create_node(client, node("node-1", cpu="4", memory="8Gi"))
    await create_pod(client, running("big", "3", "4Gi"))
    await create_pod(client, running("peer", "500m", "1Gi", shrinkable=None))
    api.usage.table = {"default/big": ("250m", "512Mi"), "default/peer": ("100m", "64Mi")}
    async with rescuer(client) as controller:
        await create_pod(client, pending("new", "1", "1Gi"))
        # 500m free, 1 CPU asked: 500m taken from big, the only donor.
        await await_until(lambda: _cpu(client, "big", "2500m"), timeout=20, what="big shrunk")
        big = await get(client, "big")
        assert json.loads(big["metadata"]["annotations"]["inplace.dev/original-resources"]) == {
            "main": {"requests": {"cpu": "3", "memory": "4Gi"}}
        }
        assert cpu_of(await get(client, "peer")) == "500m"
        await await_until(
            lambda: _has_event(client, "new", ("MadeRoom", "made room on node-1 by shrinking big")),
            timeout=20,
            what="MadeRoom",
        )
        assert any(
            reason == "ShrunkForPendingPod"
            and message == "shrunk to fit pending pod default/new: cpu 3→2500m"
            for reason, message in await events(client, "big")
        )
        # Nothing more is shrunk while the rescue is in flight.
        await asyncio.sleep(1.0)
        assert cpu_of(await get(client, "big")) == "2500m"
        await apply_resize(client, "big")
        await bind(client, "new")
        await await_until(
            lambda: controller.metrics.outcomes.labels("placed")._value.get() == 1,
            timeout=20,
            what="the rescue counted as placed",
        )
        # The pending pod leaves: big grows back to its size, and loses the annotation.
        await client.delete(PODS, "new", namespace="default", grace_period_seconds=0)
        await await_until(lambda: _cpu(client, "big", "3"), timeout=20, what="big grown back")
        await apply_resize(client, "big")

        async def annotation_gone() -> bool:
            annotations = (await get(client, "big"))["metadata"].get("annotations") or {}
            return "inplace.dev/original-resources" not in annotations

        await await_until(annotation_gone, timeout=20, what="the annotation removed")
        assert any(reason == "GrownBack" for reason, _ in await events(client, "big"))


async def test_a_pod_back_at_its_size_is_shrunk_again_only_once_its_size_is_remembered(
    cluster: tuple[APICluster, Client],
) -> None:
    """big grew back to its size, so the pass removes its annotation; the cache still shows
    it in that same pass, which must not shrink big without remembering its size anew."""
    api, client = cluster
    original = '{"main": {"requests": {"cpu": "3", "memory": "4Gi"}}}'
    await create_node(client, node("node-1", cpu="4", memory="8Gi"))
    await create_pod(
        client,
        running("big", "3", "4Gi", annotations={"inplace.dev/original-resources": original}),
    )
    await create_pod(client, pending("new", "1500m", "1Gi"))  # 1 CPU free: 500m lacking
    api.usage.table = {"default/big": ("250m", "512Mi")}

    def known_usage(controller: RescueController) -> None:
        now = time.time()
        for at in (now - 5, now - 1):
            controller.peaks.record("default/big", "main", at, Size(250, 512 * 1024**2))

    async with rescuer(client, prime=known_usage):
        await await_until(lambda: _cpu(client, "big", "2500m"), timeout=20, what="big shrunk")
        await asyncio.sleep(0.5)  # any pass still running writes what it writes
        big = await get(client, "big")
        assert json.loads(big["metadata"]["annotations"]["inplace.dev/original-resources"]) == {
            "main": {"requests": {"cpu": "3", "memory": "4Gi"}}
        }


async def test_a_shrink_the_node_cannot_apply_is_reverted(
    cluster: tuple[APICluster, Client],
) -> None:
    api, client = cluster
    await create_node(client, node("node-1", cpu="4", memory="8Gi"))
    await create_pod(client, running("big", "1", "6Gi", limits={"memory": "6Gi"}))
    api.usage.table = {"default/big": ("100m", "1Gi")}
    async with rescuer(client) as controller:
        await create_pod(client, pending("new", "100m", "4Gi"))
        await await_until(
            lambda: _memory(client, "big", "4Gi"), timeout=20, what="big's memory shrunk"
        )
        big = await get(client, "big")
        assert big["spec"]["containers"][0]["resources"]["limits"] == {"memory": "4Gi"}
        # The node agent allocated it but the kernel refused the lower limit.
        status = {
            "containerStatuses": [
                {
                    "name": "main",
                    "allocatedResources": {"cpu": "1", "memory": "4Gi"},
                    "resources": {"requests": {"cpu": "1", "memory": "6Gi"}},
                }
            ],
            "conditions": [
                {
                    "type": "PodResizeInProgress",
                    "status": "True",
                    "reason": "Error",
                    "message": "memory.limit_in_bytes: device or resource busy",
                }
            ],
        }
        await set_status(client, big, status)
        await await_until(
            lambda: _memory(client, "big", "6Gi"), timeout=20, what="the shrink reverted"
        )
        big = await get(client, "big")
        assert big["spec"]["containers"][0]["resources"]["limits"] == {"memory": "6Gi"}
        await await_until(
            lambda: _reason(client, "big", "ShrinkFailed"), timeout=20, what="ShrinkFailed"
        )
        assert controller.metrics.outcomes.labels("failed")._value.get() == 1
        assert "default/big" in controller.failed


async def _cpu(client: Client, name: str, cpu: str) -> bool:
    return cpu_of(await get(client, name)) == cpu


async def _memory(client: Client, name: str, memory: str) -> bool:
    pod = await get(client, name)
    return bool(pod["spec"]["containers"][0]["resources"]["requests"]["memory"] == memory)


async def _has_event(client: Client, name: str, event: tuple[str, str]) -> bool:
    return event in await events(client, name)


async def _reason(client: Client, name: str, reason: str) -> bool:
    return any(r == reason for r, _ in await events(client, name))
