"""Events about the objects controllers manage, posted as upstream's recorder posts them.

Fire-and-forget, as upstream's broadcaster: :meth:`EventRecorder.event` queues and returns,
and a background task posts. Repeats of the same (object, type, reason, message) within ten
minutes bump the first event's ``count`` and ``lastTimestamp`` instead of creating another
object (upstream's ``EventCorrelator``), so a controller retrying a failing create does not
flood the namespace. When the queue is full an event is dropped and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from inplace.api.timestamps import rfc3339
from inplace.client import EVENTS, APIError, APINotFoundError, Client

__all__ = ["EventRecorder", "involved_object"]

log = logging.getLogger(__name__)

_CORRELATION_WINDOW = 600.0


def involved_object(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An ``ObjectReference`` to ``obj`` (a full API object with apiVersion and kind)."""
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion") or "",
        "kind": obj.get("kind") or "",
        "name": meta.get("name") or "",
        "uid": meta.get("uid") or "",
        "resourceVersion": meta.get("resourceVersion") or "",
    }
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    return ref


class EventRecorder:
    """Posts core/v1 Events for one component (e.g. ``deployment-controller``)."""

    def __init__(self, client: Client, component: str, *, limit: int = 2000) -> None:
        self.client = client
        self.component = component
        self._queue: asyncio.Queue[tuple[dict[str, Any], str, str, str]] = asyncio.Queue(limit)
        self._task: asyncio.Task[None] | None = None
        self._seen: dict[tuple[str, str, str, str], tuple[str, str, int, float]] = {}
        self.dropped = 0
        self.posted = 0

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Record an event about ``obj`` (never blocks)."""
        try:
            self._queue.put_nowait((involved_object(obj), type_, reason, message))
        except asyncio.QueueFull:
            self.dropped += 1

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"events-{self.component}")

    async def flush(self) -> None:
        await self._queue.join()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            ref, type_, reason, message = await self._queue.get()
            try:
                await self._post(ref, type_, reason, message)
            except (APIError, ConnectionError) as exc:
                log.debug("event %s about %s dropped: %s", reason, ref.get("name"), exc)
            finally:
                self._queue.task_done()

    async def _post(self, ref: dict[str, Any], type_: str, reason: str, message: str) -> None:
        namespace = ref.get("namespace") or "default"
        key = (ref.get("uid") or ref["name"], type_, reason, message)
        now = time.monotonic()
        seen = self._seen.get(key)
        if seen is not None and now - seen[3] < _CORRELATION_WINDOW:
            name, ns, count, _ = seen
            try:
                await self.client.patch(
                    EVENTS,
                    name,
                    {"count": count + 1, "lastTimestamp": rfc3339()},
                    namespace=ns,
                )
            except APINotFoundError:
                pass
            else:
                self._seen[key] = (name, ns, count + 1, now)
                self.posted += 1
                return
        stamp = rfc3339()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{ref['name']}.{time.time_ns():x}", "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": self.component,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        created = await self.client.create(EVENTS, body, namespace=namespace)
        self.posted += 1
        if len(self._seen) > 4096:
            cutoff = now - _CORRELATION_WINDOW
            self._seen = {k: v for k, v in self._seen.items() if v[3] >= cutoff}
        self._seen[key] = (created["metadata"]["name"], namespace, 1, now)
