from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from inplace.client import PODS, Client, Informer, key_of, split_key
from tests.poll import await_until

from .fakeserver import FakeAPIServer, pod

Obj = dict[str, Any]


class Mirror:
    """Rebuilds the cache from handler calls alone, checking that they are consistent."""

    def __init__(self) -> None:
        self.objects: dict[str, Obj] = {}
        self.log: list[tuple[str, str]] = []
        self.errors: list[str] = []

    def on_add(self, obj: Obj) -> None:
        key = key_of(obj)
        if key in self.objects:
            self.errors.append(f"add of known {key}")
        self.objects[key] = copy.deepcopy(obj)
        self.log.append(("add", key))

    def on_update(self, old: Obj, new: Obj) -> None:
        key = key_of(new)
        if self.objects.get(key) != old:
            self.errors.append(f"update of {key} with a stale old")
        self.objects[key] = copy.deepcopy(new)
        self.log.append(("update", key))

    def on_delete(self, obj: Obj) -> None:
        key = key_of(obj)
        if self.objects.pop(key, None) is None:
            self.errors.append(f"delete of unknown {key}")
        self.log.append(("delete", key))

    def register(self, informer: Informer) -> None:
        informer.add_handler(self.on_add, self.on_update, self.on_delete)


def cache_of(informer: Informer) -> dict[str, Obj]:
    return {key_of(o): o for o in informer.list()}


def converged(server: FakeAPIServer, informer: Informer, mirror: Mirror, ns: str | None) -> bool:
    state = server.state(ns)
    return cache_of(informer) == state and mirror.objects == state


@pytest.fixture
async def running(
    server: FakeAPIServer, client: Client
) -> AsyncIterator[tuple[Informer, Mirror, asyncio.Task[None]]]:
    server.put(pod("a", "p1", nodeName="n1"))
    server.put(pod("a", "p2", nodeName="n2"))
    server.put(pod("b", "p3", nodeName="n1"))
    informer = Informer(client, PODS, page_size=2, backoff_initial=0.01, backoff_max=0.05)
    mirror = Mirror()
    mirror.register(informer)
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_synced(), 5)
    yield informer, mirror, task
    informer.stop()
    await asyncio.wait_for(task, 5)
    assert mirror.errors == []


async def test_initial_sync(server: FakeAPIServer, running: Any) -> None:
    informer, mirror, _ = running
    assert informer.has_synced
    assert sorted(informer.keys()) == ["a/p1", "a/p2", "b/p3"]
    assert informer.get("a/p1") == server.objects["a/p1"]
    assert informer.get("nope") is None
    assert len(informer) == 3
    assert sorted(mirror.log) == [("add", "a/p1"), ("add", "a/p2"), ("add", "b/p3")]
    assert informer.last_sync_resource_version == str(server.rv)
    assert informer.relists == 1


async def test_watch_events_in_order(server: FakeAPIServer, running: Any) -> None:
    informer, mirror, _ = running
    await await_until(lambda: len(server.watches) == 1)
    mirror.log.clear()
    server.put(pod("a", "p4"))
    server.put(pod("a", "p1", nodeName="n9"))
    server.remove("b", "p3")
    server.put(pod("a", "p4", nodeName="n1"))
    await await_until(lambda: converged(server, informer, mirror, None))
    assert mirror.log == [
        ("add", "a/p4"),
        ("update", "a/p1"),
        ("delete", "b/p3"),
        ("update", "a/p4"),
    ]
    assert informer.resource_version == str(server.rv)


async def test_resumes_after_clean_close(server: FakeAPIServer, running: Any) -> None:
    informer, mirror, _ = running
    await await_until(lambda: len(server.watches) == 1)
    server.put(pod("a", "p5"))
    await await_until(lambda: informer.resource_version == str(server.rv))
    seen = informer.resource_version
    server.watch_gate.clear()  # hold the reconnect while things change
    server.close_watches()
    await await_until(lambda: not server.watches)
    server.put(pod("a", "p6"))
    server.remove("a", "p2")
    server.watch_gate.set()
    await await_until(lambda: converged(server, informer, mirror, None))
    assert informer.relists == 1  # no relist needed
    assert server.watch_requests()[-1]["resourceVersion"] == seen


async def test_reconnects_after_connection_drop(server: FakeAPIServer, running: Any) -> None:
    informer, mirror, _ = running
    await await_until(lambda: len(server.watches) == 1)
    watches_before = len(server.watch_requests())
    server.drop_watches()
    server.put(pod("b", "p7"))
    await await_until(lambda: converged(server, informer, mirror, None))
    assert informer.relists == 1
    assert len(server.watch_requests()) > watches_before


@pytest.mark.parametrize("mode", ["event", "http"])
async def test_relists_on_gone_and_emits_the_diff(
    server: FakeAPIServer, running: Any, mode: str
) -> None:
    informer, mirror, _ = running
    server.gone_mode = mode
    await await_until(lambda: len(server.watches) == 1)
    server.watch_gate.clear()
    server.close_watches()
    await await_until(lambda: not server.watches)
    # While the informer is away: an add, an update, a delete, an unchanged object, and then
    # compaction, so resuming from its resourceVersion is impossible.
    server.put(pod("a", "new"))
    server.put(pod("a", "p1", nodeName="moved"))
    server.remove("a", "p2")
    server.compact()
    mirror.log.clear()
    server.watch_gate.set()
    await await_until(lambda: informer.relists == 2)
    await await_until(lambda: converged(server, informer, mirror, None))
    assert sorted(mirror.log) == [("add", "a/new"), ("delete", "a/p2"), ("update", "a/p1")]
    assert informer.last_sync_resource_version == str(server.rv)
    # And it keeps watching afterwards.
    server.put(pod("b", "after"))
    await await_until(lambda: converged(server, informer, mirror, None))


async def test_bookmark_advances_resource_version(server: FakeAPIServer, client: Client) -> None:
    server.put(pod("a", "p1"))
    informer = Informer(client, PODS, namespace="a")
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    await await_until(lambda: len(server.watches) == 1)
    server.put(pod("b", "elsewhere"))  # not in our namespace: no event, but rv moves on
    assert informer.resource_version != str(server.rv)
    server.send_bookmark()
    await await_until(lambda: informer.resource_version == str(server.rv))
    server.close_watches()
    await await_until(lambda: server.watch_requests()[-1]["resourceVersion"] == str(server.rv))
    assert server.watch_requests()[-1]["allowWatchBookmarks"] == "true"
    assert informer.keys() == ["a/p1"]
    informer.stop()
    await asyncio.wait_for(task, 5)


async def test_retries_failed_list(server: FakeAPIServer, client: Client) -> None:
    from .fakeserver import status_body

    server.put(pod("a", "p1"))
    server.fail_next.append((500, status_body(500, "InternalError", "db down"), {}))
    server.fail_next.append((429, status_body(429, "TooManyRequests", "slow down"), {}))
    informer = Informer(client, PODS, backoff_initial=0.01)
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_synced(), 5)
    assert informer.keys() == ["a/p1"]
    informer.stop()
    await asyncio.wait_for(task, 5)


async def test_indexes(server: FakeAPIServer, running: Any) -> None:
    informer, mirror, _ = running

    def by_node(obj: Obj) -> list[str]:
        node = obj.get("spec", {}).get("nodeName")
        return [node] if node else []

    informer.add_index("node", by_node)  # added after sync: built from the cache
    assert [key_of(o) for o in informer.by_index("node", "n1")] == ["a/p1", "b/p3"]
    assert informer.index_keys("node", "n2") == ["a/p2"]
    server.put(pod("a", "p1", nodeName="n2"))
    server.remove("b", "p3")
    await await_until(lambda: converged(server, informer, mirror, None))
    assert informer.index_keys("node", "n1") == []
    assert informer.index_keys("node", "n2") == ["a/p1", "a/p2"]
    with pytest.raises(KeyError):
        informer.by_index("nope", "x")
    with pytest.raises(ValueError):
        informer.add_index("node", by_node)


async def test_late_handler_gets_existing_objects(running: Any) -> None:
    informer, _, _ = running
    late = Mirror()
    late.register(informer)
    assert sorted(late.objects) == ["a/p1", "a/p2", "b/p3"]


async def test_handler_exception_does_not_stop_informer(
    server: FakeAPIServer, running: Any
) -> None:
    informer, mirror, _ = running

    def boom(obj: Obj) -> None:
        raise RuntimeError("handler bug")

    informer.add_handler(on_add=boom)
    server.put(pod("a", "x"))
    await await_until(lambda: converged(server, informer, mirror, None))


async def test_resync_redelivers(server: FakeAPIServer, client: Client) -> None:
    server.put(pod("a", "p1"))
    informer = Informer(client, PODS, resync=0.01)
    updates: list[str] = []
    informer.add_handler(on_update=lambda old, new: updates.append(key_of(new)))
    task = asyncio.create_task(informer.run())
    await await_until(lambda: len(updates) >= 2)
    assert set(updates) == {"a/p1"}
    informer.stop()
    await asyncio.wait_for(task, 5)


async def test_stop_before_sync(client: Client) -> None:
    from inplace.client import ClusterConfig

    async with Client(ClusterConfig(server="http://127.0.0.1:9")) as dead:
        informer = Informer(dead, PODS, backoff_initial=0.01)
        task = asyncio.create_task(informer.run())
        await asyncio.sleep(0.05)
        informer.stop()
        await asyncio.wait_for(task, 5)
        with pytest.raises(RuntimeError, match="before it synced"):
            await informer.wait_synced()


def test_keys() -> None:
    assert key_of(pod("ns", "p")) == "ns/p"
    assert key_of({"metadata": {"name": "node1"}}) == "node1"
    assert split_key("ns/p") == ("ns", "p")
    assert split_key("node1") == (None, "node1")
