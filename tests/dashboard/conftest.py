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
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from inplace.api.timestamps import rfc3339
from inplace.apiserver.auth import MASTERS_GROUP, TokenFile
from inplace.apiserver.server import APIServer, APIServerConfig
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
    clock: dict[str, float] = field(default_factory=lambda: {"sampled_at": time.time()})

    @property
    def sampled_at(self) -> float:
        """When the node agents took the samples metrics.k8s.io answers with."""
        return self.clock["sampled_at"]

    @sampled_at.setter
    def sampled_at(self, value: float) -> None:
        self.clock["sampled_at"] = value

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


def pod_metrics(
    usage: dict[tuple[str, str], dict[str, tuple[int, int]]], sampled_at: float
) -> list[dict[str, Any]]:
    return [
        {
            "kind": "PodMetrics",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {"name": name, "namespace": ns},
            "timestamp": rfc3339(sampled_at),
            "window": "10s",
            "containers": [
                {"name": c, "usage": {"cpu": f"{cpu}n", "memory": f"{memory // 1024}Ki"}}
                for c, (cpu, memory) in containers.items()
            ],
        }
        for (ns, name), containers in sorted(usage.items())
    ]


@pytest.fixture
async def board(tmp_path: Path) -> AsyncIterator[Board]:
    """The API server (its metrics.k8s.io fed from ``Board.usage``) and a dashboard over it."""
    usage: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    clock = {"sampled_at": time.time()}

    async def provider(kind: str, namespace: str | None) -> list[dict[str, Any]]:
        return pod_metrics(usage, clock["sampled_at"]) if kind == "PodMetrics" else []

    tokens = TokenFile(tmp_path / "tokens.csv")
    admin = tokens.token_for("admin", (MASTERS_GROUP,))
    server = APIServer(
        APIServerConfig(
            data_dir=tmp_path / "apiserver",
            port=0,
            tokens=tokens,
            log_root=tmp_path / "logs",
            extra={"metrics_provider": provider},
        )
    )
    await server.start()
    api = InProcessServer(server, f"http://127.0.0.1:{server.port}", admin, tokens)
    client = Client(ClusterConfig(server=api.url, token=api.token))
    state = DashboardState(client, metrics_interval=0.2)
    dashboard = DashboardServer(state, client, token=TOKEN, min_interval=0.05)
    running = Board(api, client, state, dashboard, usage, clock)
    state.start()
    await dashboard.start()
    try:
        yield running
    finally:
        await dashboard.stop()
        await state.stop()
        await client.close()
        await server.stop()


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
