"""metrics.k8s.io for ``kubectl top``: PodMetrics and NodeMetrics from the node agents.

The API server calls ``await provider(kind, namespace)`` with ``kind`` ``"PodMetrics"`` or
``"NodeMetrics"``. The provider asks every Node's agent for its usage: the agent's endpoint is
``http://127.0.0.1:<status.daemonEndpoints.kubeletEndpoint.Port>/stats/summary?node=NAME``
(the node parameter picks one when an endpoint serves many simulated nodes; plain HTTP
on loopback, read-only; see :mod:`inplace.node.stats`), answered in kubelet's Summary API
shape. Answers are cached for ``ttl`` seconds so that ``kubectl top`` in a loop does not fan
out to every agent each time; an agent that does not answer within ``timeout`` is left out,
as metrics-server leaves out an unreachable kubelet.

Objects are upstream's ``metrics.k8s.io/v1beta1`` shapes: ``metadata`` (name, namespace,
creationTimestamp, labels ``{}``), ``timestamp``, ``window`` and ``containers[].usage`` /
``usage`` with ``cpu`` in nano-cores (``"1234567n"``) and ``memory`` in ``Ki``, as
metrics-server writes them.

Wiring (in the process that runs the API server)::

    config.extra["metrics_provider"] = NodeMetricsProvider(list_node_objects)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import aiohttp

from inplace.api.timestamps import rfc3339
from inplace.apiserver.errors import StatusError
from inplace.apiserver.routing import RequestInfo

__all__ = ["MetricsProvider", "NodeMetricsProvider", "kubelet_endpoint", "read_metrics"]

NodeLister = Callable[[], Iterable[dict[str, Any]] | Awaitable[Iterable[dict[str, Any]]]]
#: ``await provider(kind, namespace)``: the PodMetrics or NodeMetrics objects of that scope.
MetricsProvider = Callable[[str, str | None], Awaitable[list[dict[str, Any]]]]


async def read_metrics(provider: MetricsProvider | None, info: RequestInfo) -> dict[str, Any]:
    """GET or LIST of a metrics.k8s.io kind, served from memory (the kinds are not stored).

    Without a provider (an API server with no node agents) every list is empty.
    """
    kind = info.kind
    if info.verb not in ("get", "list"):
        raise StatusError(405, f"{info.verb} is not supported on {kind.plural}.{kind.group}")
    items = await provider(kind.kind, info.namespace) if provider else []
    if info.name is not None:
        for item in items:
            if item["metadata"]["name"] == info.name:
                return item
        raise StatusError(404, f'{kind.plural}.{kind.group} "{info.name}" not found')
    return {"kind": kind.list_kind, "apiVersion": kind.api_version, "metadata": {}, "items": items}


def _cpu(nano: int) -> str:
    return f"{max(0, int(nano))}n"


def _memory(value: int) -> str:
    return f"{max(0, int(value)) // 1024}Ki"


def kubelet_endpoint(node: dict[str, Any]) -> tuple[str, int] | None:
    """Where a Node's agent listens: its InternalIP (127.0.0.1 without one) and
    ``status.daemonEndpoints.kubeletEndpoint.Port``; None before the agent published it."""
    endpoints = (node.get("status") or {}).get("daemonEndpoints") or {}
    port = (endpoints.get("kubeletEndpoint") or {}).get("Port")
    if not isinstance(port, int) or port <= 0:
        return None
    for address in (node.get("status") or {}).get("addresses") or ():
        if address.get("type") == "InternalIP" and address.get("address"):
            return str(address["address"]), port
    return "127.0.0.1", port


class NodeMetricsProvider:
    """The ``metrics_provider`` callable (see the module docstring)."""

    def __init__(
        self, list_nodes: NodeLister, *, ttl: float = 2.0, timeout: float = 2.0, window: str = "10s"
    ) -> None:
        self.list_nodes = list_nodes
        self.ttl = ttl
        self.timeout = timeout
        self.window = window
        self._cache: tuple[float, list[tuple[str, dict[str, Any]]]] | None = None
        self._lock = asyncio.Lock()

    async def __call__(self, kind: str, namespace: str | None) -> list[dict[str, Any]]:
        summaries = await self._summaries()
        if kind == "NodeMetrics":
            return [m for name, s in summaries if (m := self._node_metrics(name, s)) is not None]
        if kind == "PodMetrics":
            out: list[dict[str, Any]] = []
            for _, summary in summaries:
                for pod in summary.get("pods") or ():
                    ref = pod.get("podRef") or {}
                    if namespace is not None and ref.get("namespace") != namespace:
                        continue
                    out.append(self._pod_metrics(pod))
            out.sort(key=lambda m: (m["metadata"]["namespace"], m["metadata"]["name"]))
            return out
        return []

    async def _nodes(self) -> list[dict[str, Any]]:
        result = self.list_nodes()
        if isinstance(result, Awaitable):
            result = await result
        return list(result)

    async def _summaries(self) -> list[tuple[str, dict[str, Any]]]:
        async with self._lock:
            now = time.monotonic()
            if self._cache is not None and now - self._cache[0] < self.ttl:
                return self._cache[1]
            nodes = await self._nodes()
            timeout = aiohttp.ClientTimeout(total=self.timeout)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                results = await asyncio.gather(
                    *(self._fetch(session, node) for node in nodes), return_exceptions=True
                )
            summaries = [
                (node["metadata"]["name"], result)
                for node, result in zip(nodes, results, strict=True)
                if isinstance(result, dict)
            ]
            self._cache = (now, summaries)
            return summaries

    async def _fetch(self, session: aiohttp.ClientSession, node: dict[str, Any]) -> dict[str, Any]:
        endpoint = kubelet_endpoint(node)
        if endpoint is None:
            raise LookupError("no kubelet endpoint")
        url = f"http://{endpoint[0]}:{endpoint[1]}/stats/summary"
        params = {"node": node["metadata"]["name"]}
        async with session.get(url, params=params) as response:
            response.raise_for_status()
            body = await response.json()
        if not isinstance(body, dict):
            raise ValueError("unexpected summary")
        return body

    def _node_metrics(self, name: str, summary: dict[str, Any]) -> dict[str, Any] | None:
        node = summary.get("node") or {}
        if "cpu" not in node:
            return None
        return {
            "kind": "NodeMetrics",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {"name": name, "creationTimestamp": rfc3339(), "labels": {}},
            "timestamp": node.get("time") or rfc3339(),
            "window": self.window,
            "usage": {
                "cpu": _cpu((node.get("cpu") or {}).get("usageNanoCores", 0)),
                "memory": _memory((node.get("memory") or {}).get("workingSetBytes", 0)),
            },
        }

    def _pod_metrics(self, pod: dict[str, Any]) -> dict[str, Any]:
        ref = pod.get("podRef") or {}
        containers = [
            {
                "name": c.get("name", ""),
                "usage": {
                    "cpu": _cpu((c.get("cpu") or {}).get("usageNanoCores", 0)),
                    "memory": _memory((c.get("memory") or {}).get("workingSetBytes", 0)),
                },
            }
            for c in pod.get("containers") or ()
        ]
        return {
            "kind": "PodMetrics",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {
                "name": ref.get("name", ""),
                "namespace": ref.get("namespace", ""),
                "creationTimestamp": rfc3339(),
                "labels": {},
            },
            "timestamp": pod.get("time") or rfc3339(),
            "window": self.window,
            "containers": containers,
        }
