"""WATCH: a chunked stream of newline-delimited JSON events, with bookmarks.

An event is written as the stored bytes wrapped in `{"type":...,"object":...}`, so one
serialization serves every watcher; events that arrived together go out in one write. A
watch from a revision the cache no longer holds gets one ERROR event with a 410 Status, as
upstream's, and the client relists. Bookmarks (`allowWatchBookmarks`) carry the current
revision every `BOOKMARK_EVERY` seconds of silence and mark the end of `sendInitialEvents`.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import orjson
from aiohttp import web

from inplace.apiserver.cache import CachedEvent, TooOldError, WatchCache
from inplace.apiserver.crds.versions import convert_raw
from inplace.apiserver.errors import gone
from inplace.apiserver.httputil import INFO, int_param, parse_rv, wants_table
from inplace.apiserver.lists import selector_filter, table
from inplace.apiserver.metrics import APIServerMetrics
from inplace.apiserver.routing import RequestInfo
from inplace.registry.kinds import Kind

#: Seconds without events after which a watch that allows bookmarks gets one.
BOOKMARK_EVERY = 10.0


def bookmark(kind: Kind, revision: int, *, initial_end: bool = False) -> bytes:
    """A BOOKMARK event at `revision`; `initial_end` marks the end of the initial events."""
    meta: dict[str, Any] = {"resourceVersion": str(revision)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    event = {
        "type": "BOOKMARK",
        "object": {"kind": kind.kind, "apiVersion": kind.api_version, "metadata": meta},
    }
    return orjson.dumps(event) + b"\n"


def encode_event(event: CachedEvent, as_table: bool, first: bool, request: web.Request) -> bytes:
    """One event line; as a Table, only the first carries the column definitions."""
    if as_table:
        rendered = table(
            event.kind, [event.value], request, {"resourceVersion": str(event.revision)}
        )
        if not first:
            rendered["columnDefinitions"] = []
        return orjson.dumps({"type": event.type, "object": rendered}) + b"\n"
    raw = convert_raw(request[INFO].kind, event.raw) if INFO in request else event.raw
    return b'{"type":"' + event.type.encode() + b'","object":' + raw + b"}\n"


class Watches:
    """Serves the watch verb of every stored kind from the watch cache."""

    def __init__(self, cache: WatchCache, metrics: APIServerMetrics) -> None:
        self.cache = cache
        self.metrics = metrics

    async def serve(
        self, request: web.Request, info: RequestInfo, query: dict[str, str]
    ) -> web.StreamResponse:
        kind = info.kind
        matches = selector_filter(kind, query)
        if info.name is not None:
            name = info.name
            inner = matches

            def matches(obj: dict[str, Any]) -> bool:
                return obj.get("metadata", {}).get("name") == name and (inner is None or inner(obj))

        rv = query.get("resourceVersion")
        initial = query.get("sendInitialEvents") == "true"
        from_revision = None if (not rv or rv == "0" or initial) else parse_rv(rv)
        if from_revision is None and not initial:
            await self.cache.sync()
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        if kind.crd is not None and kind.crd.deprecation_warning:
            response.headers.add(
                "Warning", f"299 - {orjson.dumps(kind.crd.deprecation_warning).decode()}"
            )
        try:
            watcher, backlog = self.cache.watch(
                kind, info.namespace, matches, from_revision=from_revision
            )
            snapshot = self.cache.revision  # what the backlog covers; later events queue
        except TooOldError:
            await response.prepare(request)
            expired = gone(f"too old resource version: {rv} ({self.cache.revision})").status()
            await response.write(orjson.dumps({"type": "ERROR", "object": expired}) + b"\n")
            return response
        self.metrics.watchers.labels(kind.group, kind.version, kind.kind).inc()
        as_table = wants_table(request)
        bookmarks = query.get("allowWatchBookmarks") == "true"
        timeout = int_param(query, "timeoutSeconds")
        deadline = time.monotonic() + (
            timeout if timeout is not None else random.uniform(1800, 3600)
        )
        try:
            await response.prepare(request)
            first = True
            for past in backlog:
                await response.write(encode_event(past, as_table, first, request))
                first = False
            if initial and bookmarks:
                await response.write(bookmark(kind, snapshot, initial_end=True))
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    event = await asyncio.wait_for(
                        watcher.queue.get(), min(remaining, BOOKMARK_EVERY)
                    )
                except TimeoutError:
                    # A bookmark says "everything up to here was sent": only true while this
                    # watcher's queue is empty (events may have arrived since the timeout).
                    if bookmarks and time.monotonic() < deadline and watcher.queue.empty():
                        await response.write(bookmark(kind, self.cache.revision))
                    continue
                if event is None:
                    break
                chunk = [encode_event(event, as_table, first, request)]
                first = False
                while not watcher.queue.empty():
                    more = watcher.queue.get_nowait()
                    if more is None:
                        break
                    chunk.append(encode_event(more, as_table, False, request))
                await response.write(b"".join(chunk))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.cache.unwatch(watcher)
            self.metrics.watchers.labels(kind.group, kind.version, kind.kind).dec()
        return response
