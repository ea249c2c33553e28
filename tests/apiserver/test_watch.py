"""WATCH: streams from a revision, selector moves, and 410 for a revision the cache lost."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp.test_utils import make_mocked_request

from inplace.apiserver.auth import MASTERS_GROUP, TokenFile
from inplace.apiserver.cache import CachedEvent
from inplace.apiserver.server import APIServer, APIServerConfig
from inplace.apiserver.watch import bookmark, encode_event
from inplace.registry.kinds import REGISTRY
from tests.apiserver.support import PODS, make_api, pod
from tests.conftest import InProcessServer

POD_KIND = REGISTRY.by_kind("", "Pod")


def test_bookmarks_carry_the_revision_and_mark_the_end_of_initial_events() -> None:
    assert POD_KIND is not None
    plain = orjson.loads(bookmark(POD_KIND, 42))
    assert plain == {
        "type": "BOOKMARK",
        "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "42"}},
    }
    end = orjson.loads(bookmark(POD_KIND, 43, initial_end=True))
    assert end["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_an_event_wraps_the_stored_bytes_unparsed() -> None:
    assert POD_KIND is not None
    raw = b'{"kind":"Pod","metadata":{"name":"p"}}'
    event = CachedEvent(
        type="MODIFIED",
        kind=POD_KIND,
        key="k",
        namespace="default",
        value={},
        raw=raw,
        revision=5,
        prev=None,
    )
    line = encode_event(event, False, True, make_mocked_request("GET", "/"))
    assert line == b'{"type":"MODIFIED","object":' + raw + b"}\n"


async def test_watch_from_revision_and_filtered_moves(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        _, first = await api.call("POST", PODS, pod("w1"))
        rv = first["metadata"]["resourceVersion"]
        events: list[tuple[str, str]] = []

        async def follow() -> None:
            async with session.get(
                apiserver.url + f"{PODS}?watch=1&resourceVersion={rv}&labelSelector=app%3Dt",
                headers=apiserver.headers(),
            ) as response:
                async for line in response.content:
                    event = json.loads(line)
                    events.append((event["type"], event["object"]["metadata"]["name"]))
                    if len(events) == 3:
                        return

        task = asyncio.create_task(follow())
        await asyncio.sleep(0.1)
        await api.call("POST", PODS, pod("w2"))
        await api.call(
            "PATCH",
            f"{PODS}/w2",
            {"metadata": {"labels": {"app": "other"}}},
            "application/merge-patch+json",
        )
        await api.call("DELETE", f"{PODS}/w1")
        await asyncio.wait_for(task, 10)
        assert events == [("ADDED", "w2"), ("DELETED", "w2"), ("DELETED", "w1")]


async def test_watch_from_a_revision_older_than_the_cache_is_410(tmp_path: Path) -> None:
    """After a restart the cache's history starts at the snapshot: older watches must relist."""
    tokens = TokenFile(tmp_path / "tokens.csv")
    admin = tokens.token_for("admin", (MASTERS_GROUP,))
    config = APIServerConfig(data_dir=tmp_path / "apiserver", port=0, tokens=tokens)
    first = APIServer(config)
    await first.start()
    await first.stop()
    second = APIServer(config)
    await second.start()
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                f"http://127.0.0.1:{second.port}{PODS}?watch=1&resourceVersion=1",
                headers={"Authorization": f"Bearer {admin}"},
            ) as response,
        ):
            line = await response.content.readline()
    finally:
        await second.stop()
    event = json.loads(line)
    assert event["type"] == "ERROR" and event["object"]["code"] == 410


async def test_a_bookmark_never_gets_ahead_of_a_queued_event(
    apiserver: InProcessServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the chaos checker (a watch saw resourceVersion 427 after a bookmark at 429):
    when the bookmark timer fired just as an event was queued, the bookmark carried the
    cache's revision ahead of the event still to be sent, so a client resuming from it
    would have missed the event. Here the timer fires exactly then, every time."""
    from inplace.apiserver import watch as watch_module

    real_wait_for = asyncio.wait_for
    fired: list[bool] = []

    async def timer_fires_as_an_event_arrives(aw: Any, timeout: float | None) -> Any:
        if not fired:
            fired.append(True)
            await asyncio.sleep(0.5)  # the pod below is created meanwhile: it is queued
            aw.close()
            raise TimeoutError
        return await real_wait_for(aw, timeout)

    monkeypatch.setattr(watch_module.asyncio, "wait_for", timer_fires_as_an_event_arrives)
    async with aiohttp.ClientSession(headers=apiserver.headers()) as session:
        async with session.get(apiserver.url + PODS) as response:
            start = (await response.json())["metadata"]["resourceVersion"]
        url = f"{apiserver.url}{PODS}?watch=true&allowWatchBookmarks=true&resourceVersion={start}"
        async with session.get(url) as stream:
            await asyncio.sleep(0.1)
            async with session.post(apiserver.url + PODS, json=pod("queued")) as created:
                assert created.status == 201
            seen: list[tuple[str, int]] = []
            while not any(kind == "ADDED" for kind, _ in seen):
                line = await asyncio.wait_for(stream.content.readline(), 10)
                event = json.loads(line)
                seen.append((event["type"], int(event["object"]["metadata"]["resourceVersion"])))
    added = next(rv for kind, rv in seen if kind == "ADDED")
    assert all(rv < added for kind, rv in seen if kind == "BOOKMARK"), seen
