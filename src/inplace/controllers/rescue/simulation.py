"""The rescuer replayed on a simulated cluster: services sized for their peaks, a burst of jobs.

``bench/rescue_bench.py`` runs this with and without the rescuer and prints what an
operator asks: how many of the burst's pods were placed, how long they waited, how many
running pods were shrunk, whether a donor ever used more than it was left with, and when
the donors were back at their size. The very decisions the controller makes run here
(:func:`~.policy.decide` over :mod:`.model` values, floors from :class:`~.usage.UsagePeaks`
fed with the simulated usage), on a simulated clock; the scheduler is reduced to what
matters for room — pods charged ``max(desired, allocated)``, a pending pod placed on the
node with the most free CPU that fits it, retried every step (as the real scheduler's
event-driven retry would on each freed room).

The scenario (:class:`Scenario`): ``nodes`` nodes filled with services whose requests are
their daily peak (memory: the peak working set), running off-peak — usage a fraction of
the peak with noise, rising during the run as a service's day does; a share of them allow
shrinking (``inplace.dev/shrinkable``). Then ``burst`` jobs arrive over ``burst_over``
seconds, each running ``job_seconds`` once placed. Usage is sampled every 5 s, as the node
agents do; a resize takes ``resize_seconds`` to be applied (the node agent's round trip).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Final

from .model import ContainerShare, Donor, NodeRoom, Pending, Size, container_floor
from .policy import DEFAULT_GRACE, DEFAULT_TIMEOUT, InFlight, Shrunk, decide
from .usage import UsagePeaks
from .view import RescueSettings

__all__ = ["Result", "Scenario", "simulate"]

MIB: Final = 1024 * 1024
GIB: Final = 1024 * MIB
SAMPLE_EVERY: Final = 5.0
MAIN: Final = "main"


@dataclass(frozen=True)
class Scenario:
    nodes: int = 20
    node_cpu: int = 16_000
    node_memory: int = 64 * GIB
    fill: float = 0.92
    """Share of each node's allocatable the services request."""
    shrinkable: float = 0.7
    """Share of the services that allow shrinking."""
    off_peak: tuple[float, float] = (0.15, 0.45)
    """Range of a service's usage as a share of its peak when the run starts."""
    rise: float = 0.25
    """How much of its peak a service's usage rises over the run (its day going on)."""
    burst: int = 300
    burst_at: float = 600.0
    burst_over: float = 300.0
    job_cpu: int = 1000
    job_memory: int = 2 * GIB
    job_seconds: float = 1800.0
    duration: float = 3 * 3600.0
    step: float = 1.0
    resize_seconds: float = 1.0
    seed: int = 1


@dataclass
class _Pod:
    key: str
    priority: int
    request: Size
    """Desired requests (one container)."""
    held: Size
    """What the node agent applied."""
    node: str | None = None
    service: bool = True
    shrinkable: bool = False
    peak: Size = field(default_factory=Size)
    start_level: float = 0.0
    phase: float = 0.0
    arrived: float = 0.0
    placed: float | None = None
    ends: float | None = None
    original: Size | None = None
    apply_at: float | None = None

    @property
    def charge(self) -> Size:
        return self.request.max(self.held)


@dataclass
class Result:
    rescuer: bool
    jobs: int = 0
    placed: int = 0
    waits: list[float] = field(default_factory=list)
    """Seconds from arrival to placement, per placed job."""
    unplaced_wait: float = 0.0
    """Seconds the jobs never placed waited (until the run ended)."""
    shrunk_pods: set[str] = field(default_factory=set)
    shrinks: int = 0
    growths: int = 0
    rescues: int = 0
    over_request: int = 0
    """Samples at which a shrunk service used more memory than its request."""
    restored_at: float | None = None
    """When the last shrunk service was back at its original size (None: not by the end)."""
    still_shrunk: int = 0
    services: int = 0
    service_requested: float = 0.0
    """Core-seconds the services requested over the run."""

    def wait(self, q: float) -> float:
        if not self.waits:
            return math.nan
        ordered = sorted(self.waits)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def mean_wait(self) -> float:
        return statistics.fmean(self.waits) if self.waits else math.nan


class _Cluster:
    def __init__(self, scenario: Scenario, rescuer: bool) -> None:
        self.s = scenario
        self.rescuer = rescuer
        self.rng = random.Random(scenario.seed)
        self.nodes = [f"node-{i + 1:03d}" for i in range(scenario.nodes)]
        self.pods: dict[str, _Pod] = {}
        self.peaks = UsagePeaks()
        self.settings = RescueSettings()
        self.inflight: dict[str, InFlight] = {}
        self.result = Result(rescuer)
        self.now = 0.0
        self._fill()

    # -- the cluster -------------------------------------------------------------------------

    def _fill(self) -> None:
        s, rng = self.s, self.rng
        count = 0
        for node in self.nodes:
            cpu_left = int(s.node_cpu * s.fill)
            memory_left = int(s.node_memory * s.fill)
            while True:
                cpu = rng.choice((500, 1000, 1500, 2000, 3000))
                memory = rng.choice((1, 2, 3, 4, 6, 8)) * GIB
                if cpu > cpu_left or memory > memory_left:
                    break
                cpu_left -= cpu
                memory_left -= memory
                count += 1
                size = Size(cpu, memory)
                self.pods[f"svc/s{count}"] = _Pod(
                    f"svc/s{count}",
                    0,
                    size,
                    size,
                    node,
                    shrinkable=rng.random() < s.shrinkable,
                    peak=size,
                    start_level=rng.uniform(*s.off_peak),
                    phase=rng.uniform(0, 1),
                )
        self.result.services = count
        for i in range(s.burst):
            at = s.burst_at + s.burst_over * i / max(s.burst - 1, 1)
            size = Size(s.job_cpu, s.job_memory)
            self.pods[f"jobs/j{i + 1}"] = _Pod(
                f"jobs/j{i + 1}", 0, size, size, None, service=False, arrived=at
            )
        self.result.jobs = s.burst

    def usage(self, pod: _Pod) -> Size:
        level = pod.start_level + self.s.rise * self.now / self.s.duration
        level *= 1.0 + 0.1 * math.sin(2 * math.pi * (self.now / 900.0 + pod.phase))
        level = min(level, 1.0)
        memory_level = 0.5 + 0.5 * level  # memory is less elastic than CPU
        return Size(int(pod.peak.cpu * level), int(pod.peak.memory * memory_level))

    def _free(self) -> dict[str, Size]:
        free = {n: Size(self.s.node_cpu, self.s.node_memory) for n in self.nodes}
        for pod in self.pods.values():
            if pod.node is not None:
                free[pod.node] = free[pod.node] - pod.charge
        return free

    def _schedule(self) -> None:
        free = self._free()
        waiting = [p for p in self.pods.values() if p.node is None and p.arrived <= self.now]
        for pod in sorted(waiting, key=lambda p: (-p.priority, p.arrived, p.key)):
            fitting = [n for n in self.nodes if free[n].covers(pod.request)]
            if not fitting:
                continue
            node = max(fitting, key=lambda n: (free[n].cpu, n))
            pod.node, pod.placed = node, self.now
            pod.ends = self.now + self.s.job_seconds
            free[node] = free[node] - pod.request
            self.result.placed += 1
            self.result.waits.append(self.now - pod.arrived)
            self.inflight.pop(pod.key, None)

    def _apply_resizes(self) -> bool:
        applied = False
        for pod in self.pods.values():
            if pod.apply_at is not None and pod.apply_at <= self.now:
                pod.held, pod.apply_at = pod.request, None
                applied = True
                if pod.original is not None and pod.request == pod.original:
                    pod.original = None
        return applied

    def _finish(self) -> bool:
        done = [k for k, p in self.pods.items() if p.ends is not None and p.ends <= self.now]
        for key in done:
            del self.pods[key]
            self.peaks.forget(key)
        return bool(done)

    def _arrivals(self, since: float) -> bool:
        return any(since < p.arrived <= self.now for p in self.pods.values() if not p.service)

    def _sample(self) -> None:
        for pod in self.pods.values():
            if pod.node is None or not pod.service:
                continue
            use = self.usage(pod)
            self.peaks.record(pod.key, MAIN, self.now, use)
            self.result.service_requested += pod.request.cpu / 1000.0 * SAMPLE_EVERY
            if pod.original is not None and use.memory > pod.request.memory:
                self.result.over_request += 1

    # -- the rescuer --------------------------------------------------------------------------

    def _rescue(self) -> None:
        pending = [
            Pending(p.key, p.priority, p.request, None, p.arrived)
            for p in self.pods.values()
            if p.node is None and p.arrived <= self.now
        ]
        free = self._free()
        rooms = [NodeRoom(n, free[n], 110) for n in self.nodes]
        donors: list[Donor] = []
        shrunk: list[Shrunk] = []
        for pod in self.pods.values():
            if pod.node is None or not pod.shrinkable or pod.apply_at is not None:
                continue
            peak = self.peaks.peak(pod.key, MAIN, self.now)
            if peak is None:
                continue
            floor = container_floor(
                peak,
                margin=self.settings.margin,
                minimum=Size(self.settings.min_cpu, self.settings.min_memory),
            )
            share = ContainerShare(MAIN, pod.request, floor)
            donors.append(Donor(pod.key, pod.node, pod.priority, (share,), pod.charge))
            if pod.original is not None:
                shrunk.append(
                    Shrunk(
                        pod.key,
                        pod.node,
                        pod.priority,
                        {MAIN: pod.request},
                        {MAIN: pod.original},
                        {MAIN: floor},
                    )
                )
        if not pending and not shrunk:
            return
        for key, flight in list(self.inflight.items()):
            settled = all(d in self.pods and self.pods[d].apply_at is None for d in flight.donors)
            if flight.settled is None and settled:
                self.inflight[key] = replace(flight, settled=self.now)
        decision = decide(
            pending, rooms, donors, shrunk, self.inflight, now=self.now, timeout=DEFAULT_TIMEOUT
        )
        for key in decision.expired:
            self.inflight.pop(key, None)
        for rescue in decision.rescues:
            self.result.rescues += 1
            for shrink in rescue.shrinks:
                pod = self.pods[shrink.donor]
                ((_, _, after),) = shrink.containers
                if pod.original is None:
                    pod.original = pod.request
                pod.request, pod.apply_at = after, self.now + self.s.resize_seconds
                self.result.shrinks += 1
                self.result.shrunk_pods.add(pod.key)
            self.inflight[rescue.pending] = InFlight(
                rescue.pending, rescue.node, rescue.donors, self.now
            )
        for growth in decision.growths:
            pod = self.pods[growth.pod]
            ((_, _, after),) = growth.containers
            pod.request, pod.apply_at = after, self.now + self.s.resize_seconds
            self.result.growths += 1

    # -- the run ------------------------------------------------------------------------------

    def run(self, progress: Callable[[float], None] | None = None) -> Result:
        s = self.s
        next_sample = 0.0
        steps = int(s.duration / s.step)
        before = -1.0
        for i in range(steps + 1):
            self.now = i * s.step
            # Only what changes the room or the usage is worth a pass (the real scheduler and
            # rescuer are event-driven too).
            dirty = self._finish() | self._apply_resizes() | self._arrivals(before)
            before = self.now
            if self.now >= next_sample:
                self._sample()
                next_sample += SAMPLE_EVERY
                dirty = True
            if any(
                f.expired(self.now, timeout=DEFAULT_TIMEOUT, grace=DEFAULT_GRACE)
                for f in self.inflight.values()
            ):
                dirty = True
            if not dirty:
                continue
            self._schedule()
            if self.rescuer:
                self._rescue()
            if self.rescuer and self.result.shrunk_pods:
                shrunk_now = sum(1 for p in self.pods.values() if p.original is not None)
                if shrunk_now == 0 and self.result.restored_at is None:
                    self.result.restored_at = self.now
                elif shrunk_now:
                    self.result.restored_at = None
            if progress is not None and i % 600 == 0:
                progress(self.now)
        self.result.still_shrunk = sum(1 for p in self.pods.values() if p.original is not None)
        self.result.unplaced_wait = sum(
            self.now - p.arrived for p in self.pods.values() if p.node is None and not p.service
        )
        return self.result


def simulate(
    scenario: Scenario, *, rescuer: bool, progress: Callable[[float], None] | None = None
) -> Result:
    """One run of ``scenario``, with or without the rescuer."""
    return _Cluster(scenario, rescuer).run(progress)
