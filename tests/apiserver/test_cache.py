"""The watch cache's reads for LIST: key order, the joined items kept between writes, and
objects looked up by name; each follows the store's writes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from inplace.apiserver.cache import WatchCache, join_items
from inplace.registry.kinds import REGISTRY, Kind
from inplace.store import Store

POD = REGISTRY.by_kind("", "Pod")
NAMESPACE = REGISTRY.by_kind("", "Namespace")
SECRET = REGISTRY.by_kind("", "Secret")


def kind(found: Kind | None) -> Kind:
    assert found is not None
    return found


def obj(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"metadata": metadata, **extra}


@pytest.fixture
async def store_and_cache(tmp_path: Path) -> AsyncIterator[tuple[Store, WatchCache]]:
    store = await Store.open(tmp_path / "store.db")
    await store.create(kind(POD).storage_key("b", "ns1"), obj("b", "ns1"))
    cache = WatchCache(store, REGISTRY)
    await cache.start()
    try:
        yield store, cache
    finally:
        await cache.stop()
        await store.close()


async def write(store: Store, cache: WatchCache, action: Any) -> None:
    await action
    await cache.sync()


def names(entries: list[Any]) -> list[tuple[str | None, str]]:
    return [(e.value["metadata"].get("namespace"), e.value["metadata"]["name"]) for e in entries]


async def test_entries_follow_creates_and_deletes_in_key_order(
    store_and_cache: tuple[Store, WatchCache],
) -> None:
    store, cache = store_and_cache
    pod = kind(POD)
    for ns, name in (("ns2", "a"), ("ns1", "c"), ("ns1", "a")):
        await write(store, cache, store.create(pod.storage_key(name, ns), obj(name, ns)))
    assert names(cache.entries(pod, "ns1")) == [("ns1", "a"), ("ns1", "b"), ("ns1", "c")]
    assert names(cache.entries(pod, None)) == [
        ("ns1", "a"),
        ("ns1", "b"),
        ("ns1", "c"),
        ("ns2", "a"),
    ]
    await write(store, cache, store.delete(pod.storage_key("b", "ns1")))
    await write(store, cache, store.create(pod.storage_key("aa", "ns1"), obj("aa", "ns1")))
    assert names(cache.entries(pod, "ns1")) == [("ns1", "a"), ("ns1", "aa"), ("ns1", "c")]
    assert names(cache.entries(pod, None))[-1] == ("ns2", "a")
    assert cache.entries(pod, "nowhere") == []


async def test_joined_items_are_kept_until_one_of_them_changes(
    store_and_cache: tuple[Store, WatchCache],
) -> None:
    store, cache = store_and_cache
    pod, secret = kind(POD), kind(SECRET)
    await write(store, cache, store.create(pod.storage_key("a", "ns2"), obj("a", "ns2")))

    def joined(namespace: str | None) -> bytes:
        pieces = cache.joined(pod, namespace)
        assert b"".join(pieces) == b",".join(e.raw for e in cache.entries(pod, namespace))
        return b"".join(pieces)

    first, everywhere = cache.joined(pod, "ns1"), cache.joined(pod, None)
    assert cache.joined(pod, "ns1") is first and cache.joined(pod, None) is everywhere
    # a write elsewhere (another kind, another namespace's own join) keeps them
    await write(store, cache, store.create(secret.storage_key("s", "ns1"), obj("s", "ns1")))
    assert cache.joined(pod, "ns1") is first
    await write(store, cache, store.create(pod.storage_key("z", "ns2"), obj("z", "ns2")))
    assert cache.joined(pod, "ns1") is first
    assert cache.joined(pod, None) is not everywhere
    assert [o["metadata"]["name"] for o in orjson.loads(b"[" + joined(None) + b"]")] == [
        "b",
        "a",
        "z",
    ]
    # an update changes the bytes, a delete the items
    entry = cache.get(pod, pod.storage_key("b", "ns1"), "ns1")
    assert entry is not None
    changed = obj("b", "ns1", spec={"x": 1})
    await write(
        store,
        cache,
        store.update(pod.storage_key("b", "ns1"), changed, expected_revision=entry.revision),
    )
    assert [o["spec"] for o in orjson.loads(b"[" + joined("ns1") + b"]")] == [{"x": 1}]
    await write(store, cache, store.delete(pod.storage_key("b", "ns1")))
    assert joined("ns1") == b""
    assert cache.joined(pod, "nowhere") == []


async def test_objects_are_looked_up_by_name(store_and_cache: tuple[Store, WatchCache]) -> None:
    store, cache = store_and_cache
    pod, namespace = kind(POD), kind(NAMESPACE)
    await write(store, cache, store.create(pod.storage_key("b", "ns0"), obj("b", "ns0")))
    await write(store, cache, store.create(namespace.storage_key("ns1"), obj("ns1")))
    assert names(cache.named(pod, "ns1", "b")) == [("ns1", "b")]
    assert names(cache.named(pod, None, "b")) == [("ns0", "b"), ("ns1", "b")]
    assert cache.named(pod, "ns1", "a") == [] and cache.named(pod, "other", "b") == []
    assert names(cache.named(namespace, None, "ns1")) == [(None, "ns1")]
    assert names(cache.named(namespace, "ignored", "ns1")) == [(None, "ns1")]


def test_items_are_joined_in_pieces_of_about_the_size_asked() -> None:
    raws = [b"1" * 10, b"2" * 10, b"3" * 10, b"4" * 10, b"5" * 10]
    assert join_items(raws, 20) == [
        b"1111111111,2222222222",
        b",3333333333,4444444444",
        b",5555555555",
    ]
    assert join_items([], 20) == []
    assert b"".join(join_items(raws)) == b",".join(raws)
