"""One usage source: metrics.k8s.io's PodMetrics, else the nodes' Summary API through the
node proxy, for the autoscaler and the rescuer alike."""

from __future__ import annotations

from typing import Any, cast

from inplace.client import APINotFoundError
from inplace.client.api import Client
from inplace.client.informer import Informer
from inplace.controllers.usage import PodMetricsSource, summary_pod_metrics
from inplace.controllers.vpa.inputs import Sample, usage_samples

T = "2026-01-01T00:00:10Z"
AT = 1767225610.0


def test_a_summary_becomes_pod_metrics() -> None:
    """As metrics-server reads a kubelet: usageNanoCores and workingSetBytes per container,
    stamped with the pod's sample time (else its containers' latest)."""
    summary = {
        "node": {"nodeName": "n1"},
        "pods": [
            {
                "podRef": {"name": "web", "namespace": "default", "uid": "u1"},
                "time": T,
                "containers": [
                    {
                        "name": "app",
                        "cpu": {"time": T, "usageNanoCores": 250_000_000},
                        "memory": {"time": T, "workingSetBytes": 100 * 2**20},
                    }
                ],
            },
            {
                "podRef": {"name": "db", "namespace": "data"},
                "containers": [
                    {"name": "a", "cpu": {"time": "2026-01-01T00:00:05Z", "usageNanoCores": 1}},
                    {"name": "b", "cpu": {"time": T, "usageNanoCores": 0}},
                    {"memory": {"workingSetBytes": 1}},
                ],
            },
            {"podRef": {}, "containers": []},
        ],
    }
    metrics = summary_pod_metrics(summary)
    assert metrics == [
        {
            "metadata": {"name": "web", "namespace": "default"},
            "timestamp": T,
            "containers": [
                {"name": "app", "usage": {"cpu": "250000000n", "memory": str(100 * 2**20)}}
            ],
        },
        {
            "metadata": {"name": "db", "namespace": "data"},
            "timestamp": T,
            "containers": [
                {"name": "a", "usage": {"cpu": "1n"}},
                {"name": "b", "usage": {"cpu": "0n"}},
            ],
        },
    ]
    assert usage_samples(metrics[0]) == [Sample("app", AT, 250, 100 * 2**20)]


class FakeClient:
    """metrics.k8s.io served or not; node proxy answers for the nodes that have one."""

    def __init__(self, summaries: dict[str, Any]) -> None:
        self.served: list[dict[str, Any]] | None = None
        self.summaries = summaries
        self.asked: list[str] = []

    async def list(self, resource: Any) -> dict[str, Any]:
        if self.served is None:
            raise APINotFoundError(404, "NotFound", "the server could not find the resource")
        return {"items": self.served}

    async def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        self.asked.append(path)
        node = path.split("/")[4]
        if node not in self.summaries:
            raise OSError("connection refused")
        return dict(self.summaries[node])


class FakeNodes:
    def __init__(self, *names: str) -> None:
        self.names = names

    def list(self) -> list[dict[str, Any]]:
        return [{"metadata": {"name": n}} for n in self.names]


def summary(pod: str) -> dict[str, Any]:
    container = {"name": "app", "cpu": {"time": T, "usageNanoCores": 5}}
    return {"pods": [{"podRef": {"name": pod, "namespace": "ns"}, "containers": [container]}]}


async def test_the_summary_api_through_the_node_proxy_until_metrics_are_served() -> None:
    client = FakeClient({"n1": summary("a"), "n2": summary("b")})
    source = PodMetricsSource(
        cast(Client, client), cast(Informer, FakeNodes("n1", "n2", "down")), "test"
    )
    got = await source.read()
    assert [m["metadata"]["name"] for m in got] == ["a", "b"]  # "down" is left out
    assert client.asked == [f"/api/v1/nodes/{n}/proxy/stats/summary" for n in ("n1", "n2", "down")]
    assert source.from_summaries
    client.served = [{"metadata": {"name": "served", "namespace": "ns"}}]
    assert await source.read() == client.served
    assert not source.from_summaries
