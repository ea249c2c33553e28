"""What the dashboard remembers about a pod, with a bound on every part of it.

The dashboard keeps the last hour (``window``) per container and per pod, in memory only:

* :class:`UsageRing` — usage samples ``(time, cpu millicores, memory bytes)`` in numpy ring
  buffers: a fixed ceiling on memory per container (it starts small and doubles up to
  ``capacity``), no per-sample Python objects, and an ordered copy in two slices;
* :class:`Steps` — values that change at moments (a container's requests, limits and
  allocation; a VPA's bounds): a change point is kept only when the values differ from the
  last one, and points older than the window are dropped except the last one before it (the
  value in force when the window starts);
* :class:`PodHistory` — the above per container, plus markers (resize events, pauses, OOM
  kills, restarts) and ``MemoryPaused`` intervals, each in a bounded deque.

Nothing here reads a clock: every method takes the time it needs.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "MARKER_KINDS",
    "ContainerHistory",
    "Marker",
    "PodHistory",
    "Steps",
    "UsageRing",
]

FloatArray = npt.NDArray[np.float64]

MARKER_KINDS: Final = (
    "resize-started",
    "resize-completed",
    "resize-deferred",
    "resize-infeasible",
    "resize-error",
    "paused",
    "oom-killed",
    "restarted",
    "preempted",
    "moved",
)
"""Every kind of marker the pod page draws (its legend lists them in this order)."""


class UsageRing:
    """Usage samples, oldest overwritten once ``capacity`` are held.

    Times must increase: a sample at or before the last one is a repeat (the metrics API
    answers with the same sample until the node agent takes the next) and is ignored.
    """

    def __init__(self, capacity: int, *, initial: int = 32) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        size = max(1, min(initial, capacity))
        self._data: FloatArray = np.empty((3, size), dtype=np.float64)
        self._start = 0
        self._count = 0

    def __len__(self) -> int:
        return self._count

    @property
    def allocated(self) -> int:
        """Samples' worth of memory held now (grows by doubling up to ``capacity``)."""
        return int(self._data.shape[1])

    def last(self) -> tuple[float, float, float] | None:
        if not self._count:
            return None
        i = (self._start + self._count - 1) % self._data.shape[1]
        column = self._data[:, i]
        return float(column[0]), float(column[1]), float(column[2])

    def append(self, at: float, cpu_milli: float, memory_bytes: float) -> bool:
        """Add one sample; False when it is not newer than the last one (nothing kept)."""
        last = self.last()
        if last is not None and at <= last[0]:
            return False
        size = self._data.shape[1]
        if self._count == size and size < self.capacity:
            self._data = np.concatenate(
                [self._ordered(), np.empty((3, min(size * 2, self.capacity) - size))], axis=1
            )
            self._start = 0
            size = self._data.shape[1]
        if self._count < size:
            i = (self._start + self._count) % size
            self._count += 1
        else:  # full: overwrite the oldest
            i = self._start
            self._start = (self._start + 1) % size
        self._data[:, i] = (at, cpu_milli, memory_bytes)
        return True

    def _ordered(self) -> FloatArray:
        size = self._data.shape[1]
        end = self._start + self._count
        if end <= size:
            return self._data[:, self._start : end].copy()
        return np.concatenate([self._data[:, self._start :], self._data[:, : end - size]], axis=1)

    def since(self, start: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(times, cpu, memory)`` of the samples at or after ``start``, oldest first (only
        those are copied: a sparkline of ten minutes does not copy an hour)."""
        size, head = self._data.shape[1], self._start
        first_len = min(self._count, size - head)  # the part before the wrap, then the rest
        rest = self._count - first_len
        if rest and start > self._data[0, head + first_len - 1]:
            i = int(np.searchsorted(self._data[0, :rest], start, side="left"))
            data = self._data[:, i:rest].copy()
        else:
            i = int(np.searchsorted(self._data[0, head : head + first_len], start, side="left"))
            data = np.concatenate(
                [self._data[:, head + i : head + first_len], self._data[:, :rest]], axis=1
            )
        return data[0], data[1], data[2]


class Steps:
    """Values that hold from a moment until the next change (see the module docstring).

    Every point has the same number of values; ``NaN`` stands for "not set" (a container
    without a limit), so an unset value and a set one are different values.
    """

    def __init__(self, width: int, *, maxlen: int = 256) -> None:
        self.width = width
        self._points: collections.deque[tuple[float, tuple[float, ...]]] = collections.deque(
            maxlen=maxlen
        )

    def __len__(self) -> int:
        return len(self._points)

    @property
    def points(self) -> list[tuple[float, tuple[float, ...]]]:
        return list(self._points)

    def last(self) -> tuple[float, ...] | None:
        return self._points[-1][1] if self._points else None

    def record(self, at: float, values: Sequence[float]) -> bool:
        """Note the values in force from ``at``; False (nothing kept) when they did not change.

        A time before the last point's is moved up to it: the series never goes back."""
        if len(values) != self.width:
            raise ValueError(f"expected {self.width} values, got {len(values)}")
        new = tuple(float(v) for v in values)
        if self._points:
            last_at, last = self._points[-1]
            if _same(last, new):
                return False
            at = max(at, last_at)
        self._points.append((at, new))
        return True

    def trim(self, before: float) -> None:
        """Forget points older than ``before``, keeping the one in force at ``before``."""
        while len(self._points) > 1 and self._points[1][0] <= before:
            self._points.popleft()

    def at(self, times: FloatArray) -> FloatArray:
        """The values in force at each time: shape ``(width, len(times))``, NaN before the
        first point."""
        out = np.full((self.width, len(times)), np.nan)
        if not self._points:
            return out
        starts = np.array([p[0] for p in self._points])
        values = np.array([p[1] for p in self._points]).T  # (width, points)
        index = np.searchsorted(starts, times, side="right") - 1
        known = index >= 0
        out[:, known] = values[:, index[known]]
        return out

    def change_times(self, start: float) -> list[float]:
        """When the values changed, from ``start`` on."""
        return [at for at, _ in self._points if at >= start]

    def starts_before(self, start: float) -> bool:
        return bool(self._points) and self._points[0][0] < start


def _same(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b, strict=True))


@dataclass(frozen=True, slots=True)
class Marker:
    """One moment worth a vertical line on the pod's charts."""

    at: float
    kind: str
    """One of :data:`MARKER_KINDS`."""
    reason: str
    """The event's reason or the status field it came from (``ResizeCompleted``, ``OOMKilled``)."""
    message: str = ""
    container: str = ""
    seq: int = 0
    """The event's resourceVersion where it is a number (the API server's write order), else
    0: the order of markers of one second and one kind."""


def _order(marker: Marker) -> tuple[float, int, int]:
    """Time, then (events have whole seconds, and a component may post two at once, in either
    order) a resize's start before its end, then the order they were written."""
    rank = MARKER_KINDS.index(marker.kind) if marker.kind in MARKER_KINDS else 99
    return (marker.at, rank, marker.seq)


SIZE_FIELDS: Final = (
    "request_cpu",
    "limit_cpu",
    "allocated_cpu",
    "request_memory",
    "limit_memory",
    "allocated_memory",
)
"""The values of a container's size :class:`Steps`, in order (cpu millicores, bytes)."""

VPA_FIELDS: Final = (
    "lower_cpu",
    "target_cpu",
    "upper_cpu",
    "lower_memory",
    "target_memory",
    "upper_memory",
)
"""The values of a container's VPA recommendation :class:`Steps`, in order."""


@dataclass
class ContainerHistory:
    usage: UsageRing
    sizes: Steps = field(default_factory=lambda: Steps(len(SIZE_FIELDS)))
    recommendation: Steps = field(default_factory=lambda: Steps(len(VPA_FIELDS)))


class PodHistory:
    """One pod's history (keyed by its uid, so a new pod of the same name starts afresh)."""

    def __init__(
        self,
        *,
        usage_capacity: int,
        max_markers: int = 256,
        max_pauses: int = 64,
    ) -> None:
        self.usage_capacity = usage_capacity
        self.containers: dict[str, ContainerHistory] = {}
        self.markers: collections.deque[Marker] = collections.deque(maxlen=max_markers)
        self._marker_keys: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._max_keys = max_markers * 2
        self.pauses: collections.deque[list[float | None]] = collections.deque(maxlen=max_pauses)
        """``[start, end]`` of each ``MemoryPaused`` interval; ``end`` None while paused."""

    def container(self, name: str) -> ContainerHistory:
        found = self.containers.get(name)
        if found is None:
            found = self.containers[name] = ContainerHistory(UsageRing(self.usage_capacity))
        return found

    def add_marker(self, marker: Marker, *, key: str | None = None) -> bool:
        """Keep ``marker`` unless one with the same ``key`` was kept already (an event seen
        again after a relist); markers stay in order (see :func:`_order`)."""
        if key is not None:
            if key in self._marker_keys:
                return False
            self._marker_keys[key] = None
            while len(self._marker_keys) > self._max_keys:
                self._marker_keys.popitem(last=False)
        if self.markers and _order(marker) < _order(self.markers[-1]):
            ordered = sorted([*self.markers, marker], key=_order)
            self.markers.clear()
            self.markers.extend(ordered[-(self.markers.maxlen or len(ordered)) :])
        else:
            self.markers.append(marker)
        return True

    def pause_started(self, at: float) -> bool:
        if self.pauses and self.pauses[-1][1] is None:
            return False
        self.pauses.append([at, None])
        return True

    def pause_ended(self, at: float) -> bool:
        if not self.pauses or self.pauses[-1][1] is not None:
            return False
        start = self.pauses[-1][0]
        self.pauses[-1][1] = max(at, start if start is not None else at)
        return True

    def trim(self, before: float) -> None:
        """Drop what ended before ``before`` (the window's start)."""
        for history in self.containers.values():
            history.sizes.trim(before)
            history.recommendation.trim(before)
        while self.markers and self.markers[0].at < before:
            self.markers.popleft()
        while self.pauses and self.pauses[0][1] is not None and self.pauses[0][1] < before:
            self.pauses.popleft()
