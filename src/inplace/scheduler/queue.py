"""The scheduling queue: active (a heap), backoff, and unschedulable — upstream's three queues.

* **activeQ** pops the highest ``spec.priority`` first, then the pod that entered the queue
  first (upstream's ``PrioritySort``).
* **backoffQ** holds pods that failed recently until their back-off expires (1 s doubling per
  attempt, capped at 10 s); a timer on the injected :class:`~inplace.client.Clock` moves
  them back, so tests advance a fake clock instead of sleeping.
* **unschedulable** holds pods no node could take. They are *not* polled: a cluster event
  that can help (:meth:`SchedulingQueue.move_all` — a pod deleted, finished or shrunk, a node
  added or grown) moves them to activeQ (or backoffQ if their back-off has not expired).
  A pod that failed while such an event happened during its own cycle goes to backoffQ
  instead of unschedulable (upstream's ``moveRequestCycle``), so the event is never lost.
  As upstream, a pod left unschedulable for 5 minutes is retried anyway (a safety net).

The queue is used from one event loop; every method except :meth:`pop` is synchronous, so
informer handlers can call them directly.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from inplace.api.backoff import Backoff
from inplace.client import Clock, LoopClock
from inplace.client.workqueue import TimerHandle

from .framework import PodInfo

__all__ = ["QueuedPod", "SchedulingQueue"]

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_UNSCHEDULABLE_DURATION = 300.0
FLUSH_PERIOD = 30.0


@dataclass(slots=True)
class QueuedPod:
    info: PodInfo
    timestamp: float
    """When the pod first entered the queue (age order within a priority)."""
    attempts: int = 0
    backoff_until: float = 0.0
    unschedulable_since: float = 0.0
    cycle: int = 0
    """The move-request cycle when it was popped."""
    unschedulable_reason: str = ""
    seq: int = field(default=0)

    @property
    def key(self) -> str:
        return self.info.key


class SchedulingQueue:
    """Pending pods waiting for a scheduling attempt (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        initial_backoff: float = INITIAL_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else LoopClock()
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._on_change = on_change
        self._seq = itertools.count()
        self._active: list[tuple[int, float, int, str]] = []
        self._active_entries: dict[str, QueuedPod] = {}
        self._backoff: list[tuple[float, int, str]] = []
        self._backoff_entries: dict[str, QueuedPod] = {}
        self._unschedulable: dict[str, QueuedPod] = {}
        self._in_flight: dict[str, QueuedPod] = {}
        self._in_flight_updates: dict[str, PodInfo] = {}
        self._move_cycle = 0
        self._scheduling_cycle = 0
        self._nonempty = asyncio.Event()
        self._backoff_timer: TimerHandle | None = None
        self._backoff_timer_at = float("inf")
        self._flush_timer: TimerHandle | None = None
        self._closed = False

    # -- sizes -------------------------------------------------------------------------------

    @property
    def active_count(self) -> int:
        return len(self._active_entries)

    @property
    def backoff_count(self) -> int:
        return len(self._backoff_entries)

    @property
    def unschedulable_count(self) -> int:
        return len(self._unschedulable)

    def __len__(self) -> int:
        return self.active_count + self.backoff_count + self.unschedulable_count

    def __contains__(self, key: str) -> bool:
        return (
            key in self._active_entries
            or key in self._backoff_entries
            or key in self._unschedulable
            or key in self._in_flight
        )

    def where(self, key: str) -> str | None:
        """``active``, ``backoff``, ``unschedulable``, ``in-flight`` or None."""
        if key in self._active_entries:
            return "active"
        if key in self._backoff_entries:
            return "backoff"
        if key in self._unschedulable:
            return "unschedulable"
        if key in self._in_flight:
            return "in-flight"
        return None

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

    # -- internal moves ----------------------------------------------------------------------

    def _push_active(self, qp: QueuedPod) -> None:
        qp.seq = next(self._seq)
        self._active_entries[qp.key] = qp
        heapq.heappush(self._active, (-qp.info.priority, qp.timestamp, qp.seq, qp.key))
        self._nonempty.set()

    def _push_backoff(self, qp: QueuedPod) -> None:
        qp.seq = next(self._seq)
        self._backoff_entries[qp.key] = qp
        heapq.heappush(self._backoff, (qp.backoff_until, qp.seq, qp.key))
        self._arm_backoff_timer(qp.backoff_until)

    def _arm_backoff_timer(self, when: float) -> None:
        if self._closed or when >= self._backoff_timer_at:
            return
        if self._backoff_timer is not None:
            self._backoff_timer.cancel()
        self._backoff_timer_at = when
        self._backoff_timer = self.clock.call_at(when, self._on_backoff_timer)

    def _on_backoff_timer(self) -> None:
        self._backoff_timer = None
        self._backoff_timer_at = float("inf")
        self.flush_backoff()

    def flush_backoff(self) -> None:
        """Move every pod whose back-off has expired to activeQ."""
        now = self.clock.monotonic()
        moved = False
        while self._backoff:
            when, seq, key = self._backoff[0]
            qp = self._backoff_entries.get(key)
            if qp is None or qp.seq != seq:
                heapq.heappop(self._backoff)
                continue
            if when > now:
                self._arm_backoff_timer(when)
                break
            heapq.heappop(self._backoff)
            del self._backoff_entries[key]
            self._push_active(qp)
            moved = True
        if moved:
            self._changed()

    def _remove_queued(self, key: str) -> QueuedPod | None:
        qp = self._active_entries.pop(key, None)
        if qp is None:
            qp = self._backoff_entries.pop(key, None)
        if qp is None:
            qp = self._unschedulable.pop(key, None)
        return qp  # heap entries are dropped lazily (seq mismatch)

    def _backoff_duration(self, attempts: int) -> float:
        return Backoff(self.initial_backoff, self.max_backoff).after(attempts - 1)

    # -- informer-driven ---------------------------------------------------------------------

    def add(self, info: PodInfo) -> None:
        """A new pending pod (or one seen again): to activeQ unless already queued."""
        if info.key in self:
            self.update(info)
            return
        self._push_active(QueuedPod(info, timestamp=self.clock.monotonic()))
        self._changed()

    def update(self, info: PodInfo) -> None:
        """A pending pod changed: keep its place, but an unschedulable one gets another try
        (its change may make it fit; upstream moves it too)."""
        key = info.key
        if key in self._in_flight:
            self._in_flight_updates[key] = info
            return
        qp = self._active_entries.get(key) or self._backoff_entries.get(key)
        if qp is not None:
            qp.info = info
            if key in self._active_entries:
                # priority may have changed: re-push (old heap entry dropped lazily)
                del self._active_entries[key]
                self._push_active(qp)
            return
        qp = self._unschedulable.pop(key, None)
        if qp is None:
            self.add(info)
            return
        qp.info = info
        self._requeue_moved(qp)
        self._changed()

    def delete(self, key: str) -> None:
        """The pod was deleted or bound elsewhere: forget it."""
        removed = self._remove_queued(key)
        self._in_flight.pop(key, None)
        self._in_flight_updates.pop(key, None)
        if removed is not None:
            self._changed()

    # -- scheduler-driven --------------------------------------------------------------------

    async def pop(self) -> QueuedPod:
        """Wait for the next pod to schedule; it is *in flight* until
        :meth:`done`, :meth:`add_unschedulable` or :meth:`add_backoff`."""
        while True:
            qp = self.pop_nowait()
            if qp is not None:
                return qp
            self._nonempty.clear()
            await self._nonempty.wait()

    def pop_nowait(self) -> QueuedPod | None:
        """The next pod if activeQ has one, else None."""
        while self._active:
            _, _, seq, key = heapq.heappop(self._active)
            qp = self._active_entries.get(key)
            if qp is None or qp.seq != seq:
                continue
            del self._active_entries[key]
            qp.attempts += 1
            self._scheduling_cycle += 1
            qp.cycle = self._move_cycle
            self._in_flight[key] = qp
            self._changed()
            return qp
        return None

    def done(self, key: str) -> None:
        """The pod was placed (assumed): it leaves the queue."""
        self._in_flight.pop(key, None)
        self._in_flight_updates.pop(key, None)

    def _take_in_flight(self, qp: QueuedPod) -> QueuedPod | None:
        if self._in_flight.pop(qp.key, None) is None:
            return None  # deleted (or bound) meanwhile
        newer = self._in_flight_updates.pop(qp.key, None)
        if newer is not None:
            qp.info = newer
        return qp

    def add_unschedulable(self, qp: QueuedPod, reason: str = "") -> None:
        """No node fits: park the pod until an event that may help. If such an event came
        during its cycle, it goes to backoffQ instead."""
        taken = self._take_in_flight(qp)
        if taken is None:
            return
        now = self.clock.monotonic()
        qp.backoff_until = now + self._backoff_duration(qp.attempts)
        qp.unschedulable_reason = reason
        if self._move_cycle > qp.cycle:
            self._push_backoff(qp)
        else:
            qp.unschedulable_since = now
            self._unschedulable[qp.key] = qp
            self._arm_flush_timer()
        self._changed()

    def add_backoff(self, qp: QueuedPod) -> None:
        """An error (e.g. binding failed): retry after the pod's back-off."""
        taken = self._take_in_flight(qp)
        if taken is None:
            return
        qp.backoff_until = self.clock.monotonic() + self._backoff_duration(qp.attempts)
        self._push_backoff(qp)
        self._changed()

    def add_backoff_detached(self, qp: QueuedPod) -> None:
        """A pod that already left the queue (assumed) must be retried: its binding failed."""
        if qp.key in self:
            return
        qp.backoff_until = self.clock.monotonic() + self._backoff_duration(qp.attempts)
        self._push_backoff(qp)
        self._changed()

    def _requeue_moved(self, qp: QueuedPod) -> None:
        if qp.backoff_until > self.clock.monotonic():
            self._push_backoff(qp)
        else:
            self._push_active(qp)

    def move_all(
        self, event: str = "", predicate: Callable[[QueuedPod], bool] | None = None
    ) -> int:
        """A cluster event that may help: move unschedulable pods (those ``predicate``
        accepts) to activeQ/backoffQ. Returns how many moved."""
        self._move_cycle += 1
        if not self._unschedulable:
            return 0
        moved = 0
        for key in list(self._unschedulable):
            qp = self._unschedulable[key]
            if predicate is not None and not predicate(qp):
                continue
            del self._unschedulable[key]
            self._requeue_moved(qp)
            moved += 1
        if moved:
            self._changed()
        return moved

    def _arm_flush_timer(self) -> None:
        if self._flush_timer is None and not self._closed:
            when = self.clock.monotonic() + FLUSH_PERIOD
            self._flush_timer = self.clock.call_at(when, self._on_flush_timer)

    def _on_flush_timer(self) -> None:
        self._flush_timer = None
        now = self.clock.monotonic()
        stale = [
            key
            for key, qp in self._unschedulable.items()
            if now - qp.unschedulable_since >= MAX_UNSCHEDULABLE_DURATION
        ]
        for key in stale:
            self._requeue_moved(self._unschedulable.pop(key))
        if stale:
            self._changed()
        if self._unschedulable:
            self._arm_flush_timer()

    def close(self) -> None:
        self._closed = True
        for timer in (self._backoff_timer, self._flush_timer):
            if timer is not None:
                timer.cancel()
        self._backoff_timer = self._flush_timer = None

    def pending(self) -> list[PodInfo]:
        """Every pod waiting (any queue), for preemption and diagnostics."""
        return [
            qp.info
            for entries in (self._active_entries, self._backoff_entries, self._unschedulable)
            for qp in entries.values()
        ]
