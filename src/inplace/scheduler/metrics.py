"""Prometheus metrics with upstream kube-scheduler's names, plus the resize arbiter's.

Each :class:`SchedulerMetrics` has its own registry (several schedulers in one test process
do not collide); :func:`serve_metrics` exposes it on ``/metrics`` (and ``/healthz``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["SchedulerMetrics", "serve_metrics"]

_LATENCY_BUCKETS = (
    0.0001,
    0.0002,
    0.0005,
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1.0,
)
RESIZE_DECISIONS = ("approved", "deferred", "infeasible", "evicted", "preempted")


class SchedulerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result.",
            ["result", "profile"],
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
            ["result", "profile"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type.",
            ["queue"],
            registry=self.registry,
        )
        self._pending_children = [
            self.pending_pods.labels(queue=q)
            for q in ("active", "backoff", "unschedulable", "gated")
        ]
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now.",
            registry=self.registry,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims.",
            buckets=(1, 2, 4, 8, 16, 32, 64),
            registry=self.registry,
        )
        self.resize_decisions = Counter(
            "inplace_resize_decisions_total",
            "Resize arbiter decisions, by decision.",
            ["decision"],
            registry=self.registry,
        )
        for decision in RESIZE_DECISIONS:
            self.resize_decisions.labels(decision=decision)
        for result in ("scheduled", "unschedulable", "error"):
            self.schedule_attempts.labels(result=result, profile="default-scheduler")
            self.attempt_duration.labels(result=result, profile="default-scheduler")

    def watch_queue(
        self,
        active: Callable[[], int],
        backoff: Callable[[], int],
        unschedulable: Callable[[], int],
    ) -> None:
        """Report the queue sizes at scrape time (nothing to update on the hot path)."""
        for gauge, fn in zip(
            self._pending_children, (active, backoff, unschedulable), strict=False
        ):
            gauge.set_function(fn)

    def set_pending(self, active: int, backoff: int, unschedulable: int, gated: int = 0) -> None:
        for gauge, value in zip(
            self._pending_children, (active, backoff, unschedulable, gated), strict=True
        ):
            gauge.set(value)

    def attempt(self, result: str, seconds: float, profile: str = "default-scheduler") -> None:
        children = self._children.get((result, profile))
        if children is None:
            children = (
                self.schedule_attempts.labels(result=result, profile=profile),
                self.attempt_duration.labels(result=result, profile=profile),
            )
            self._children[(result, profile)] = children
        children[0].inc()
        children[1].observe(seconds)

    def decision(self, decision: str) -> None:
        self.resize_decisions.labels(decision=decision).inc()

    def render(self) -> bytes:
        out: bytes = generate_latest(self.registry)
        return out


async def serve_metrics(
    metrics: SchedulerMetrics,
    *,
    host: str = "127.0.0.1",
    port: int,
    healthy: Callable[[], bool] = lambda: True,
) -> web.AppRunner:
    """Serve ``/metrics`` and ``/healthz``; returns the runner (``await runner.cleanup()``)."""

    async def handle_metrics(_: web.Request) -> web.Response:
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def handle_healthz(_: web.Request) -> web.Response:
        return web.Response(
            text="ok" if healthy() else "not ready", status=200 if healthy() else 503
        )

    app = web.Application()
    app.router.add_get("/metrics", handle_metrics)
    app.router.add_get("/healthz", handle_healthz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner
