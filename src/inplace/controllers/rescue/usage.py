"""Recent peak usage per container, from ``metrics.k8s.io`` PodMetrics readings.

The node agents sample every container every 5 s and keep 15 minutes of history, but only
the latest reading reaches the API (``metrics.k8s.io``, what ``kubectl top`` reads), and
components talk to the cluster through the API alone. So the rescuer reads PodMetrics as
often as the agents sample and keeps its own window of readings per container (a repeated
reading, same ``timestamp``, is counted once). A pod it has not watched for ``min_history``
seconds, with at least two readings (the first CPU reading of a container is a rate over
no interval), has no known peak and is never a donor: after a restart of the controller
manager, pods become donors again as their history refills.

Pure: time is passed in.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from inplace.api.quantity import Quantity, QuantityError
from inplace.api.timestamps import parse_rfc3339

from .model import Size

__all__ = ["DEFAULT_MIN_HISTORY", "DEFAULT_WINDOW", "UsagePeaks"]

DEFAULT_WINDOW: Final = 900.0
"""Seconds of readings a peak is taken over (the node agents keep as much)."""
DEFAULT_MIN_HISTORY: Final = 10.0
"""Seconds a pod must have been watched (two agent samples) before its peak is trusted."""


@dataclass
class _Series:
    cpu: collections.deque[tuple[float, int]] = field(default_factory=collections.deque)
    """Readings whose CPU no later reading exceeds, oldest first: the front is the peak."""
    memory: collections.deque[tuple[float, int]] = field(default_factory=collections.deque)
    first: float = 0.0
    count: int = 0
    last: tuple[float, int, int] | None = None
    last_stamp: str = ""


def _push(queue: collections.deque[tuple[float, int]], at: float, value: int) -> None:
    """Sliding-window maximum: a reading makes every earlier smaller one irrelevant."""
    while queue and queue[-1][1] <= value:
        queue.pop()
    queue.append((at, value))


def _trim(queue: collections.deque[tuple[float, int]], since: float) -> None:
    while queue and queue[0][0] < since:
        queue.popleft()


class UsagePeaks:
    """Readings per (pod key, container) over a sliding window."""

    def __init__(
        self, *, window: float = DEFAULT_WINDOW, min_history: float = DEFAULT_MIN_HISTORY
    ) -> None:
        self.window = window
        self.min_history = min_history
        self._series: dict[tuple[str, str], _Series] = {}
        self._containers: dict[str, set[str]] = {}

    def record(self, pod: str, container: str, at: float, usage: Size, stamp: str = "") -> bool:
        """One reading; False when it repeats the last one (same ``stamp``)."""
        key = (pod, container)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = _Series(first=at)
            self._containers.setdefault(pod, set()).add(container)
        if stamp and stamp == series.last_stamp:
            return False
        series.last_stamp = stamp
        series.count += 1
        series.last = (at, usage.cpu, usage.memory)
        _push(series.cpu, at, usage.cpu)
        _push(series.memory, at, usage.memory)
        _trim(series.cpu, at - self.window)
        _trim(series.memory, at - self.window)
        return True

    def record_pod_metrics(self, items: Iterable[Mapping[str, Any]]) -> int:
        """PodMetrics objects (``metrics.k8s.io/v1beta1``); returns how many new readings."""
        added = 0
        for item in items:
            meta = item.get("metadata") or {}
            pod = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
            stamp = str(item.get("timestamp") or "")
            try:
                at = parse_rfc3339(stamp).timestamp()
            except ValueError:
                continue
            for container in item.get("containers") or ():
                usage = container.get("usage") or {}
                try:
                    cpu = Quantity.from_json(usage.get("cpu", "0")).milli_value()
                    memory = Quantity.from_json(usage.get("memory", "0")).value()
                except QuantityError:
                    continue
                added += self.record(
                    pod, str(container.get("name") or ""), at, Size(cpu, memory), stamp
                )
        return added

    def peak(self, pod: str, container: str, now: float) -> Size | None:
        """The largest CPU and memory readings of the window, or None while the container's
        history is too short to trust (or no reading is recent)."""
        series = self._series.get((pod, container))
        if series is None or series.count < 2 or now - series.first < self.min_history:
            return None
        _trim(series.cpu, now - self.window)
        _trim(series.memory, now - self.window)
        if not series.cpu or not series.memory:
            return None
        return Size(series.cpu[0][1], series.memory[0][1])

    def latest(self, pod: str, container: str) -> Size | None:
        series = self._series.get((pod, container))
        if series is None or series.last is None:
            return None
        _, cpu, memory = series.last
        return Size(cpu, memory)

    def forget(self, pod: str) -> None:
        """Drop a pod that is gone (a pod of the same name later starts afresh)."""
        for container in self._containers.pop(pod, ()):
            self._series.pop((pod, container), None)

    def pods(self) -> list[str]:
        return list(self._containers)
