"""Create / update / delete / get / list / compact semantics of the SQLite store."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from inplace.store import (
    CompactedError,
    ConflictError,
    FutureRevisionError,
    InvalidObjectError,
    KeyExistsError,
    NotFoundError,
    Store,
    StoreClosedError,
    StoreError,
)


def pod(name: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default"}, **extra}


async def test_empty_store(store: Store) -> None:
    assert store.current_revision == 0
    assert store.compacted_revision == 0
    assert await store.get("/pods/default/a") is None
    result = await store.list("/pods/")
    assert result.items == [] and result.revision == 0 and result.continue_key is None
    assert await store.snapshot() == (0, [])


async def test_create_stamps_resource_version(store: Store) -> None:
    value = pod("a")
    entry = await store.create("/pods/default/a", value)
    assert entry.revision == entry.create_revision == 1
    assert entry.value["metadata"]["resourceVersion"] == "1"
    assert orjson.loads(entry.raw) == entry.value
    assert "resourceVersion" not in value["metadata"], "the caller's dict is not mutated"
    assert store.current_revision == 1
    got = await store.get("/pods/default/a")
    assert got == entry
    assert got is not None and got.value is not entry.value, "each read gets its own dict"


async def test_create_existing_key(store: Store) -> None:
    await store.create("/pods/default/a", pod("a"))
    with pytest.raises(KeyExistsError):
        await store.create("/pods/default/a", pod("a"))
    assert store.current_revision == 1, "a failed write takes no revision"


async def test_update_and_cas(store: Store) -> None:
    created = await store.create("/pods/default/a", pod("a"))
    updated = await store.update(
        "/pods/default/a", pod("a", spec={"x": 1}), expected_revision=created.revision
    )
    assert updated.revision == 2 and updated.create_revision == 1
    assert updated.value["spec"] == {"x": 1}
    assert updated.value["metadata"]["resourceVersion"] == "2"
    with pytest.raises(ConflictError) as info:
        await store.update("/pods/default/a", pod("a"), expected_revision=created.revision)
    assert info.value.current_revision == 2
    assert info.value.current == updated.value
    unconditional = await store.update("/pods/default/a", pod("a"), expected_revision=None)
    assert unconditional.revision == 3


async def test_update_missing(store: Store) -> None:
    with pytest.raises(NotFoundError):
        await store.update("/pods/default/a", pod("a"), expected_revision=None)
    with pytest.raises(NotFoundError):
        await store.update("/pods/default/a", pod("a"), expected_revision=5)


async def test_delete(store: Store) -> None:
    await store.create("/pods/default/a", pod("a"))
    await store.update("/pods/default/a", pod("a", spec={"v": 2}), expected_revision=1)
    with pytest.raises(ConflictError):
        await store.delete("/pods/default/a", expected_revision=1)
    deleted = await store.delete("/pods/default/a", expected_revision=2)
    assert deleted.revision == 3 and deleted.create_revision == 1
    assert deleted.value["spec"] == {"v": 2}
    assert deleted.value["metadata"]["resourceVersion"] == "3"
    assert await store.get("/pods/default/a") is None
    with pytest.raises(NotFoundError):
        await store.delete("/pods/default/a")
    recreated = await store.create("/pods/default/a", pod("a"))
    assert recreated.create_revision == recreated.revision == 4


async def test_invalid_values(store: Store) -> None:
    with pytest.raises(InvalidObjectError):
        await store.create("/x/a", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(InvalidObjectError):
        await store.create("/x/a", {"metadata": "nope"})
    with pytest.raises(InvalidObjectError):
        await store.create("/x/a", {"bad": {1, 2}})
    with pytest.raises(InvalidObjectError):
        await store.create("", {})
    assert store.current_revision == 0


async def test_failed_check_fails_alone_in_group(store: Store) -> None:
    """Writes that commit together: the one failing its check does not abort the others."""
    await store.create("/x/dup", {})
    results = await asyncio.gather(
        store.create("/x/a", {}),
        store.create("/x/dup", {}),
        store.update("/x/dup", {"v": 1}, expected_revision=99),
        store.create("/x/b", {}),
        store.update("/x/missing", {}, expected_revision=None),
        return_exceptions=True,
    )
    assert [type(r).__name__ for r in results] == [
        "Entry",
        "KeyExistsError",
        "ConflictError",
        "Entry",
        "NotFoundError",
    ]
    revisions = [r.revision for r in results if not isinstance(r, BaseException)]
    assert revisions == [2, 3]
    assert store.current_revision == 3


async def test_writes_in_one_group_see_each_other(store: Store) -> None:
    results = await asyncio.gather(
        store.create("/x/a", {"v": 0}),
        store.update("/x/a", {"v": 1}, expected_revision=1),
        store.delete("/x/a", expected_revision=2),
        store.create("/x/a", {"v": 3}),
    )
    assert [r.revision for r in results] == [1, 2, 3, 4]
    got = await store.get("/x/a")
    assert got is not None and got.value["v"] == 3 and got.create_revision == 4


async def test_list_prefix_sorted_and_paged(store: Store) -> None:
    keys = [f"/pods/ns{i % 3}/p{i:03d}" for i in range(50)]
    for key in keys:
        await store.create(key, {"k": key})
    await store.create("/pods-other/x", {})
    await store.create("/nodes/n1", {})
    full = await store.list("/pods/")
    assert [e.key for e in full.items] == sorted(keys)
    assert full.continue_key is None and full.revision == store.current_revision
    ns1 = await store.list("/pods/ns1/")
    assert [e.key for e in ns1.items] == sorted(k for k in keys if k.startswith("/pods/ns1/"))
    assert all(e.value["k"] == e.key for e in full.items)

    for revision in (None, 30):
        pages: list[str] = []
        start: str | None = None
        while True:
            page = await store.list("/pods/", limit=7, start_after=start, revision=revision)
            pages.extend(e.key for e in page.items)
            assert len(page.items) <= 7
            if page.continue_key is None:
                break
            assert page.continue_key == page.items[-1].key
            start = page.continue_key
        expected = sorted(keys) if revision is None else sorted(keys[:30])
        assert pages == expected

    exact = await store.list("/pods/", limit=50)
    assert len(exact.items) == 50 and exact.continue_key is None
    assert (await store.list("/pods/", limit=0)).items == full.items
    with pytest.raises(ValueError):
        await store.list("/pods/", limit=-1)


async def test_list_at_past_revision(store: Store) -> None:
    states: list[dict[str, int]] = []
    model: dict[str, int] = {}
    ops: list[tuple[str, str, int]] = [
        ("create", "/x/a", 1),
        ("create", "/x/b", 2),
        ("update", "/x/a", 3),
        ("delete", "/x/b", 0),
        ("create", "/x/c", 5),
        ("create", "/x/b", 6),
        ("delete", "/x/a", 0),
    ]
    for op, key, v in ops:
        if op == "create":
            await store.create(key, {"v": v})
            model[key] = v
        elif op == "update":
            await store.update(key, {"v": v}, expected_revision=None)
            model[key] = v
        else:
            await store.delete(key)
            del model[key]
        states.append(dict(model))
    for revision, state in enumerate(states, start=1):
        result = await store.list("/x/", revision=revision)
        assert result.revision == revision
        assert {e.key: e.value["v"] for e in result.items} == state
        assert all(e.value["metadata"]["resourceVersion"] == str(e.revision) for e in result.items)
    empty = await store.list("/x/", revision=0)
    assert empty.items == []
    with pytest.raises(FutureRevisionError):
        await store.list("/x/", revision=store.current_revision + 1)


async def test_compaction(store: Store, db_path: Path) -> None:
    await store.create("/x/a", {"v": 1})  # 1
    await store.create("/x/b", {"v": 1})  # 2
    await store.update("/x/a", {"v": 2}, expected_revision=1)  # 3
    await store.delete("/x/b")  # 4
    await store.update("/x/a", {"v": 3}, expected_revision=3)  # 5
    await store.create("/x/c", {"v": 1})  # 6
    await store.compact(4)
    assert store.compacted_revision == 4
    for revision in (1, 2, 3):
        with pytest.raises(CompactedError) as info:
            await store.list("/x/", revision=revision)
        assert info.value.compacted_revision == 4
        with pytest.raises(CompactedError):
            store.watch("/x/", from_revision=revision)
    at4 = await store.list("/x/", revision=4)
    assert {e.key: e.value["v"] for e in at4.items} == {"/x/a": 2}
    at5 = await store.list("/x/", revision=5)
    assert {e.key: e.value["v"] for e in at5.items} == {"/x/a": 3}
    watch = store.watch("/x/", from_revision=4)
    events = [await anext(watch) for _ in range(2)]
    assert [(e.type, e.key, e.revision) for e in events] == [
        ("MODIFIED", "/x/a", 5),
        ("ADDED", "/x/c", 6),
    ]
    assert events[0].prev is not None and events[0].prev["v"] == 2
    await watch.aclose()
    await store.compact(2)  # below the compacted revision: nothing to do
    assert store.compacted_revision == 4
    with pytest.raises(FutureRevisionError):
        await store.compact(store.current_revision + 1)
    await store.compact(store.current_revision)
    assert [e.key for e in (await store.list("/x/")).items] == ["/x/a", "/x/c"]

    await store.close()
    reopened = await Store.open(db_path)
    try:
        assert reopened.current_revision == 6 and reopened.compacted_revision == 6
        assert {e.key: e.value["v"] for e in (await reopened.list("/x/")).items} == {
            "/x/a": 3,
            "/x/c": 1,
        }
        await reopened.delete("/x/c")
        await reopened.compact(reopened.current_revision)  # drops everything about /x/c
    finally:
        await reopened.close()
    again = await Store.open(db_path)
    try:
        assert again.current_revision == 7, "the revision survives compacting the newest row"
        assert [e.key for e in (await again.list("/")).items] == ["/x/a"]
        assert (await again.create("/x/d", {})).revision == 8
    finally:
        await again.close()


async def test_reopen_restores_state(db_path: Path) -> None:
    store = await Store.open(db_path)
    await store.create("/x/a", {"v": 1})
    await store.create("/x/b", {"v": 1})
    await store.update("/x/a", {"v": 2}, expected_revision=1)
    await store.delete("/x/b")
    await store.close()
    store = await Store.open(db_path)
    try:
        assert store.current_revision == 4
        entry = await store.get("/x/a")
        assert entry is not None and entry.revision == 3 and entry.create_revision == 1
        assert await store.get("/x/b") is None
        with pytest.raises(ConflictError):
            await store.update("/x/a", {}, expected_revision=1)
        assert (await store.update("/x/a", {}, expected_revision=3)).revision == 5
    finally:
        await store.close()


async def test_second_opener_is_refused(store: Store, db_path: Path) -> None:
    with pytest.raises(StoreError, match="in use"):
        await Store.open(db_path)


async def test_closed_store_refuses(db_path: Path) -> None:
    store = await Store.open(db_path)
    pending = asyncio.ensure_future(store.create("/x/a", {}))
    await asyncio.sleep(0)
    await store.close()
    assert (await pending).revision == 1, "writes queued before close() are committed"
    await store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        await store.create("/x/b", {})
    with pytest.raises(StoreClosedError):
        await store.get("/x/a")


async def test_snapshot(store: Store) -> None:
    for i in range(10):
        await store.create(f"/r{i % 2}/k{i}", {"i": i})
    revision, entries = await store.snapshot()
    assert revision == 10
    assert [e.key for e in entries] == sorted(e.key for e in entries)
    assert len(entries) == 10


async def test_durability_normal_option(db_path: Path) -> None:
    store = await Store.open(db_path, durability="normal")
    try:
        assert (await store.create("/x/a", {})).revision == 1
    finally:
        await store.close()


class _FailingCommit:
    """Wraps the writer's connection; the next COMMIT raises like a full disk would."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.fail = True

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT" and self.fail:
            self.fail = False
            raise sqlite3.OperationalError("database or disk is full")
        return self.conn.execute(sql, *args)

    @property
    def in_transaction(self) -> bool:
        return bool(self.conn.in_transaction)

    def close(self) -> None:
        self.conn.close()


async def test_failed_commit_rolls_back_the_group(store: Store, db_path: Path) -> None:
    await store.create("/x/a", {"v": 1})
    store._writer.conn = _FailingCommit(store._writer.conn)  # type: ignore[assignment]
    results = await asyncio.gather(
        store.create("/x/b", {}),
        store.update("/x/a", {"v": 2}, expected_revision=1),
        return_exceptions=True,
    )
    assert all(type(r) is StoreError for r in results), results
    assert store.current_revision == 1
    # The writer's index was rolled back too: the same writes succeed now, at the same revisions.
    assert (await store.create("/x/b", {})).revision == 2
    assert (await store.update("/x/a", {"v": 2}, expected_revision=1)).revision == 3
    await store.close()
    reopened = await Store.open(db_path)
    try:
        assert reopened.current_revision == 3
        assert [e.key for e in (await reopened.list("/x/")).items] == ["/x/a", "/x/b"]
    finally:
        await reopened.close()


async def test_group_larger_than_one_insert_statement(store: Store) -> None:
    store._writer.max_variables = 21  # as if SQLite allowed 3 rows per INSERT
    entries = await asyncio.gather(*(store.create(f"/x/{i:02d}", {"i": i}) for i in range(20)))
    assert [e.revision for e in entries] == list(range(1, 21))
    assert [e.value["i"] for e in (await store.list("/x/", revision=20)).items] == list(range(20))
