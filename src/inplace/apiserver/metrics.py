"""Prometheus metrics of the API server, with upstream's names and labels."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    1.25,
    1.5,
    2,
    3,
    4,
    5,
    6,
    8,
    10,
    15,
    20,
    30,
    45,
    60,
)


class APIServerMetrics:
    """One registry per server, so several servers in one process (tests) do not collide."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ["verb", "group", "version", "resource", "subresource", "scope", "component"]
        self.requests = Counter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.",
            [*labels, "code"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, "
            "version, resource, subresource, scope and component.",
            labels,
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.watchers = Gauge(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resources",
            ["group", "version", "kind"],
            registry=self.registry,
        )
        self.objects = Gauge(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind.",
            ["resource"],
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
