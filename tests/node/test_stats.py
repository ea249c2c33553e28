"""The usage sampler and its HTTP endpoint (inplace.node.stats), read by the metrics provider."""

from __future__ import annotations

from typing import Any

import aiohttp

from inplace.apiserver.nodemetrics import NodeMetricsProvider
from inplace.node.cgroups.base import CgroupError, CgroupUsage
from inplace.node.stats import ContainerRef, StatsServer, UsageSampler


class FakeDriver:
    """Only what the sampler reads: cumulative CPU and working set per path."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[int, int]] = {}

    def usage(self, path: str) -> CgroupUsage:
        if path not in self.values:
            raise CgroupError(path)
        cpu, mem = self.values[path]
        return CgroupUsage(cpu, mem, mem)


def test_sampler_rates_history_and_summary() -> None:
    now = [1000.0]
    driver = FakeDriver()
    sampler = UsageSampler(driver, node_path="n", history_seconds=10, wall=lambda: now[0])  # type: ignore[arg-type]
    ref = ContainerRef("ns", "p", "u", "c", "n/podu/c")
    driver.values = {"n/podu/c": (0, 100), "n": (0, 200)}
    sampler.sample([ref])
    now[0] += 2
    driver.values = {"n/podu/c": (1_000_000_000, 300), "n": (2_000_000_000, 400)}
    sampler.sample([ref])
    summary = sampler.summary("n")
    container = summary["pods"][0]["containers"][0]
    assert container["cpu"]["usageNanoCores"] == 500_000_000  # half a core
    assert container["memory"]["workingSetBytes"] == 300
    assert summary["node"]["cpu"]["usageNanoCores"] == 1_000_000_000
    assert summary["pods"][0]["podRef"] == {"name": "p", "namespace": "ns", "uid": "u"}
    now[0] += 20  # older samples fall out of the window
    sampler.sample([ref])
    assert len(sampler.history()["items"][0]["samples"]) == 1
    sampler.sample([])  # the container is gone: forgotten
    assert sampler.summary("n")["pods"] == []


async def test_endpoint_and_provider_shapes() -> None:
    driver = FakeDriver()
    sampler = UsageSampler(driver, node_path="n")  # type: ignore[arg-type]
    driver.values = {"n/podu/c": (0, 5 * 1024 * 1024), "n": (0, 8 * 1024 * 1024)}
    sampler.sample([ContainerRef("ns", "p", "u", "c", "n/podu/c")])
    server = StatsServer(sampler, "n")
    port = await server.start()
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/healthz") as response,
        ):
            assert await response.text() == "ok"
        node: dict[str, Any] = {
            "metadata": {"name": "n"},
            "status": {
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            },
        }
        unreachable: dict[str, Any] = {"metadata": {"name": "x"}, "status": {}}
        provider = NodeMetricsProvider(lambda: [node, unreachable])
        pods = await provider("PodMetrics", None)
        assert pods == [
            {
                "kind": "PodMetrics",
                "apiVersion": "metrics.k8s.io/v1beta1",
                "metadata": {
                    "name": "p",
                    "namespace": "ns",
                    "creationTimestamp": pods[0]["metadata"]["creationTimestamp"],
                    "labels": {},
                },
                "timestamp": pods[0]["timestamp"],
                "window": "10s",
                "containers": [{"name": "c", "usage": {"cpu": "0n", "memory": "5120Ki"}}],
            }
        ]
        nodes = await provider("NodeMetrics", None)
        assert [n["metadata"]["name"] for n in nodes] == ["n"]
        assert nodes[0]["usage"] == {"cpu": "0n", "memory": "8192Ki"}
        assert await provider("Other", None) == []
    finally:
        await server.stop()
