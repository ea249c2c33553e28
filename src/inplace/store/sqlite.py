"""The store: one append-only SQLite table whose row id is the global revision (kine's model).

Layout. Every write appends a row `(id = revision, name = key, created, deleted,
create_revision, prev_revision, value)`; `value` is the object's JSON with
`metadata.resourceVersion` already stamped to `id`, so the bytes stored are the bytes every
reader and watcher receives. A delete appends a marker row (`deleted = 1`) whose value is the
last state stamped with the delete's revision, as a kube DELETED watch event carries it. The
state at revision R is, per key, the row with `MAX(id) <= R` unless that row is a delete marker.
Compaction to R drops every row at or below R that is superseded by a later row at or below R,
and every delete marker at or below R; `meta.compact_rev` records R in the same transaction.

Writes. One writer thread owns the only writing connection and an index `key → (mod revision,
create revision, bytes)` loaded at open. Callers enqueue an operation with an asyncio future and
wait. The writer takes everything queued (group commit: writes that arrive while it is busy
with an fsync commit together), checks each operation against the index (exists / not found /
expected revision: a compare-and-swap costs a dict lookup, no SELECT), assigns consecutive
revisions to the ones that pass, inserts all their rows with ONE multi-row INSERT, and commits.
A failed check fails only that operation. Then it makes a single `call_soon_threadsafe` into
the loop, which updates the loop-side view, fans the changes out to watchers (see
`inplace.store.watch`) and resolves the futures, in that order, so a caller whose write returned
sees it in `get`, `list`, `current_revision` and every watch. A failed commit rolls the index
back and fails the whole group with `StoreError`.

Why so few statements per group: `sqlite3` releases the GIL around every statement, and a thread
that has to win the GIL back from a busy event loop may wait a whole switch interval (5 ms).
BEGIN + one INSERT + COMMIT keeps the writer's hand-offs per group constant.

Durability. WAL with `synchronous=FULL` (the default, `durability="full"`): the WAL is fsynced
on every commit, so a write whose call returned survives SIGKILL of the process and power loss.
Group commit pays one fsync per group, not per write. `durability="normal"` skips that fsync;
a commit then survives a process kill (it is in the OS page cache) but not a power cut or
kernel crash. An advisory lock on `<path>.lock` keeps a second process from opening the same
store (the in-memory index assumes a single writer).

Reads. `get`, `list` at the current revision and `snapshot` are served from the loop-side view
(a dict of key → bytes plus a sorted key list) with no I/O; the bytes are decoded with orjson
into fresh dicts per call. `list` at a past revision and watch catch-up run SQL on a small pool
of read connections (WAL lets them read a consistent snapshot while the writer commits).

Threading. The writer thread touches only the write connection, the writer index and the
operation queue; the loop touches the view, the hub and futures; they meet only through the
queue (loop → writer) and `call_soon_threadsafe` (writer → loop). A store belongs to the event
loop that opened it.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import concurrent.futures
import contextlib
import fcntl
import logging
import os
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, Literal, TypeVar

import orjson

from .errors import (
    CompactedError,
    ConflictError,
    FutureRevisionError,
    InvalidObjectError,
    KeyExistsError,
    NotFoundError,
    StoreClosedError,
    StoreError,
)
from .model import Entry, Event, ListResult, Object, gc_paused, prefix_end
from .watch import Change, Watch, WatchHub

__all__ = ["Durability", "Store"]

log = logging.getLogger(__name__)

Durability = Literal["full", "normal"]

_T = TypeVar("_T")

MAX_GROUP = 1000
"""Most operations committed in one transaction (bounds a group's latency)."""

_ROW_PARAMS = 7
_INSERT_PREFIX = (
    "INSERT INTO kine (id, name, created, deleted, create_revision, prev_revision, value) VALUES "
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kine (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    created INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS kine_name_id ON kine (name, id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

_SET_COMPACT_SQL = "INSERT OR REPLACE INTO meta (key, value) VALUES ('compact_rev', ?)"

_COMPACT_SQL = """
DELETE FROM kine WHERE id IN (
    SELECT prev_revision FROM kine WHERE id > :old AND id <= :new AND prev_revision > 0
) OR (id > :old AND id <= :new AND deleted = 1)
"""
"""Compaction from `old` to `new` touches only the rows written in (old, new]: every row
superseded at or below `new` is the `prev_revision` of a row in that window (rows superseded
at or below `old` are already gone), and the delete markers to drop are in the window too."""


def _stamp(value: Object, revision: int) -> bytes:
    """Serialize a copy of `value` with `metadata.resourceVersion` = `revision`."""
    metadata = value.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        raise InvalidObjectError("metadata must be a JSON object")
    stamped = dict(value)
    metadata = dict(metadata)
    metadata["resourceVersion"] = str(revision)
    stamped["metadata"] = metadata
    try:
        return orjson.dumps(stamped)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise InvalidObjectError(f"value is not JSON-serializable: {exc}") from exc


def _key_range(prefix: str, start_after: str | None) -> tuple[str, bool, str | None]:
    """(low bound, low is exclusive, exclusive high bound) of the keys a list covers."""
    if start_after is not None and start_after >= prefix:
        return start_after, True, prefix_end(prefix)
    return prefix, False, prefix_end(prefix)


@dataclass(slots=True)
class _Op:
    kind: Literal["create", "update", "delete", "compact"]
    key: str
    value: Object | None
    expected: int | None
    future: asyncio.Future[Any]


@dataclass(frozen=True, slots=True)
class _Compacted:
    revision: int


_Outcome = Change | _Compacted | BaseException


@dataclass(slots=True)
class _Group:
    """What one transaction did, handed from the writer thread to the loop."""

    results: list[tuple[_Op, _Outcome]] = field(default_factory=list)


_STOP = object()


class _Writer:
    """The writer thread's state. Only the writer thread touches it after `start()`."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        index: dict[str, tuple[int, int, bytes]],
        revision: int,
        compacted: int,
        publish: Callable[[_Group], None],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.conn = conn
        self.index = index
        self.revision = revision
        self.compacted = compacted
        self.queue: queue.SimpleQueue[_Op | object] = queue.SimpleQueue()
        # 32766 since SQLite 3.32, 999 before: the multi-row INSERT is sized to fit.
        self.max_variables = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        self._publish = publish
        self._loop = loop
        self.thread = threading.Thread(target=self._run, name="inplace-store-writer", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        stopping = False
        while not stopping:
            ops: list[_Op] = []
            item = self.queue.get()
            while True:
                if item is _STOP:
                    stopping = True
                elif isinstance(item, _Op):
                    ops.append(item)
                if len(ops) >= MAX_GROUP:
                    break
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
            if ops:
                group = self._commit(ops)
                try:
                    self._loop.call_soon_threadsafe(self._publish, group)
                except RuntimeError:  # the loop is closed; nobody is waiting any more
                    log.warning("store: event loop closed before a commit could be published")
        self.conn.close()

    def _commit(self, ops: list[_Op]) -> _Group:
        group = _Group()
        undo: list[tuple[str, tuple[int, int, bytes] | None]] = []
        params: list[Any] = []
        revision = self.revision
        compacted = self.compacted
        conn = self.conn
        try:
            if conn.in_transaction:  # a failed ROLLBACK left one open; start clean
                conn.execute("ROLLBACK")
            conn.execute("BEGIN IMMEDIATE")
            for op in ops:
                try:
                    if op.kind == "compact":
                        target = op.expected or 0
                        if target > revision:
                            raise FutureRevisionError(target, revision)
                        if target > compacted:
                            self._flush(params)
                            conn.execute(_COMPACT_SQL, {"old": compacted, "new": target})
                            conn.execute(_SET_COMPACT_SQL, (target,))
                            compacted = target
                        group.results.append((op, _Compacted(compacted)))
                        continue
                    change, row = self._apply(op, revision + 1)
                except StoreError as exc:
                    group.results.append((op, exc))
                    continue
                revision += 1
                undo.append((op.key, self.index.get(op.key)))
                if change.type == "DELETED":
                    del self.index[op.key]
                else:
                    self.index[op.key] = (revision, change.create_revision, change.raw)
                params.extend(row)
                group.results.append((op, change))
            self._flush(params)
            conn.execute("COMMIT")
        except Exception as exc:
            log.exception("store: commit of %d operation(s) failed", len(ops))
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            for key, old in reversed(undo):
                if old is None:
                    self.index.pop(key, None)
                else:
                    self.index[key] = old
            error = StoreError(f"commit failed: {exc}")
            error.__cause__ = exc
            group.results = [(op, error) for op in ops]
            return group
        self.revision = revision
        self.compacted = compacted
        return group

    def _flush(self, params: list[Any]) -> None:
        """Insert the pending rows with as few statements as SQLite's variable limit allows."""
        per_stmt = self.max_variables // _ROW_PARAMS * _ROW_PARAMS
        for start in range(0, len(params), per_stmt):
            chunk = params[start : start + per_stmt]
            rows = len(chunk) // _ROW_PARAMS
            sql = _INSERT_PREFIX + ",".join(["(?,?,?,?,?,?,?)"] * rows)
            self.conn.execute(sql, chunk)
        params.clear()

    def _apply(self, op: _Op, revision: int) -> tuple[Change, tuple[Any, ...]]:
        """Check `op` against the index and build its row (raises the op's own error)."""
        current = self.index.get(op.key)
        if op.kind == "create":
            if current is not None:
                raise KeyExistsError(op.key)
            assert op.value is not None
            raw = _stamp(op.value, revision)
            return (
                Change("ADDED", op.key, raw, revision, revision, None),
                (revision, op.key, 1, 0, revision, 0, raw),
            )
        if current is None:
            raise NotFoundError(op.key)
        mod_revision, create_revision, prev_raw = current
        if op.expected is not None and op.expected != mod_revision:
            raise ConflictError(
                op.key,
                expected_revision=op.expected,
                current_revision=mod_revision,
                current=orjson.loads(prev_raw),
            )
        if op.kind == "update":
            assert op.value is not None
            raw = _stamp(op.value, revision)
            return (
                Change("MODIFIED", op.key, raw, revision, create_revision, prev_raw),
                (revision, op.key, 0, 0, create_revision, mod_revision, raw),
            )
        raw = _stamp(orjson.loads(prev_raw), revision)
        return (
            Change("DELETED", op.key, raw, revision, create_revision, prev_raw),
            (revision, op.key, 0, 1, create_revision, mod_revision, raw),
        )


class _Readers:
    """A few read-only connections, one per executor thread, for SQL reads off the loop."""

    def __init__(self, path: str, workers: int = 2) -> None:
        self._path = path
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="inplace-store-read"
        )

    def conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA query_only = 1")
            conn.execute("PRAGMA busy_timeout = 5000")
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def close(self) -> None:
        self.executor.shutdown(wait=True)
        with self._lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()


def _read_compacted(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'compact_rev'").fetchone()
    return int(row[0]) if row else 0


@dataclass(slots=True)
class _Opened:
    conn: sqlite3.Connection
    lock: IO[bytes]
    index: dict[str, tuple[int, int, bytes]]
    revision: int
    compacted: int


def _open_sync(path: str, durability: Durability) -> _Opened:
    lock = open(path + ".lock", "ab")  # noqa: SIM115 - held for the store's lifetime
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        lock.close()
        raise StoreError(f"store {path!r} is in use by another process") from exc
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"cannot put {path!r} in WAL mode (got {mode!r})")
            conn.execute(f"PRAGMA synchronous = {'FULL' if durability == 'full' else 'NORMAL'}")
            conn.executescript(_SCHEMA)
            compacted = _read_compacted(conn)
            top = conn.execute("SELECT MAX(id) FROM kine").fetchone()[0]
            revision = max(int(top or 0), compacted)
            index: dict[str, tuple[int, int, bytes]] = {}
            with gc_paused():
                rows = conn.execute(
                    "SELECT k.name, k.id, k.create_revision, k.value FROM kine AS k"
                    " WHERE k.id IN (SELECT MAX(id) FROM kine GROUP BY name) AND k.deleted = 0"
                ).fetchall()
                for name, rid, create_revision, value in rows:
                    index[name] = (rid, create_revision, bytes(value))
        except BaseException:
            conn.close()
            raise
    except BaseException:
        lock.close()
        raise
    return _Opened(conn, lock, index, revision, compacted)


class Store:
    """A durable, revisioned object store. Open with `await Store.open(path)`."""

    def __init__(self, path: str, opened: _Opened, loop: asyncio.AbstractEventLoop) -> None:
        """Use `Store.open`."""
        self.path = path
        self._loop = loop
        self._lock_file = opened.lock
        # Loop-side view: key → (raw, mod revision, create revision), plus the keys sorted.
        self._view: dict[str, tuple[bytes, int, int]] = {
            key: (raw, mod, create) for key, (mod, create, raw) in opened.index.items()
        }
        self._keys: list[str] = sorted(self._view)
        self._revision = opened.revision
        self._compacted = opened.compacted
        self._hub = WatchHub()
        self._closed = False
        self._readers = _Readers(path)
        self._writer = _Writer(
            opened.conn, opened.index, opened.revision, opened.compacted, self._publish, loop
        )
        self._writer.start()

    @classmethod
    async def open(cls, path: str | os.PathLike[str], *, durability: Durability = "full") -> Store:
        """Open (creating if needed) the store at `path`; bound to the running event loop."""
        fspath = os.fspath(path)
        opened = await asyncio.to_thread(_open_sync, fspath, durability)
        return cls(fspath, opened, asyncio.get_running_loop())

    async def close(self) -> None:
        """Finish queued writes, end all watches, release the files. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._writer.queue.put(_STOP)
        # The writer's last publish is queued on the loop before join() returns, so it runs
        # before this coroutine resumes.
        await asyncio.to_thread(self._writer.thread.join)
        self._hub.close_all()
        await asyncio.to_thread(self._readers.close)
        self._lock_file.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def current_revision(self) -> int:
        """The revision of the last committed write (0 for an empty store)."""
        return self._revision

    @property
    def compacted_revision(self) -> int:
        """Reads and watches from below this revision raise `CompactedError`."""
        return self._compacted

    # -- writes --------------------------------------------------------------------------------

    async def create(self, key: str, value: Object) -> Entry:
        """Store a new object; `KeyExistsError` if the key holds one."""
        result: Entry = await self._submit("create", key, _check_value(value), None)
        return result

    async def update(self, key: str, value: Object, *, expected_revision: int | None) -> Entry:
        """Replace an object; with `expected_revision`, only if it is still at that revision.

        `NotFoundError` if the key holds no object, `ConflictError` on a revision mismatch.
        """
        result: Entry = await self._submit("update", key, _check_value(value), expected_revision)
        return result

    async def delete(self, key: str, *, expected_revision: int | None = None) -> Entry:
        """Delete an object; returns its final state, stamped with the delete's revision.

        `Entry.revision` is the delete's revision (as in the DELETED watch event);
        `create_revision` is the object's.
        """
        result: Entry = await self._submit("delete", key, None, expected_revision)
        return result

    async def compact(self, revision: int) -> None:
        """Drop history at or below `revision`; reads and watches below it become 410s."""
        if revision <= self._compacted:
            return
        if revision > self._revision:
            raise FutureRevisionError(revision, self._revision)
        await self._submit("compact", "", None, revision)

    async def _submit(
        self,
        kind: Literal["create", "update", "delete", "compact"],
        key: str,
        value: Object | None,
        expected: int | None,
    ) -> Any:
        if self._closed:
            raise StoreClosedError("store is closed")
        if kind != "compact" and (not isinstance(key, str) or not key):
            raise InvalidObjectError(f"invalid key {key!r}")
        future: asyncio.Future[Any] = self._loop.create_future()
        self._writer.queue.put(_Op(kind, key, value, expected, future))
        if not self._writer.thread.is_alive():
            raise StoreClosedError("store writer is not running")
        return await future

    def _publish(self, group: _Group) -> None:
        """On the loop: apply a committed group to the view, fan out, then answer callers."""
        view, keys = self._view, self._keys
        changes: list[Change] = []
        for _, outcome in group.results:
            if isinstance(outcome, Change):
                changes.append(outcome)
                key = outcome.key
                if outcome.type == "DELETED":
                    del view[key]
                    del keys[bisect.bisect_left(keys, key)]
                else:
                    if key not in view:
                        bisect.insort(keys, key)
                    view[key] = (outcome.raw, outcome.revision, outcome.create_revision)
            elif isinstance(outcome, _Compacted):
                self._compacted = max(self._compacted, outcome.revision)
        if changes:
            self._revision = changes[-1].revision
            self._hub.publish(changes)
        for op, outcome in group.results:
            future = op.future
            if future.done():  # the caller was cancelled; the write stands regardless
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            elif isinstance(outcome, Change):
                future.set_result(
                    Entry(
                        outcome.key,
                        orjson.loads(outcome.raw),
                        outcome.raw,
                        outcome.revision,
                        outcome.create_revision,
                    )
                )
            else:
                future.set_result(None)

    # -- reads ---------------------------------------------------------------------------------

    async def get(self, key: str) -> Entry | None:
        """The object under `key` at the current revision, or None."""
        self._check_open()
        found = self._view.get(key)
        if found is None:
            return None
        raw, mod, create = found
        return Entry(key, orjson.loads(raw), raw, mod, create)

    async def list(
        self,
        prefix: str,
        *,
        revision: int | None = None,
        limit: int | None = None,
        start_after: str | None = None,
    ) -> ListResult:
        """Objects whose key starts with `prefix`, sorted by key, at `revision` (None: now).

        `limit` (None or 0: all) bounds the page; `continue_key` is set when more remain and
        is what to pass as `start_after` for the next page (with the same `revision` for a
        consistent read across pages).
        """
        self._check_open()
        if limit is not None and limit < 0:
            raise ValueError("limit must be >= 0")
        limit = limit or None
        if revision is None or revision == self._revision:
            return self._list_current(prefix, limit, start_after)
        if revision > self._revision:
            raise FutureRevisionError(revision, self._revision)
        if revision < self._compacted:
            raise CompactedError(revision, self._compacted)
        return await self._run_read(self._list_at_sync, prefix, revision, limit, start_after)

    def _list_current(self, prefix: str, limit: int | None, start_after: str | None) -> ListResult:
        keys, view = self._keys, self._view
        low, exclusive, high = _key_range(prefix, start_after)
        lo = bisect.bisect_right(keys, low) if exclusive else bisect.bisect_left(keys, low)
        hi = len(keys) if high is None else bisect.bisect_left(keys, high, lo)
        more = False
        if limit is not None and hi - lo > limit:
            hi = lo + limit
            more = True
        loads = orjson.loads
        items: list[Entry] = []
        append = items.append
        with gc_paused():
            for key in keys[lo:hi]:
                raw, mod, create = view[key]
                append(Entry(key, loads(raw), raw, mod, create))
        return ListResult(items, self._revision, items[-1].key if more and items else None)

    def _list_at_sync(
        self, prefix: str, revision: int, limit: int | None, start_after: str | None
    ) -> ListResult:
        low, exclusive, high = _key_range(prefix, start_after)
        where = "name > ?" if exclusive else "name >= ?"
        args: list[Any] = [low]
        if high is not None:
            where += " AND name < ?"
            args.append(high)
        args.append(revision)
        sql = (
            "SELECT k.name, k.value, k.id, k.create_revision FROM kine AS k WHERE k.id IN"
            f" (SELECT MAX(id) FROM kine WHERE {where} AND id <= ? GROUP BY name)"
            " AND k.deleted = 0 ORDER BY k.name"
        )
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit + 1)
        conn = self._readers.conn()
        with gc_paused():
            conn.execute("BEGIN")
            try:
                compacted = _read_compacted(conn)
                if revision < compacted:
                    raise CompactedError(revision, compacted)
                rows = conn.execute(sql, args).fetchall()
            finally:
                conn.execute("COMMIT")
            more = limit is not None and len(rows) > limit
            if more:
                del rows[limit:]
            loads = orjson.loads
            items = [
                Entry(name, loads(value), bytes(value), mod, create)
                for name, value, mod, create in rows
            ]
        return ListResult(items, revision, items[-1].key if more and items else None)

    async def snapshot(self) -> tuple[int, builtins.list[Entry]]:
        """Every live object at one revision: prime a cache, then `watch(from_revision=rev)`."""
        self._check_open()
        result = self._list_current("", None, None)
        return result.revision, result.items

    # -- watch ---------------------------------------------------------------------------------

    def watch(self, prefix: str, *, from_revision: int) -> Watch:
        """Every event under `prefix` with revision > `from_revision`, in order, then live ones.

        Raises `CompactedError` (now, or from the first `__anext__` if a compaction races the
        catch-up) when `from_revision` is below the compacted revision. Close with `aclose()`.
        """
        self._check_open()
        if from_revision < self._compacted:
            raise CompactedError(from_revision, self._compacted)
        return Watch(
            self._hub,
            self._read_history,
            prefix=prefix,
            from_revision=from_revision,
            registered_at=self._revision,
        )

    @property
    def watcher_count(self) -> int:
        """Registered watches (for metrics and tests)."""
        return len(self._hub)

    async def _read_history(
        self, prefix: str, after: int, upto: int, limit: int
    ) -> builtins.list[Event]:
        return await self._run_read(self._history_sync, prefix, after, upto, limit)

    def _history_sync(self, prefix: str, after: int, upto: int, limit: int) -> builtins.list[Event]:
        where = "k.id > ? AND k.id <= ?"
        args: list[Any] = [after, upto]
        if prefix:
            high = prefix_end(prefix)
            where += " AND k.name >= ?"
            args.append(prefix)
            if high is not None:
                where += " AND k.name < ?"
                args.append(high)
        args.append(limit)
        sql = (
            "SELECT k.id, k.name, k.created, k.deleted, k.value, p.value FROM kine AS k"
            " LEFT JOIN kine AS p ON p.id = k.prev_revision"
            f" WHERE {where} ORDER BY k.id LIMIT ?"
        )
        conn = self._readers.conn()
        with gc_paused():
            conn.execute("BEGIN")
            try:
                compacted = _read_compacted(conn)
                if after < compacted:
                    raise CompactedError(after, compacted)
                rows = conn.execute(sql, args).fetchall()
            finally:
                conn.execute("COMMIT")
            loads = orjson.loads
            events: builtins.list[Event] = []
            for rid, name, created, deleted, value, prev in rows:
                raw = bytes(value)
                if deleted:
                    type_: Literal["ADDED", "MODIFIED", "DELETED"] = "DELETED"
                elif created:
                    type_ = "ADDED"
                else:
                    type_ = "MODIFIED"
                prev_value = loads(prev) if prev is not None and not created else None
                events.append(Event(type_, name, loads(raw), raw, rid, prev_value))
        return events

    # -- helpers -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("store is closed")

    async def _run_read(self, fn: Callable[..., _T], *args: Any) -> _T:
        try:
            return await self._loop.run_in_executor(self._readers.executor, fn, *args)
        except RuntimeError as exc:
            if self._closed:
                raise StoreClosedError("store is closed") from exc
            raise


def _check_value(value: Object) -> Object:
    if not isinstance(value, dict):
        raise InvalidObjectError(f"value must be a JSON object, not {type(value).__name__}")
    return value
