"""Watch: catch up from the log, then follow the writer's fan-out, without gaps or duplicates.

Live events never come from polling SQLite. After each committed group the writer thread makes
one `loop.call_soon_threadsafe` call; on the event loop the store updates its in-memory view,
advances `current_revision` and hands the group's changes to the `WatchHub`, all in that one
callback. So for any loop-side observer "the store is at revision R" and "every watcher
registered before now has been given every change up to R" are the same fact.

A `Watch` registers with the hub as soon as it is created and notes the revision R at that
moment: every change after R will reach its buffer. Changes in (from_revision, R] are read from
the SQLite log in pages (they are committed, hence visible to a fresh read transaction), then the
buffer is drained, skipping anything at or below the last revision yielded. The compaction check
runs in the same read transaction as the log read, so a concurrent compaction turns into a
`CompactedError`, never into a silent gap.

Fan-out cost per committed group: for each distinct watched prefix, filter the group's changes
once and decode each matching change once (`Event` objects are shared by all watchers); then one
`deque.extend` and at most one future wake-up per watcher. A watcher's buffer is unbounded: a
slow consumer costs memory, never blocks the writer or other watchers. (kube-apiserver instead
drops a watcher whose buffer overflows; a caller that wants that can check `Watch.backlog`.)
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import orjson

from .errors import CompactedError
from .model import Event, EventType

HISTORY_PAGE = 1000
"""Rows read from the log per catch-up query."""

HistoryReader = Callable[[str, int, int, int], Awaitable[list[Event]]]
"""(prefix, after_revision, up_to_revision, limit) → events in revision order."""


@dataclass(frozen=True, slots=True)
class Change:
    """A committed write as the writer thread reports it: bytes only, decoded on demand."""

    type: EventType
    key: str
    raw: bytes
    revision: int
    create_revision: int
    prev_raw: bytes | None

    def to_event(self) -> Event:
        prev = orjson.loads(self.prev_raw) if self.prev_raw is not None else None
        return Event(self.type, self.key, orjson.loads(self.raw), self.raw, self.revision, prev)


class _Watcher:
    """The hub's side of one watch: a buffer and the consumer's pending wake-up."""

    __slots__ = ("buffer", "closed", "prefix", "waiter")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.buffer: collections.deque[Event] = collections.deque()
        self.waiter: asyncio.Future[None] | None = None
        self.closed = False

    def deliver(self, events: list[Event]) -> None:
        self.buffer.extend(events)
        self.wake()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class WatchHub:
    """Registered watchers, grouped by prefix. Used only on the event loop."""

    def __init__(self) -> None:
        self._by_prefix: dict[str, dict[_Watcher, None]] = {}

    def __len__(self) -> int:
        return sum(len(ws) for ws in self._by_prefix.values())

    def add(self, watcher: _Watcher) -> None:
        self._by_prefix.setdefault(watcher.prefix, {})[watcher] = None

    def remove(self, watcher: _Watcher) -> None:
        watcher.closed = True
        group = self._by_prefix.get(watcher.prefix)
        if group is not None:
            group.pop(watcher, None)
            if not group:
                del self._by_prefix[watcher.prefix]

    def publish(self, changes: list[Change]) -> None:
        """Hand one committed group to every watcher whose prefix matches."""
        if not self._by_prefix:
            return
        decoded: dict[int, Event] = {}
        for prefix, group in list(self._by_prefix.items()):
            matched: list[Event] = []
            for i, change in enumerate(changes):
                if change.key.startswith(prefix):
                    event = decoded.get(i)
                    if event is None:
                        event = decoded[i] = change.to_event()
                    matched.append(event)
            if not matched:
                continue
            for watcher in list(group):
                if watcher.closed:  # dropped without aclose() (see Watch.__del__)
                    group.pop(watcher, None)
                    continue
                watcher.deliver(matched)
            if not group:
                self._by_prefix.pop(prefix, None)

    def close_all(self) -> None:
        """End every watch (the store is closing): consumers drain their buffers, then stop."""
        for group in self._by_prefix.values():
            for watcher in group:
                watcher.closed = True
                watcher.wake()
        self._by_prefix.clear()


class Watch:
    """An async iterator of the events under a prefix after a revision. See the module doc.

    Close it with `aclose()` (or `async with`); dropping it without closing also unregisters
    it, the next time its prefix sees a write.
    """

    def __init__(
        self,
        hub: WatchHub,
        read_history: HistoryReader,
        *,
        prefix: str,
        from_revision: int,
        registered_at: int,
    ) -> None:
        self._hub = hub
        self._read_history = read_history
        self.prefix = prefix
        self.from_revision = from_revision
        self._watcher = _Watcher(prefix)
        hub.add(self._watcher)
        self._history_after = from_revision
        self._history_end = registered_at
        self._last = from_revision
        self._pending: collections.deque[Event] = collections.deque()
        self._done = False

    @property
    def backlog(self) -> int:
        """Events delivered to this watch and not yet consumed."""
        return len(self._pending) + len(self._watcher.buffer)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._pending:
                event = self._pending.popleft()
                self._last = event.revision
                return event
            if self._done:
                raise StopAsyncIteration
            if self._history_after < self._history_end:
                await self._read_page()
                continue
            buffer = self._watcher.buffer
            while buffer:
                event = buffer.popleft()
                if event.revision > self._last:
                    self._last = event.revision
                    return event
            if self._watcher.closed:
                self._done = True
                raise StopAsyncIteration
            waiter = asyncio.get_running_loop().create_future()
            self._watcher.waiter = waiter
            try:
                await waiter
            finally:
                self._watcher.waiter = None

    async def _read_page(self) -> None:
        try:
            events = await self._read_history(
                self.prefix, self._history_after, self._history_end, HISTORY_PAGE
            )
        except CompactedError:
            await self.aclose()
            raise
        self._pending.extend(events)
        if len(events) < HISTORY_PAGE:
            self._history_after = self._history_end
        else:
            self._history_after = events[-1].revision

    async def aclose(self) -> None:
        """Unregister; the iterator then ends."""
        self._done = True
        self._pending.clear()
        self._watcher.buffer.clear()
        self._hub.remove(self._watcher)
        self._watcher.wake()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __del__(self) -> None:
        # May run on any thread or mid-publish: only flag it, the hub prunes it later.
        watcher = getattr(self, "_watcher", None)
        if watcher is not None:
            watcher.closed = True
