"""A cluster that exists only in a real API server: the test plays the scheduler and the node
agent (it writes their status fields) and serves ``metrics.k8s.io`` from a table, so the
rescuer's wiring and ``inplace rescue --dry-run`` run against the real API with no node."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from inplace.api.timestamps import rfc3339
from inplace.apiserver.auth import MASTERS_GROUP, TokenFile
from inplace.apiserver.server import APIServer, APIServerConfig
from inplace.client import NODES, PODS, Client, ClusterConfig


@dataclass
class Usage:
    """``metrics.k8s.io`` PodMetrics from a table: pod key → (cpu, memory) quantities; each
    call is a new reading."""

    table: dict[str, tuple[str, str]] = field(default_factory=dict)
    reads: int = 0

    async def __call__(self, kind: str, namespace: str | None) -> list[dict[str, Any]]:
        if kind != "PodMetrics":
            return []
        self.reads += 1
        stamp = rfc3339()
        out = []
        for key, (cpu, memory) in sorted(self.table.items()):
            ns, name = key.split("/", 1)
            if namespace is not None and ns != namespace:
                continue
            out.append(
                {
                    "kind": "PodMetrics",
                    "apiVersion": "metrics.k8s.io/v1beta1",
                    "metadata": {"name": name, "namespace": ns},
                    "timestamp": f"{stamp[:-1]}.{self.reads:06d}Z",
                    "window": "10s",
                    "containers": [{"name": "main", "usage": {"cpu": cpu, "memory": memory}}],
                }
            )
        return out


@dataclass
class APICluster:
    server: APIServer
    url: str
    token: str
    usage: Usage

    def kubeconfig(self, path: Path) -> Path:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": self.url}}],
            "users": [{"name": "u", "user": {"token": self.token}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def client(self) -> Client:
        return Client(ClusterConfig(server=self.url, token=self.token))


@contextlib.asynccontextmanager
async def api_cluster(tmp_path: Path) -> AsyncIterator[APICluster]:
    tokens = TokenFile(tmp_path / "tokens.csv")
    admin = tokens.token_for("admin", (MASTERS_GROUP,))
    usage = Usage()
    server = APIServer(
        APIServerConfig(
            data_dir=tmp_path / "apiserver",
            port=0,
            tokens=tokens,
            log_root=tmp_path / "logs",
            extra={"metrics_provider": usage},
        )
    )
    await server.start()
    try:
        yield APICluster(server, f"http://127.0.0.1:{server.port}", admin, usage)
    finally:
        await server.stop()


async def create_node(client: Client, node: dict[str, Any]) -> None:
    await client.create(NODES, {k: v for k, v in node.items() if k != "status"})
    await client.patch(
        NODES, node["metadata"]["name"], {"status": node["status"]}, subresource="status"
    )


def _strip(pod: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(pod)
    body.pop("status", None)
    for key in ("uid", "creationTimestamp"):
        body["metadata"].pop(key, None)
    return body


async def create_pod(client: Client, pod: dict[str, Any]) -> dict[str, Any]:
    """Create ``pod`` (a builder's dict) and write its status as its writers would."""
    created = await client.create(PODS, _strip(pod), namespace="default")
    return await set_status(client, created, pod["status"])


async def set_status(client: Client, pod: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    patched: dict[str, Any] = await client.patch(
        PODS,
        pod["metadata"]["name"],
        {"status": status},
        patch_type="strategic",
        namespace="default",
        subresource="status",
    )
    return patched
