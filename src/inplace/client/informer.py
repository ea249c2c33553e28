"""Informer: a local, always-converging cache of one resource type, fed by list-then-watch.

How it works (client-go's reflector + indexer + shared informer, in one asyncio task):

1. **List** every object (paged, one consistent snapshot) and diff it against the cache:
   new keys emit ``on_add``, keys whose ``resourceVersion`` changed emit ``on_update``, keys
   gone emit ``on_delete`` with the last known object. The first list marks the informer synced.
2. **Watch** from the list's resourceVersion and apply each event to the cache, then to the
   handlers, in order. Bookmarks only advance the resourceVersion.
3. **Recover**: a watch that ends normally is resumed from the last resourceVersion seen. A
   410 Gone (the resourceVersion was compacted) triggers a relist — step 1 — whose diff keeps
   handlers consistent with the cache. Connection errors and server errors are retried with
   exponential backoff (0.1 s doubling to 30 s, with jitter), resuming where the watch was.

Objects are keyed ``namespace/name`` (``name`` for cluster-scoped ones, see :func:`key_of`).
Handlers are synchronous and must only enqueue (see :class:`~inplace.client.workqueue.WorkQueue`);
a handler that raises is logged, never allowed to stop the informer.

**Never mutate an object you get from the informer** (from ``get``, ``list``, ``by_index`` or a
handler): it is the cache's own copy, shared with every other reader. Copy it first.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from inplace.api.backoff import Backoff

from .api import Client, Resource, WatchEvent
from .errors import APIConnectionError, APIError, APIGoneError, APINotFoundError

__all__ = ["Informer", "key_of", "split_key"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
AddHandler = Callable[[Obj], None]
UpdateHandler = Callable[[Obj, Obj], None]
DeleteHandler = Callable[[Obj], None]
IndexFunc = Callable[[Obj], list[str]]


def key_of(obj: Obj) -> str:
    """The cache key of an object: ``namespace/name``, or ``name`` when it has no namespace."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str | None, str]:
    """Inverse of :func:`key_of`: ``(namespace or None, name)``."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else (None, key)


def _rv(obj: Obj) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return rv if isinstance(rv, str) else None


class _Backoff:
    """The project's back-off (``api/backoff.py``) with jitter on the upper half: ``[d/2, d]``,
    so informers that lost the same server do not come back in step."""

    def __init__(self, initial: float, maximum: float) -> None:
        self._rule = Backoff(initial, maximum)
        self._previous: float | None = None

    def reset(self) -> None:
        self._previous = None

    def next_delay(self) -> float:
        delay = self._previous = self._rule.next(self._previous)
        return random.uniform(delay / 2, delay)


class Informer:
    """List-then-watch cache of one resource type with event handlers and indexes.

    Run it with ``task = asyncio.create_task(informer.run())``, ``await informer.wait_synced()``,
    and ``informer.stop()`` (then ``await task``) to end it.
    """

    def __init__(
        self,
        client: Client,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync: float | None = None,
        page_size: int | None = 500,
        watch_timeout: float = 300.0,
        backoff_initial: float = 0.1,
        backoff_max: float = 30.0,
        optional: bool = False,
    ) -> None:
        """``resync`` (seconds) periodically re-delivers every cached object to ``on_update``
        (old is new); ``watch_timeout`` is the server-side watch duration, randomized up to
        twice it so many informers don't reconnect in lockstep. ``optional``: a kind the
        cluster may not serve (a CRD not installed): a 404 on list counts as an empty, synced
        cache, and the list is tried again every ``backoff_max`` seconds until it is served."""
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync = resync
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self._backoff = _Backoff(backoff_initial, backoff_max)
        self.optional = optional
        self._absent_retry = backoff_max

        self._cache: dict[str, Obj] = {}
        self._handlers: list[tuple[AddHandler | None, UpdateHandler | None, DeleteHandler | None]]
        self._handlers = []
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self._index_values: dict[str, dict[str, list[str]]] = {}

        self._synced = asyncio.Event()
        self._failure: BaseException | None = None
        self._stop = asyncio.Event()
        self._running = False

        self.resource_version: str | None = None
        """The last resourceVersion seen (list, event or bookmark); watches resume from it."""
        self.last_sync_resource_version: str | None = None
        """The resourceVersion of the last completed list."""
        self.relists = 0
        """How many times the informer has listed (1 after the first sync)."""

    # -- handlers and indexes ---------------------------------------------------------------

    def add_handler(
        self,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
    ) -> None:
        """Register handlers, called in event order after the cache is updated.

        ``on_update(old, new)``; ``on_delete(obj)`` gets the last known state. A handler added
        after objects are cached gets ``on_add`` for each of them at once, so it never misses
        one. Handlers must be quick and only enqueue work.
        """
        self._handlers.append((on_add, on_update, on_delete))
        if on_add is not None:
            for obj in list(self._cache.values()):
                self._call(on_add, obj)

    def add_index(self, name: str, fn: IndexFunc) -> None:
        """Maintain an index: ``fn(obj)`` returns the values ``obj`` is found under (e.g. its
        node name), and :meth:`by_index` looks them up."""
        if name in self._index_funcs:
            raise ValueError(f"index {name!r} already exists")
        self._index_funcs[name] = fn
        self._indices[name] = {}
        self._index_values[name] = {}
        for key, obj in self._cache.items():
            self._index_add(name, key, obj)

    def by_index(self, name: str, value: str) -> builtins.list[Obj]:
        """Objects whose index ``name`` contains ``value`` (shared: never mutate)."""
        keys = self.index_keys(name, value)
        return [self._cache[k] for k in keys if k in self._cache]

    def index_keys(self, name: str, value: str) -> builtins.list[str]:
        """Keys of the objects whose index ``name`` contains ``value``, sorted."""
        try:
            index = self._indices[name]
        except KeyError:
            raise KeyError(f"no index named {name!r}") from None
        return sorted(index.get(value, ()))

    # -- reading the cache ------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        """The cached object for ``key`` (``namespace/name`` or ``name``), or None.

        Shared with every other reader: never mutate it; copy it first."""
        return self._cache.get(key)

    def list(self) -> list[Obj]:
        """Every cached object (a new list of shared objects: never mutate them)."""
        return list(self._cache.values())

    def keys(self) -> builtins.list[str]:
        return list(self._cache)

    def __len__(self) -> int:
        return len(self._cache)

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set() and self._failure is None

    async def wait_synced(self) -> None:
        """Wait until the first list has been applied. Raises if :meth:`run` failed first."""
        await self._synced.wait()
        if self._failure is not None:
            raise RuntimeError("informer stopped before it synced") from self._failure

    # -- running ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask :meth:`run` to return (it closes its watch and exits promptly)."""
        self._stop.set()

    async def run(self) -> None:
        """List, then watch, forever (until :meth:`stop` or cancellation)."""
        if self._running:
            raise RuntimeError("informer is already running")
        self._running = True
        self._stop.clear()
        if self._failure is not None:  # a previous run stopped before syncing
            self._failure = None
            self._synced.clear()
        main = asyncio.create_task(self._run_loop(), name=f"informer-{self.resource.plural}")
        stopper = asyncio.create_task(self._stop.wait())
        tasks: set[asyncio.Task[None]] = {main}
        resync_task: asyncio.Task[None] | None = None
        if self.resync:
            resync_task = asyncio.create_task(self._resync_loop(self.resync))
            tasks.add(resync_task)
        try:
            await asyncio.wait({main, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if main.done():
                main.result()  # propagate an unexpected failure
        except BaseException as exc:
            if not self._synced.is_set():
                self._failure = exc
                self._synced.set()
            raise
        finally:
            self._running = False
            for task in (*tasks, stopper):
                task.cancel()
            for task in (*tasks, stopper):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if not self._synced.is_set():
                self._failure = RuntimeError("informer stopped")
                self._synced.set()

    async def _run_loop(self) -> None:
        need_list = True
        while True:
            try:
                if need_list:
                    await self._relist()
                    need_list = False
                    self._backoff.reset()
                if await self._watch_once():
                    self._backoff.reset()
                    continue  # the watch ended normally and was useful: resume at once
                delay = self._backoff.next_delay()
            except APIGoneError as exc:
                log.info(
                    "%s: resourceVersion %s gone (%s); relisting",
                    self._what,
                    self.resource_version,
                    exc,
                )
                need_list = True
                continue
            except (APIConnectionError, APIError) as exc:
                if self.optional and need_list and isinstance(exc, APINotFoundError):
                    self._absent()
                    await asyncio.sleep(self._absent_retry)
                    continue
                delay = self._backoff.next_delay()
                log.warning(
                    "%s: %s failed: %s; retrying in %.2fs",
                    self._what,
                    "list" if need_list else "watch",
                    exc,
                    delay,
                )
            await asyncio.sleep(delay)

    def _absent(self) -> None:
        """An optional kind the cluster does not serve: an empty cache, synced."""
        if not self._synced.is_set():
            log.info("%s: not served by this cluster; empty until it is", self._what)
            self._replace([])
            self._synced.set()

    @property
    def _what(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"informer {self.resource.plural}{where}"

    async def _relist(self) -> None:
        result = await self.client.list_all(
            self.resource,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
        )
        rv = (result.get("metadata") or {}).get("resourceVersion") or None
        self._replace(result.get("items") or [])
        self.resource_version = rv
        self.last_sync_resource_version = rv
        self.relists += 1
        self._synced.set()

    async def _watch_once(self) -> bool:
        """Watch until the stream ends. True if it was healthy (events arrived or it lasted),
        False if it ended at once without anything (then back off before retrying)."""
        started = time.monotonic()
        timeout = int(self.watch_timeout * (1.0 + random.random()))
        got_event = False
        stream = self.client.watch(
            self.resource,
            namespace=self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            allow_bookmarks=True,
            timeout_seconds=max(timeout, 1),
        )
        async with contextlib.aclosing(stream):
            async for event in stream:
                if not got_event:
                    got_event = True
                    self._backoff.reset()
                self._apply(event)
        return got_event or time.monotonic() - started >= 1.0

    async def _resync_loop(self, period: float) -> None:
        await self._synced.wait()
        while True:
            await asyncio.sleep(period)
            for obj in list(self._cache.values()):
                for _, on_update, _ in self._handlers:
                    if on_update is not None:
                        self._call(on_update, obj, obj)

    # -- cache updates ----------------------------------------------------------------------

    def _apply(self, event: WatchEvent) -> None:
        obj = event.object
        rv = event.resource_version
        if event.type == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        key = key_of(obj)
        if event.type == "DELETED":
            old = self._cache.pop(key, None)
            if old is not None:
                self._index_remove(key, old)
            self._emit_delete(obj)
        else:  # ADDED / MODIFIED: whichever the cache needs
            old = self._cache.get(key)
            self._store(key, obj, old)
            if old is None:
                self._emit_add(obj)
            else:
                self._emit_update(old, obj)
        if rv:
            self.resource_version = rv

    def _replace(self, items: builtins.list[Obj]) -> None:
        """Make the cache equal to ``items``, emitting the difference."""
        fresh = {key_of(obj): obj for obj in items}
        for key in [k for k in self._cache if k not in fresh]:
            gone = self._cache.pop(key)
            self._index_remove(key, gone)
            self._emit_delete(gone)
        for key, obj in fresh.items():
            old = self._cache.get(key)
            if old is None:
                self._store(key, obj, None)
                self._emit_add(obj)
            elif _rv(old) != _rv(obj) or _rv(obj) is None:
                self._store(key, obj, old)
                self._emit_update(old, obj)

    def _store(self, key: str, obj: Obj, old: Obj | None) -> None:
        if old is not None:
            self._index_remove(key, old)
        self._cache[key] = obj
        for name in self._index_funcs:
            self._index_add(name, key, obj)

    def _index_add(self, name: str, key: str, obj: Obj) -> None:
        try:
            values = list(self._index_funcs[name](obj))
        except Exception:
            log.exception("%s: index %r failed on %s", self._what, name, key)
            values = []
        self._index_values[name][key] = values
        index = self._indices[name]
        for value in values:
            index.setdefault(value, set()).add(key)

    def _index_remove(self, key: str, obj: Obj) -> None:
        for name in self._index_funcs:
            values = self._index_values[name].pop(key, [])
            index = self._indices[name]
            for value in values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    # -- handler dispatch -------------------------------------------------------------------

    def _emit_add(self, obj: Obj) -> None:
        for on_add, _, _ in self._handlers:
            if on_add is not None:
                self._call(on_add, obj)

    def _emit_update(self, old: Obj, new: Obj) -> None:
        for _, on_update, _ in self._handlers:
            if on_update is not None:
                self._call(on_update, old, new)

    def _emit_delete(self, obj: Obj) -> None:
        for _, _, on_delete in self._handlers:
            if on_delete is not None:
                self._call(on_delete, obj)

    def _call(self, fn: Callable[..., None], *args: Obj) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("%s: event handler %r raised", self._what, fn)
