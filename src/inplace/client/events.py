"""The one event recorder of every component: client-go's recorder and EventCorrelator.

:class:`EventRecorder` turns ``recorder.event(ref, type, reason, message)`` into a core/v1
Event as upstream's recorder writes it, and posts it in the background (a slow API server
never stalls a caller). Before it does, :class:`EventCorrelator` — a port of client-go's
``tools/record/events_cache.go``, with its defaults — keeps the event stream bounded:

* **deduplication**: an event identical to one already posted (same source, object, type,
  reason and message) is not created again: the existing Event is patched with
  ``count + 1`` and a new ``lastTimestamp``, as ``kubectl describe`` shows ("x5 over 2m");
* **aggregation**: more than 10 events about one object that differ only in their message
  within 10 minutes become one Event whose message is ``(combined from similar events):``
  plus the latest message, counted the same way;
* **spam filter**: each source may post about each object in bursts of 25, refilled at one
  event every 5 minutes (a token bucket per source and object); beyond that, events are
  dropped (counted in :attr:`EventRecorder.filtered`).

Posting is sharded by object, so the events of one object are posted in order (a count
patch never overtakes the Event it patches) while different objects post concurrently. A
full queue drops the event (counted), as upstream's broadcaster does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from inplace.api.backoff import Backoff
from inplace.api.timestamps import rfc3339

from .api import EVENTS, Client
from .errors import APIConnectionError, APIError, APINotFoundError

__all__ = [
    "AGGREGATE_INTERVAL",
    "AGGREGATE_MAX_EVENTS",
    "SPAM_BURST",
    "SPAM_QPS",
    "Correlated",
    "EventCorrelator",
    "EventRecorder",
    "ObjectRef",
]

log = logging.getLogger(__name__)

AGGREGATE_MAX_EVENTS: Final = 10
"""Similar events (differing only in message) about one object before they are combined."""
AGGREGATE_INTERVAL: Final = 600.0
"""Seconds after the last similar event before the count of similar ones starts over."""
SPAM_BURST: Final = 25
"""Events a source may post about one object at once."""
SPAM_QPS: Final = 1.0 / 300.0
"""The refill rate of that allowance: one event every 5 minutes."""
CACHE_SIZE: Final = 4096
"""Entries each LRU cache keeps (client-go's ``maxLruCacheEntries``)."""
COMBINED_PREFIX: Final = "(combined from similar events): "
POST_RETRY: Final = Backoff(0.5, 5.0)
POST_TRIES: Final = 4


@dataclass(frozen=True)
class ObjectRef:
    """The object an event is about (an Event's ``involvedObject``)."""

    namespace: str
    name: str
    uid: str = ""
    kind: str = "Pod"
    api_version: str = "v1"
    field_path: str = ""
    """A part of the object, e.g. ``spec.containers{main}`` for one container, as kubelet's
    container references have."""

    def as_dict(self) -> dict[str, Any]:
        ref: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
        }
        if self.field_path:
            ref["fieldPath"] = self.field_path
        return ref


K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


def _source(event: dict[str, Any]) -> tuple[str, str]:
    source = event.get("source") or {}
    return source.get("component", ""), source.get("host", "")


def _involved(event: dict[str, Any]) -> tuple[str, ...]:
    obj = event.get("involvedObject") or {}
    return (
        obj.get("kind", ""),
        obj.get("namespace", ""),
        obj.get("name", ""),
        obj.get("uid", ""),
        obj.get("apiVersion", ""),
    )


def event_key(event: dict[str, Any]) -> tuple[str, ...]:
    """client-go's ``getEventKey``: everything that makes two events the same event."""
    field_path = (event.get("involvedObject") or {}).get("fieldPath", "")
    return (
        *_source(event),
        *_involved(event),
        field_path,
        event.get("type", ""),
        event.get("reason", ""),
        event.get("message", ""),
    )


def spam_key(event: dict[str, Any]) -> tuple[str, ...]:
    """client-go's ``getSpamKey``: one allowance per source and object."""
    return (*_source(event), *_involved(event))


def aggregate_key(event: dict[str, Any]) -> tuple[str, ...]:
    """client-go's ``EventAggregatorByReasonFunc``: similar events differ only in message."""
    return (
        *_source(event),
        *_involved(event),
        event.get("type", ""),
        event.get("reason", ""),
        event.get("reportingComponent", ""),
        event.get("reportingInstance", ""),
    )


@dataclass
class _Bucket:
    tokens: float
    at: float


@dataclass
class _Aggregate:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass
class _Observed:
    count: int
    first_timestamp: str
    name: str


@dataclass(frozen=True)
class Correlated:
    """What to post: ``event`` created, or the existing one patched with ``patch``."""

    event: dict[str, Any]
    patch: dict[str, Any] | None = None


class EventCorrelator:
    """client-go's ``EventCorrelator`` (module docstring); ``clock`` gives seconds."""

    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        *,
        max_events: int = AGGREGATE_MAX_EVENTS,
        interval: float = AGGREGATE_INTERVAL,
        burst: int = SPAM_BURST,
        qps: float = SPAM_QPS,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self.clock = clock
        self.max_events = max_events
        self.interval = interval
        self.burst = burst
        self.qps = qps
        self._buckets: _LRU[tuple[str, ...], _Bucket] = _LRU(cache_size)
        self._aggregates: _LRU[tuple[str, ...], _Aggregate] = _LRU(cache_size)
        self._observed: _LRU[tuple[str, ...], _Observed] = _LRU(cache_size)

    def correlate(self, event: dict[str, Any]) -> Correlated | None:
        """Aggregate, count and filter ``event``; None when the spam filter drops it."""
        now = self.clock()
        event, key = self._aggregate(event, now)
        observed = self._observe(event, key)
        if not self._allow(observed.event, now):
            return None
        return observed

    def _aggregate(self, event: dict[str, Any], now: float) -> tuple[dict[str, Any], Any]:
        group = aggregate_key(event)
        record = self._aggregates.get(group)
        if record is None or now - record.last > self.interval:
            record = _Aggregate()
        record.messages.add(event.get("message", ""))
        record.last = now
        self._aggregates.put(group, record)
        if len(record.messages) < self.max_events:
            return event, event_key(event)
        record.messages.pop()  # never grow the set past the maximum
        stamp = rfc3339(now)
        combined = {
            **event,
            "metadata": {
                "name": f"{event['involvedObject']['name']}.{time.time_ns():x}",
                "namespace": event["metadata"]["namespace"],
            },
            "message": COMBINED_PREFIX + event.get("message", ""),
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        return combined, ("aggregate", *group)

    def _observe(self, event: dict[str, Any], key: Any) -> Correlated:
        last = self._observed.get(key)
        if last is None or last.count <= 0:
            self._observed.put(
                key, _Observed(1, event["firstTimestamp"], event["metadata"]["name"])
            )
            return Correlated(event)
        count = last.count + 1
        updated = {
            **event,
            "metadata": {**event["metadata"], "name": last.name},
            "firstTimestamp": last.first_timestamp,
            "count": count,
        }
        self._observed.put(key, _Observed(count, last.first_timestamp, last.name))
        patch = {
            "count": count,
            "lastTimestamp": event["lastTimestamp"],
            "message": event.get("message", ""),
        }
        return Correlated(updated, patch)

    def _allow(self, event: dict[str, Any], now: float) -> bool:
        key = spam_key(event)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.qps)
        bucket.at = now
        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        self._buckets.put(key, bucket)
        return allowed

    def update_state(self, event: dict[str, Any], key: Any | None = None) -> None:
        """Remember what the server holds (its name) for the next occurrence. Events are
        correlated when recorded, before earlier ones are posted, so a count already
        ahead of the server's is kept."""
        meta = event.get("metadata") or {}
        key = key if key is not None else event_key(event)
        last = self._observed.get(key)
        count = int(event.get("count") or 1)
        observed = _Observed(
            max(count, last.count if last is not None else 0),
            event.get("firstTimestamp") or (last.first_timestamp if last else ""),
            meta.get("name") or (last.name if last else ""),
        )
        self._observed.put(key, observed)


class EventRecorder:
    """Records events for one component (``source.component``, and ``source.host`` for a
    node's), correlated and posted in the background (module docstring)."""

    def __init__(
        self,
        client: Client,
        *,
        component: str,
        host: str = "",
        instance: str = "",
        correlator: EventCorrelator | None = None,
        limit: int = 1000,
        workers: int = 2,
    ) -> None:
        self.client = client
        self.component = component
        self.host = host
        self.instance = instance or host or component
        self.correlator = correlator if correlator is not None else EventCorrelator()
        self._queues: list[asyncio.Queue[Correlated]] = [
            asyncio.Queue(max(1, limit // workers)) for _ in range(workers)
        ]
        self._tasks: list[asyncio.Task[None]] = []
        self.dropped = 0
        """Events dropped because a queue was full or the server refused them."""
        self.filtered = 0
        """Events the spam filter dropped."""
        self.posted = 0

    def event(self, ref: ObjectRef, type_: str, reason: str, message: str) -> None:
        """Record an event about ``ref`` (never blocks; posted once :meth:`start` ran)."""
        self.record(self.make_event(ref, type_, reason, message))

    def make_event(self, ref: ObjectRef, type_: str, reason: str, message: str) -> dict[str, Any]:
        """A core/v1 Event as upstream's recorder writes it."""
        now = rfc3339(self.correlator.clock())
        source: dict[str, Any] = {"component": self.component}
        if self.host:
            source["host"] = self.host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref.name}.{time.time_ns():x}",
                "namespace": ref.namespace or "default",
            },
            "involvedObject": ref.as_dict(),
            "reason": reason,
            "message": message,
            "type": type_,
            "source": source,
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }

    def record(self, event: dict[str, Any]) -> None:
        correlated = self.correlator.correlate(event)
        if correlated is None:
            self.filtered += 1
            return
        shard = zlib.crc32(repr(spam_key(event)).encode()) % len(self._queues)
        try:
            self._queues[shard].put_nowait(correlated)
        except asyncio.QueueFull:
            self.dropped += 1

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._run(queue), name=f"events-{i}")
                for i, queue in enumerate(self._queues)
            ]

    async def flush(self) -> None:
        """Wait until every recorded event was posted (or given up)."""
        for queue in self._queues:
            await queue.join()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _run(self, queue: asyncio.Queue[Correlated]) -> None:
        while True:
            item = await queue.get()
            try:
                await self._post(item)
            finally:
                queue.task_done()

    async def _post(self, item: Correlated) -> None:
        event = item.event
        namespace = event["metadata"]["namespace"]
        delay: float | None = None
        for _ in range(POST_TRIES):
            try:
                written: dict[str, Any] | None = None
                if item.patch is not None:
                    try:
                        written = await self.client.patch(
                            EVENTS,
                            event["metadata"]["name"],
                            item.patch,
                            namespace=namespace,
                            patch_type="strategic",
                        )
                    except APINotFoundError:
                        written = None  # removed meanwhile: create it again, as upstream
                if written is None:
                    written = await self.client.create(EVENTS, event, namespace=namespace)
            except (APIConnectionError, ConnectionError) as exc:
                delay = POST_RETRY.next(delay)
                log.debug("event %s not posted yet: %s", event.get("reason"), exc)
                await asyncio.sleep(delay)
                continue
            except APIError as exc:
                self.dropped += 1
                log.debug("event %s refused: %s", event.get("reason"), exc)
                return
            self.posted += 1
            key = event_key(event)
            if event.get("message", "").startswith(COMBINED_PREFIX):
                key = ("aggregate", *aggregate_key(event))
            self.correlator.update_state(written, key)
            return
        self.dropped += 1
