"""Controllers against the real API server, in this event loop, with no nodes.

Nothing runs pods here: a test plays the kubelet itself where it needs to (:func:`set_phase`
marks a pod Running and Ready, Succeeded or Failed). Unbound pods are deleted at once, so
deletions need no node either.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from inplace.api.timestamps import rfc3339
from inplace.client import PODS, Client, ClusterConfig
from inplace.controllers.manager import ControllerManager, select_controllers
from tests.conftest import InProcessServer
from tests.poll import await_until


@dataclass
class Harness:
    client: Client
    managers: list[tuple[ControllerManager, asyncio.Task[None]]] = field(default_factory=list)

    async def start(self, controllers: str, **options: Any) -> ControllerManager:
        manager = ControllerManager(self.client, select_controllers(controllers), options=options)
        task = asyncio.create_task(manager.run())
        self.managers.append((manager, task))
        await await_until(lambda: manager.synced.is_set() or task.done(), what="informers synced")
        if task.done():
            task.result()
        return manager

    async def stop_all(self) -> None:
        for _, task in self.managers:
            task.cancel()
        for _, task in self.managers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.managers.clear()

    async def pods(self, namespace: str = "default", selector: str | None = None) -> list[Any]:
        result = await self.client.list(PODS, namespace=namespace, label_selector=selector)
        return list(result["items"])


@pytest.fixture
async def harness(apiserver: InProcessServer) -> AsyncIterator[Harness]:
    async with Client(ClusterConfig(server=apiserver.url, token=apiserver.token)) as client:
        h = Harness(client)
        try:
            yield h
        finally:
            await h.stop_all()


async def set_phase(
    client: Client,
    pod: dict[str, Any],
    phase: str,
    *,
    exit_code: int | None = None,
    restarts: int = 0,
) -> None:
    """Play the kubelet: report ``pod`` Running+Ready, Succeeded or Failed."""
    now = rfc3339()
    ready = "True" if phase == "Running" else "False"
    containers = []
    for c in pod["spec"]["containers"]:
        state: dict[str, Any] = {"running": {"startedAt": now}}
        if phase in ("Succeeded", "Failed"):
            code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
            state = {"terminated": {"exitCode": code, "reason": "Completed", "finishedAt": now}}
        containers.append(
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": ready == "True",
                "restartCount": restarts,
                "started": phase == "Running",
                "state": state,
            }
        )
    status = {
        "phase": phase,
        "conditions": [
            {"type": "Ready", "status": ready, "lastTransitionTime": now},
            {"type": "ContainersReady", "status": ready, "lastTransitionTime": now},
        ],
        "containerStatuses": containers,
    }
    await client.patch(
        PODS,
        pod["metadata"]["name"],
        {"status": status},
        patch_type="strategic",
        namespace=pod["metadata"]["namespace"],
        subresource="status",
    )


def names(objects: Iterable[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects)
