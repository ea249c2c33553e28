"""The recommender's memory, without I/O: samples and OOMs in, recommendations out.

The controller manager (and ``inplace replay``) feed a :class:`Recommender` what the node
agents report — a container's CPU and memory usage with its current request and limit, an
OOM kill, a pod gone — and ask it, each ``recommender_interval``, for every VPA's
``status.recommendation``. History lives per VPA and container name (upstream aggregates by
pod labels first and then by VPA; one level is enough when every pod is matched to its VPA
before its samples arrive). Checkpoints save and restore it as upstream's
``VerticalPodAutoscalerCheckpoint`` objects (:mod:`.checkpoint`).

Time comes from an injected clock (:class:`WallClock`), so tests and replays run on
simulated time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .model import AggregateContainerState, ContainerState
from .recommend import recommend
from .settings import RecommenderSettings

__all__ = ["ContainerKey", "Recommender", "SystemClock", "VpaKey", "WallClock"]

VpaKey = tuple[str, str]
"""``(namespace, name)`` of a VerticalPodAutoscaler."""


@dataclass(frozen=True)
class ContainerKey:
    """One container of one pod (by uid, so a recreated pod starts a new interval)."""

    pod_uid: str
    container: str


class WallClock(Protocol):
    """Unix time now (the recommender's histograms and checkpoints are in wall time)."""

    def now(self) -> float: ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class Recommender:
    """Per-VPA usage history and the recommendations computed from it."""

    def __init__(self, settings: RecommenderSettings, clock: WallClock | None = None) -> None:
        self.settings = settings
        self.clock: WallClock = clock if clock is not None else SystemClock()
        self._aggregates: dict[VpaKey, dict[str, AggregateContainerState]] = {}
        self._containers: dict[ContainerKey, tuple[VpaKey, ContainerState]] = {}

    # -- input -------------------------------------------------------------------------------

    def aggregate(self, vpa: VpaKey, container: str) -> AggregateContainerState:
        """The history of ``container`` under ``vpa`` (created empty on first use)."""
        by_name = self._aggregates.setdefault(vpa, {})
        state = by_name.get(container)
        if state is None:
            state = by_name[container] = AggregateContainerState(
                self.settings, creation_time=self.clock.now()
            )
        return state

    def _container(self, vpa: VpaKey, key: ContainerKey) -> ContainerState:
        found = self._containers.get(key)
        if found is not None and found[0] == vpa:
            return found[1]
        state = ContainerState(self.aggregate(vpa, key.container))
        self._containers[key] = (vpa, state)
        return state

    def add_sample(
        self,
        vpa: VpaKey,
        key: ContainerKey,
        at: float,
        *,
        cpu_millicores: int | None,
        memory_bytes: int | None,
        cpu_request_millicores: int = 0,
        memory_limit_bytes: int | None = None,
    ) -> None:
        """One usage reading of a container. With ``memory_pressure_fraction`` set, memory
        above that fraction of ``memory_limit_bytes`` also counts as an OOM (see settings)."""
        container = self._container(vpa, key)
        if cpu_millicores is not None:
            container.add_cpu_sample(at, cpu_millicores, cpu_request_millicores)
        if memory_bytes is None:
            return
        container.add_memory_sample(at, memory_bytes)
        fraction = self.settings.memory_pressure_fraction
        if (
            fraction is not None
            and memory_limit_bytes
            and memory_bytes > fraction * memory_limit_bytes
        ):
            container.record_pressure(at, memory_bytes)

    def record_oom(self, vpa: VpaKey, key: ContainerKey, at: float, memory_request: int) -> bool:
        """An OOM kill (or a pod paused at its memory limit) of a container whose memory
        request was ``memory_request`` bytes. False when it is too old to count."""
        return self._container(vpa, key).record_oom(at, memory_request)

    def forget_pod(self, pod_uid: str) -> None:
        """A pod is gone: its containers stop tracking intervals (history stays)."""
        for key in [k for k in self._containers if k.pod_uid == pod_uid]:
            del self._containers[key]

    def forget_vpa(self, vpa: VpaKey) -> None:
        self._aggregates.pop(vpa, None)
        for key in [k for k, (v, _) in self._containers.items() if v == vpa]:
            del self._containers[key]

    def garbage_collect(self) -> list[tuple[VpaKey, str]]:
        """Drop histories idle for a whole memory aggregation window; returns what went."""
        now = self.clock.now()
        gone: list[tuple[VpaKey, str]] = []
        for vpa, by_name in self._aggregates.items():
            for name in [n for n, s in by_name.items() if s.is_expired(now)]:
                del by_name[name]
                gone.append((vpa, name))
        return gone

    # -- output ------------------------------------------------------------------------------

    def recommendation(self, vpa_key: VpaKey, vpa: Mapping[str, Any]) -> dict[str, Any] | None:
        """``status.recommendation`` for the VPA object ``vpa`` (None: no usage yet)."""
        return recommend(
            vpa, self._aggregates.get(vpa_key, {}), self.settings, now=self.clock.now()
        )

    def aggregates(self, vpa: VpaKey) -> Mapping[str, AggregateContainerState]:
        return self._aggregates.get(vpa, {})

    def vpas(self) -> Iterator[VpaKey]:
        return iter(list(self._aggregates))
