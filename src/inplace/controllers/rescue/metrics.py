"""The rescue controller's Prometheus metrics (``inplace_rescue_*``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["RescueMetrics"]

_SECONDS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)


class RescueMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.pending = Gauge(
            "inplace_rescue_pending_pods",
            "Pods the scheduler could not place for lack of CPU or memory, at the last pass.",
            registry=self.registry,
        )
        self.shrunk = Gauge(
            "inplace_rescue_shrunk_pods",
            "Pods shrunk by the rescuer and not yet back at their size.",
            registry=self.registry,
        )
        self.rescues = Counter(
            "inplace_rescue_rescues_total",
            "Rescues started (donors shrunk so that a pending pod fits a node).",
            registry=self.registry,
        )
        self.outcomes = Counter(
            "inplace_rescue_outcomes_total",
            "How rescues ended: placed (the pending pod was bound), gone (it was deleted), "
            "expired (not placed within the timeout), failed (a donor's shrink failed).",
            ["outcome"],
            registry=self.registry,
        )
        self.resizes = Counter(
            "inplace_rescue_resizes_total",
            "Resizes the rescuer asked for: shrink, grow, revert (a shrink that failed), "
            "by result (ok, error).",
            ["direction", "result"],
            registry=self.registry,
        )
        self.reclaimed_cpu = Counter(
            "inplace_rescue_reclaimed_cpu_millicores_total",
            "CPU requests taken from donors (millicores).",
            registry=self.registry,
        )
        self.reclaimed_memory = Counter(
            "inplace_rescue_reclaimed_memory_bytes_total",
            "Memory requests taken from donors (bytes).",
            registry=self.registry,
        )
        self.placement_seconds = Histogram(
            "inplace_rescue_placement_seconds",
            "From a rescue's start to its pending pod's binding.",
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.pass_seconds = Histogram(
            "inplace_rescue_pass_duration_seconds",
            "One pass of the rescuer's decisions over the cluster.",
            buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0),
            registry=self.registry,
        )
