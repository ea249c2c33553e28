"""Watch: catch-up from the log plus the live stream equals the log, exactly once, in order."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inplace.store import (
    CompactedError,
    ConflictError,
    Entry,
    Event,
    KeyExistsError,
    NotFoundError,
    Store,
    Watch,
)


def strip(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """The object without the stamped resourceVersion, for comparing with what was written."""
    if value is None:
        return None
    out = dict(value)
    metadata = dict(out.get("metadata", {}))
    metadata.pop("resourceVersion", None)
    out["metadata"] = metadata
    return out


async def take(watch: Watch, n: int) -> list[Event]:
    return [await asyncio.wait_for(anext(watch), 10) for _ in range(n)]


async def test_live_watch(store: Store) -> None:
    watch = store.watch("/pods/", from_revision=store.current_revision)
    await store.create("/pods/a", {"v": 1})
    await store.create("/nodes/n", {"v": 1})
    await store.update("/pods/a", {"v": 2}, expected_revision=1)
    await store.delete("/pods/a")
    events = await take(watch, 3)
    assert [(e.type, e.key, e.revision) for e in events] == [
        ("ADDED", "/pods/a", 1),
        ("MODIFIED", "/pods/a", 3),
        ("DELETED", "/pods/a", 4),
    ]
    assert events[0].prev is None
    assert events[1].prev is not None and events[1].prev["v"] == 1
    assert events[2].value["v"] == 2 and events[2].value["metadata"]["resourceVersion"] == "4"
    assert events[2].prev is not None and events[2].prev["metadata"]["resourceVersion"] == "3"
    for event in events:
        assert event.value["metadata"]["resourceVersion"] == str(event.revision)
    await watch.aclose()
    assert store.watcher_count == 0
    with pytest.raises(StopAsyncIteration):
        await anext(watch)


async def test_catch_up_then_live(store: Store) -> None:
    for i in range(2500):  # more than one history page
        await store.create(f"/x/{i:05d}", {"i": i}) if i % 50 == 0 else None
    entries = await asyncio.gather(*(store.create(f"/y/{i:05d}", {"i": i}) for i in range(2500)))
    assert entries[-1].revision == store.current_revision
    watch = store.watch("/y/", from_revision=10)

    async def writer() -> None:
        for i in range(200):
            await store.update(f"/y/{i:05d}", {"i": -i}, expected_revision=None)

    task = asyncio.create_task(writer())
    expected_revisions = [e.revision for e in entries if e.revision > 10]
    got = await take(watch, len(expected_revisions) + 200)
    await task
    assert [e.revision for e in got[: len(expected_revisions)]] == expected_revisions
    live = got[len(expected_revisions) :]
    assert [e.type for e in live] == ["MODIFIED"] * 200
    revisions = [e.revision for e in got]
    assert revisions == sorted(set(revisions)), "no gaps reordering or duplicates"
    assert watch.backlog == 0
    await watch.aclose()


async def test_watch_from_the_future(store: Store) -> None:
    await store.create("/x/a", {})
    watch = store.watch("/x/", from_revision=3)
    for i in range(4):
        await store.update("/x/a", {"i": i}, expected_revision=None)
    assert [e.revision for e in await take(watch, 2)] == [4, 5]
    await watch.aclose()


async def test_many_watchers_and_slow_consumer(store: Store) -> None:
    watches = [store.watch("/", from_revision=0) for _ in range(120)]
    await asyncio.gather(*(store.create(f"/k/{i}", {"i": i}) for i in range(300)))
    # Nobody consumed yet: every buffer holds everything, the writers were never blocked.
    assert all(w.backlog == 300 for w in watches)
    for w in watches:
        events = await take(w, 300)
        assert [e.revision for e in events] == list(range(1, 301))
    assert watches[0].backlog == 0
    first = (await store.list("/k/")).items[0]
    assert isinstance(first, Entry)
    for w in watches:
        await w.aclose()
    assert store.watcher_count == 0


async def test_abandoned_watch_is_unregistered(store: Store) -> None:
    store.watch("/x/", from_revision=0)  # created and dropped without iterating

    async def consume_one() -> None:
        async for _event in store.watch("/x/", from_revision=0):
            break

    task = asyncio.create_task(consume_one())
    await asyncio.sleep(0)
    await store.create("/x/a", {})
    await task
    gc.collect()
    await store.create("/x/b", {})  # the next publish prunes dropped watchers
    assert store.watcher_count == 0


async def test_close_ends_watches(db_path: Path) -> None:
    store = await Store.open(db_path)
    watch = store.watch("/", from_revision=0)
    pending = asyncio.ensure_future(anext(watch))
    await asyncio.sleep(0)
    await store.create("/a", {})
    await store.close()
    assert (await pending).key == "/a"
    with pytest.raises(StopAsyncIteration):
        await anext(watch)


async def test_compaction_racing_catch_up(store: Store) -> None:
    for i in range(5):
        await store.create(f"/x/{i}", {})
    watch = store.watch("/x/", from_revision=1)  # allowed now...
    await store.compact(4)  # ...but compacted before the catch-up read
    with pytest.raises(CompactedError):
        await anext(watch)
    assert store.watcher_count == 0


async def test_async_with(store: Store) -> None:
    async with store.watch("/", from_revision=0) as watch:
        await store.create("/a", {})
        assert (await anext(watch)).key == "/a"
    assert store.watcher_count == 0


# -- property: watching from any revision yields exactly the log after it ----------------------

KEYS = ["/a/1", "/a/2", "/a/3", "/b/1"]


@dataclass(frozen=True)
class Op:
    kind: str  # create | update | cas | stale | delete
    key: str
    payload: int


op_strategy = st.builds(
    Op,
    st.sampled_from(["create", "update", "cas", "stale", "delete"]),
    st.sampled_from(KEYS),
    st.integers(0, 1000),
)


@dataclass
class Logged:
    type: str
    key: str
    revision: int
    value: dict[str, Any]
    prev: dict[str, Any] | None


def assert_compacted_rows(path: Path, revision: int) -> None:
    """At or below the compacted revision only each key's live row is left."""
    conn = sqlite3.connect(path)
    try:
        duplicated = conn.execute(
            "SELECT name FROM kine WHERE id <= ? GROUP BY name HAVING COUNT(*) > 1", (revision,)
        ).fetchall()
        markers = conn.execute(
            "SELECT id FROM kine WHERE id <= ? AND deleted = 1", (revision,)
        ).fetchall()
    finally:
        conn.close()
    assert duplicated == [] and markers == []


async def run_scenario(
    path: Path,
    batches: list[list[Op]],
    watch_points: list[tuple[int, float, str]],
    compact_at: list[int],
) -> None:
    store = await Store.open(path, durability="normal")
    log: list[Logged] = []
    state: dict[str, tuple[int, dict[str, Any]]] = {}  # key -> (mod revision, value)
    history: list[dict[str, dict[str, Any]]] = [{}]  # state (values) after each revision
    watches: list[tuple[int, Watch, int]] = []  # (from revision, watch, registered at)
    compacted_to = 0
    revision = 0
    try:
        for index, batch in enumerate(batches):
            for at, fraction, prefix in watch_points:
                if at == index:
                    start = int(revision * fraction)
                    if start >= store.compacted_revision:
                        watch = store.watch(prefix, from_revision=start)
                        watches.append((start, watch, revision))
            calls = []
            predicted: list[type[Exception] | None] = []
            for op in batch:
                value = {"metadata": {"name": op.key}, "payload": op.payload}
                current = state.get(op.key)
                if op.kind == "create":
                    calls.append(store.create(op.key, value))
                    ok = current is None
                    predicted.append(None if ok else KeyExistsError)
                elif op.kind == "delete":
                    calls.append(store.delete(op.key))
                    ok = current is not None
                    predicted.append(None if ok else NotFoundError)
                else:
                    expected = None if op.kind == "update" else (current[0] if current else 1)
                    if op.kind == "stale":
                        expected = (current[0] if current else 1) + 1
                    calls.append(store.update(op.key, value, expected_revision=expected))
                    ok = current is not None and op.kind != "stale"
                    predicted.append(
                        None if ok else (NotFoundError if current is None else ConflictError)
                    )
                if ok:
                    revision += 1
                    if op.kind == "delete":
                        assert current is not None
                        log.append(Logged("DELETED", op.key, revision, current[1], current[1]))
                        del state[op.key]
                    else:
                        prev = current[1] if current else None
                        kind = "ADDED" if op.kind == "create" else "MODIFIED"
                        log.append(Logged(kind, op.key, revision, value, prev))
                        state[op.key] = (revision, value)
                    history.append({k: v for k, (_, v) in state.items()})
            results = await asyncio.gather(*calls, return_exceptions=True)
            for result, error in zip(results, predicted, strict=True):
                if error is None:
                    assert isinstance(result, Entry), result
                else:
                    assert isinstance(result, error), result
            if index in compact_at:
                compacted_to = max(compacted_to, revision * 3 // 4)
                await store.compact(compacted_to)
                assert store.compacted_revision == compacted_to
                assert_compacted_rows(path, compacted_to)
        assert store.current_revision == revision

        # Every watcher (caught up from history, then live, consumed late) saw exactly the log,
        # unless a compaction overtook it before it read its history: then it must say so.
        for start, watch, registered_at in watches:
            if start < registered_at and start < compacted_to:
                with pytest.raises(CompactedError):
                    await anext(watch)
                continue
            expected_log = [e for e in log if e.revision > start and e.key.startswith(watch.prefix)]
            got = await take(watch, len(expected_log))
            assert [(e.type, e.key, e.revision) for e in got] == [
                (e.type, e.key, e.revision) for e in expected_log
            ]
            for event, logged in zip(got, expected_log, strict=True):
                assert event.value["metadata"]["resourceVersion"] == str(event.revision)
                assert strip(event.value) == strip(logged.value)
                assert strip(event.prev) == strip(logged.prev)
            assert watch.backlog == 0
            await watch.aclose()

        # A fresh watch from any retained revision replays the rest of the log.
        for start in range(store.compacted_revision, revision + 1):
            async with store.watch("/", from_revision=start) as watch:
                got = await take(watch, revision - start)
                assert [e.revision for e in got] == list(range(start + 1, revision + 1))

        # List at every retained revision equals the model's state at that revision.
        for at in range(store.compacted_revision, revision + 1):
            listed = await store.list("/", revision=at)
            assert {e.key: strip(e.value) for e in listed.items} == {
                k: strip(v) for k, v in history[at].items()
            }
    finally:
        await store.close()

    reopened = await Store.open(path)
    try:
        assert reopened.current_revision == revision
        _, entries = await reopened.snapshot()
        assert {e.key: (e.revision, strip(e.value)) for e in entries} == {
            k: (r, strip(v)) for k, (r, v) in state.items()
        }
    finally:
        await reopened.close()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    batches=st.lists(st.lists(op_strategy, min_size=1, max_size=6), min_size=1, max_size=12),
    watch_points=st.lists(
        st.tuples(st.integers(0, 11), st.floats(0, 1), st.sampled_from(["/", "/a/", "/b/"])),
        max_size=4,
    ),
    compact_at=st.lists(st.integers(0, 11), max_size=3),
)
def test_watch_equals_log(
    batches: list[list[Op]],
    watch_points: list[tuple[int, float, str]],
    compact_at: list[int],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run_scenario(Path(tmp) / "store.db", batches, watch_points, compact_at))
