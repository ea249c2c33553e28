"""The watch cache: every stored object in memory, fed by the store's revision log.

As kube-apiserver does, GET, LIST and WATCH are served from memory at a known revision and only
writes touch the database. One task follows `store.watch("/")` and applies each event in
revision order; every object is kept with the exact bytes the store serialized, so a LIST is a
join of byte strings and a watch event is serialized once for all watchers.

Reads that ask for the latest state first wait until the cache has caught up with the store's
current revision, so a client always reads its own writes.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inplace.registry.kinds import Kind
from inplace.registry.served import Registry
from inplace.store import Entry, Event, Store

log = logging.getLogger(__name__)

#: How many past events are kept for watches that resume from a revision.
HISTORY = 50_000

#: About how many bytes each piece of a list's joined items holds (`join_items`).
PIECE = 256 * 1024


@dataclass(frozen=True)
class CachedEvent:
    """One change of one object, as watchers receive it."""

    type: str
    kind: Kind
    key: str
    namespace: str
    value: dict[str, Any]
    raw: bytes
    revision: int
    prev: dict[str, Any] | None


Filter = Callable[[dict[str, Any]], bool]


@dataclass(eq=False)
class Watcher:
    """A registered watch: events for one kind (and namespace) that pass its filter."""

    kind: Kind
    namespace: str | None
    matches: Filter | None
    queue: asyncio.Queue[CachedEvent | None] = field(default_factory=asyncio.Queue)
    closed: bool = False

    def offer(self, event: CachedEvent) -> None:
        """Queue `event` as this watcher should see it (a filtered watch sees moves in and out)."""
        if self.namespace is not None and event.namespace != self.namespace:
            return
        if self.matches is None:
            self.queue.put_nowait(event)
            return
        now = event.type != "DELETED" and self.matches(event.value)
        before = event.prev is not None and self.matches(event.prev)
        if event.type == "DELETED":
            if before or self.matches(event.value):
                self.queue.put_nowait(event)
        elif now and (before or event.type == "ADDED"):
            self.queue.put_nowait(event)
        elif now:
            self.queue.put_nowait(_retype(event, "ADDED"))
        elif before:
            self.queue.put_nowait(_retype(event, "DELETED"))


def _retype(event: CachedEvent, type_: str) -> CachedEvent:
    return CachedEvent(
        type_,
        event.kind,
        event.key,
        event.namespace,
        event.value,
        event.raw,
        event.revision,
        event.prev,
    )


class TooOldError(Exception):
    """The requested revision is older than what the cache still holds."""


class WatchCache:
    """All stored objects by kind and namespace, plus a window of recent events."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry
        # storage prefix (group or "core", plural) -> namespace ("" for cluster-scoped) ->
        # key -> entry. Keyed by where objects are stored rather than by kind: the kinds a
        # CustomResourceDefinition serves come and go, and its versions share one prefix.
        self._objects: collections.defaultdict[tuple[str, str], dict[str, dict[str, Entry]]] = (
            collections.defaultdict(dict)
        )
        self._history: collections.deque[CachedEvent] = collections.deque(maxlen=HISTORY)
        self._watchers: collections.defaultdict[tuple[str, str], set[Watcher]] = (
            collections.defaultdict(set)
        )
        self._listeners: list[Callable[[CachedEvent], None]] = []
        # Kept between writes, per (storage prefix, namespace or None for all of them): the
        # keys in list order (dropped when an object comes or goes) and the joined items
        # (dropped by any change), so that a list without selector repeats no per-object work.
        self._sorted: dict[tuple[tuple[str, str], str | None], list[str]] = {}
        self._joined: dict[tuple[tuple[str, str], str | None], list[bytes]] = {}
        self.revision = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()
        #: Set when the cache stopped following the store; the server is then unhealthy.
        self.failed = asyncio.Event()

    # -- feeding ------------------------------------------------------------------------------

    async def start(self) -> None:
        revision, entries = await self._store.snapshot()
        for entry in entries:
            located = _locate(entry.key)
            if located is not None:
                prefix, namespace = located
                self._objects[prefix].setdefault(namespace, {})[entry.key] = entry
        self.revision = revision
        self._task = asyncio.create_task(self._follow(revision), name="watch-cache")
        self.ready.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for watchers in self._watchers.values():
            for watcher in list(watchers):
                watcher.queue.put_nowait(None)

    async def _follow(self, revision: int) -> None:
        try:
            async for event in self._store.watch("/", from_revision=revision):
                self._apply(event)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Serving stale reads would be worse than not serving: say so and let the
            # process owner restart the server (the supervisor does).
            log.exception("the watch cache lost the store's log")
        self.failed.set()

    def _apply(self, event: Event) -> None:
        located = _locate(event.key)
        if located is None:
            self._advance(event.revision)
            return
        prefix, namespace = located
        bucket = self._objects[prefix].setdefault(namespace, {})
        self._joined.pop((prefix, namespace), None)
        self._joined.pop((prefix, None), None)
        if event.type == "DELETED":
            if bucket.pop(event.key, None) is not None:
                self._forget_order(prefix, namespace)
        else:
            existing = bucket.get(event.key)
            if existing is None:
                self._forget_order(prefix, namespace)
            bucket[event.key] = Entry(
                key=event.key,
                value=event.value,
                raw=event.raw,
                revision=event.revision,
                create_revision=existing.create_revision if existing else event.revision,
            )
        kind = self._registry.by_storage_prefix(*prefix)
        if kind is None:  # kept (a CRD may serve it later), but nobody watches it
            self._advance(event.revision)
            return
        cached = CachedEvent(
            event.type,
            kind,
            event.key,
            namespace,
            event.value,
            event.raw,
            event.revision,
            event.prev,
        )
        self._history.append(cached)
        for watcher in self._watchers.get(prefix, ()):
            watcher.offer(cached)
        for listener in self._listeners:
            listener(cached)
        self._advance(event.revision)

    def _forget_order(self, prefix: tuple[str, str], namespace: str) -> None:
        self._sorted.pop((prefix, namespace), None)
        self._sorted.pop((prefix, None), None)

    def _advance(self, revision: int) -> None:
        self.revision = revision
        while self._waiters and self._waiters[0][0] <= revision:
            _, future = self._waiters.pop(0)
            if not future.done():
                future.set_result(None)

    def add_listener(self, listener: Callable[[CachedEvent], None]) -> None:
        """Call `listener` synchronously for every change (for in-server indexes and checks)."""
        self._listeners.append(listener)

    async def wait_for(self, revision: int, *, timeout: float = 10.0) -> None:
        """Return once the cache holds every write up to `revision`."""
        if self.revision >= revision:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        bisect.insort(self._waiters, (revision, future), key=lambda item: item[0])
        await asyncio.wait_for(future, timeout)

    async def sync(self) -> None:
        """Catch up with the store's latest revision (read-your-writes)."""
        await self.wait_for(self._store.current_revision)

    # -- reading ------------------------------------------------------------------------------

    def get(self, kind: Kind, key: str, namespace: str | None) -> Entry | None:
        return self._buckets(kind).get(namespace or "", {}).get(key)

    def _buckets(self, kind: Kind) -> dict[str, dict[str, Entry]]:
        return self._objects.get(_prefix(kind), {})

    def entries(self, kind: Kind, namespace: str | None) -> list[Entry]:
        """Every object of `kind` (in `namespace` if given), sorted by key as upstream lists."""
        prefix = _prefix(kind)
        buckets = self._objects.get(prefix, {})
        if namespace is not None:
            namespace = namespace if kind.namespaced else ""
            bucket = buckets.get(namespace, {})
            return [bucket[k] for k in self._order(prefix, namespace, bucket)]
        out: list[Entry] = []
        for ns in sorted(buckets):
            bucket = buckets[ns]
            out.extend(bucket[k] for k in self._order(prefix, ns, bucket))
        return out

    def named(self, kind: Kind, namespace: str | None, name: str) -> list[Entry]:
        """`entries(kind, namespace)` of the objects called `name` (a `metadata.name=`
        field selector): looked up, not searched for."""
        buckets = self._buckets(kind)
        if not kind.namespaced:
            namespaces = [""]
        elif namespace is not None:
            namespaces = [namespace]
        else:
            namespaces = sorted(buckets)
        found = (buckets.get(ns, {}).get(kind.storage_key(name, ns)) for ns in namespaces)
        return [entry for entry in found if entry is not None]

    def _order(
        self, prefix: tuple[str, str], namespace: str, bucket: dict[str, Entry]
    ) -> list[str]:
        """The keys of one namespace's bucket, sorted (kept until an object comes or goes)."""
        keys = self._sorted.get((prefix, namespace))
        if keys is None:
            keys = sorted(bucket)
            if keys:  # nothing kept for a namespace without objects
                self._sorted[(prefix, namespace)] = keys
        return keys

    def joined(self, kind: Kind, namespace: str | None) -> list[bytes]:
        """The stored bytes of `entries(kind, namespace)`, comma-separated, in pieces
        (`join_items`): a list's items without selector. Kept until one of them changes."""
        namespace = namespace if namespace is None or kind.namespaced else ""
        prefix = _prefix(kind)
        pieces = self._joined.get((prefix, namespace))
        if pieces is None:
            pieces = join_items([entry.raw for entry in self.entries(kind, namespace)])
            if pieces:
                self._joined[(prefix, namespace)] = pieces
        return pieces

    def iter_values(self, kind: Kind, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        buckets = self._buckets(kind)
        if namespace is not None:
            yield from (e.value for e in buckets.get(namespace, {}).values())
            return
        for bucket in buckets.values():
            yield from (e.value for e in bucket.values())

    def count(self, kind: Kind, namespace: str | None = None) -> int:
        buckets = self._buckets(kind)
        if namespace is not None:
            return len(buckets.get(namespace, {}))
        return sum(len(b) for b in buckets.values())

    # -- watching -----------------------------------------------------------------------------

    def watch(
        self,
        kind: Kind,
        namespace: str | None,
        matches: Filter | None,
        *,
        from_revision: int | None,
    ) -> tuple[Watcher, list[CachedEvent]]:
        """Register a watcher; return it with the events it must see first.

        `from_revision` None means "current state, then changes": the backlog is a synthetic
        ADDED per existing object. A revision means "every change after it", from history;
        TooOldError if the history no longer reaches back that far.
        """
        watcher = Watcher(kind, namespace if kind.namespaced else None, matches)
        backlog: list[CachedEvent] = []
        if from_revision is None:
            for entry in self.entries(kind, watcher.namespace):
                if matches is None or matches(entry.value):
                    backlog.append(
                        CachedEvent(
                            "ADDED",
                            kind,
                            entry.key,
                            watcher.namespace or "",
                            entry.value,
                            entry.raw,
                            entry.revision,
                            None,
                        )
                    )
        elif from_revision < self.revision:
            oldest = self._history[0].revision if self._history else self.revision + 1
            if from_revision < oldest - 1:
                raise TooOldError(from_revision)
            collector = Watcher(kind, watcher.namespace, matches, queue=asyncio.Queue())
            for event in self._history:
                if event.revision > from_revision and _prefix(event.kind) == _prefix(kind):
                    collector.offer(event)
            while not collector.queue.empty():
                item = collector.queue.get_nowait()
                if item is not None:
                    backlog.append(item)
        self._watchers[_prefix(kind)].add(watcher)
        return watcher, backlog

    def unwatch(self, watcher: Watcher) -> None:
        watcher.closed = True
        self._watchers[_prefix(watcher.kind)].discard(watcher)

    def watcher_count(self) -> int:
        return sum(len(w) for w in self._watchers.values())


def join_items(raws: Sequence[bytes], size: int | None = None) -> list[bytes]:
    """`raws` comma-separated, in pieces of about `size` bytes (`PIECE` if None; each piece
    but the first starts with its comma): concatenated, the pieces are `b",".join(raws)`;
    none for no raws."""
    size = size or PIECE
    pieces: list[bytes] = []
    start = filled = 0
    for i, raw in enumerate(raws):
        filled += len(raw)
        if filled >= size:
            pieces.append(_join_from(raws, start, i + 1))
            start, filled = i + 1, 0
    if start < len(raws):
        pieces.append(_join_from(raws, start, len(raws)))
    return pieces


def _join_from(raws: Sequence[bytes], start: int, end: int) -> bytes:
    group = list(raws[start:end])
    if start:
        group.insert(0, b"")
    return b",".join(group)


def _prefix(kind: Kind) -> tuple[str, str]:
    """Where `kind`'s objects are stored: `/<group or core>/<plural>/`."""
    return (kind.group or "core", kind.plural)


def _locate(key: str) -> tuple[tuple[str, str], str] | None:
    """The storage prefix and namespace ("" for cluster-scoped) of a store key: namespaced
    keys have one segment more (`/<group>/<plural>/<namespace>/<name>`)."""
    parts = key.split("/")
    if len(parts) < 4:
        return None
    return (parts[1], parts[2]), (parts[3] if len(parts) > 4 else "")


class CachedObjects:
    """The stored objects, read from the watch cache, for strategies' admission steps and the
    webhook client's service resolver; a kind the registry does not serve has no objects."""

    def __init__(self, cache: WatchCache, registry: Registry) -> None:
        self._cache = cache
        self._registry = registry

    def get(
        self, group: str, kind: str, name: str, namespace: str | None = None
    ) -> Mapping[str, Any] | None:
        served = self._registry.by_kind(group, kind)
        if served is None:
            return None
        entry = self._cache.get(served, served.storage_key(name, namespace), namespace)
        return entry.value if entry is not None else None

    def list(self, group: str, kind: str) -> Iterable[Mapping[str, Any]]:
        served = self._registry.by_kind(group, kind)
        return self._cache.iter_values(served) if served is not None else ()

    def list_in(self, group: str, kind: str, namespace: str) -> Iterable[Mapping[str, Any]]:
        """The objects of one namespace (the webhook client's service resolver)."""
        served = self._registry.by_kind(group, kind)
        return self._cache.iter_values(served, namespace) if served is not None else ()
