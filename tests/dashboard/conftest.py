"""A dashboard in this event loop over the real API server (also in this loop).

The API server's ``metrics.k8s.io`` is fed by a provider the test controls (``usage``), as
the node agents feed it in a real cluster; everything else (pods, their status, events,
VPAs) is written through the API as the components would write it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import pytest

from inplace.api.timestamps import rfc3339
from inplace.client import Client, ClusterConfig
from inplace.dashboard.server import DashboardServer
from inplace.dashboard.state import DashboardState
from tests.conftest import InProcessServer

TOKEN = "test-token-0123456789"


@dataclass
class Board:
    api: InProcessServer
    client: Client
    state: DashboardState
    server: DashboardServer
    usage: dict[tuple[str, str], dict[str, tuple[int, int]]] = field(default_factory=dict)
    """(namespace, pod) → container → (nano-cores, bytes): what metrics.k8s.io answers."""
    sampled_at: float = field(default_factory=time.time)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {TOKEN}"}

    async def view(self, session: aiohttp.ClientSession, **query: str) -> dict[str, Any]:
        async with session.get(f"{self.base}/api/view", params=query, headers=self.auth()) as r:
            assert r.status == 200, await r.text()
            body: dict[str, Any] = await r.json()
            return body


def pod_metrics(board: Board) -> list[dict[str, Any]]:
    return [
        {
            "kind": "PodMetrics",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {"name": name, "namespace": ns},
            "timestamp": rfc3339(board.sampled_at),
            "window": "10s",
            "containers": [
                {"name": c, "usage": {"cpu": f"{cpu}n", "memory": f"{memory // 1024}Ki"}}
                for c, (cpu, memory) in containers.items()
            ],
        }
        for (ns, name), containers in sorted(board.usage.items())
    ]


@pytest.fixture
async def board(apiserver: InProcessServer) -> AsyncIterator[Board]:
    client = Client(ClusterConfig(server=apiserver.url, token=apiserver.token))
    state = DashboardState(client, metrics_interval=0.2)
    server = DashboardServer(state, client, token=TOKEN, min_interval=0.05)
    running = Board(apiserver, client, state, server)

    async def provider(kind: str, namespace: str | None) -> list[dict[str, Any]]:
        return pod_metrics(running) if kind == "PodMetrics" else []

    apiserver.server.config.extra["metrics_provider"] = provider
    state.start()
    await server.start()
    try:
        yield running
    finally:
        await server.stop()
        await state.stop()
        await client.close()


async def sse_events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, Any]]:
    """Server-sent events as (event, decoded data)."""
    event, data = "message", b""
    async for raw in response.content:
        line = raw.rstrip(b"\r\n")
        if not line:
            if data:
                yield event, orjson.loads(data)
            event, data = "message", b""
        elif line.startswith(b"event: "):
            event = line[7:].decode()
        elif line.startswith(b"data: "):
            data += line[6:]


async def next_event(
    events: AsyncIterator[tuple[str, Any]], timeout: float = 20.0
) -> tuple[str, Any]:
    """A hang guard, not a timing assertion."""
    return await asyncio.wait_for(anext(events), timeout)
