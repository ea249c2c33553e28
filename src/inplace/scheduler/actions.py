"""What the scheduler does to the cluster, behind one small interface.

:class:`ClusterActions` is the seam tests plug into (a fake records calls and can answer an
eviction with a 429); :class:`ClientActions` is the real one over
:class:`~inplace.client.Client`. Events are fire-and-forget, as upstream's broadcaster:
queued, posted by a background task, and dropped (counted) when the queue is full, so a slow
API server never stalls a scheduling cycle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from inplace.api.conditions import SCHEDULER, Decision, StatusPatch, status_update
from inplace.api.timestamps import rfc3339
from inplace.client import EVENTS, PODS, APIError, APINotFoundError, Client
from inplace.client.status import write_pod_status

from .framework import PodInfo

__all__ = ["ClientActions", "ClusterActions", "EventRecorder", "pod_event"]

log = logging.getLogger(__name__)

COMPONENT = "default-scheduler"


class ClusterActions(Protocol):
    async def evict(self, pod: PodInfo) -> None:
        """POST the pod's eviction; raises (e.g. APITooManyRequestsError for a PDB)."""
        ...

    async def delete(self, pod: PodInfo) -> None: ...

    async def write_status(
        self,
        pod: PodInfo,
        *,
        fields: Mapping[str, Any] | None = None,
        conditions: Mapping[str, Decision] | None = None,
    ) -> None:
        """Write status ``fields`` and condition decisions of the scheduler to the pod,
        under the status-writers rule (:mod:`inplace.api.conditions`)."""
        ...

    def event(self, pod: PodInfo, type_: str, reason: str, message: str) -> None:
        """Record a core/v1 Event about the pod (never blocks)."""
        ...


def pod_event(pod: PodInfo, type_: str, reason: str, message: str) -> dict[str, Any]:
    """A core/v1 Event as upstream's recorder writes it."""
    now = rfc3339()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{pod.name}.{time.time_ns():x}",
            "namespace": pod.namespace or "default",
        },
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": pod.namespace,
            "name": pod.name,
            "uid": pod.uid,
        },
        "reason": reason,
        "message": message,
        "type": type_,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


class EventRecorder:
    """Posts events from a bounded queue in the background."""

    def __init__(self, client: Client, *, limit: int = 1000, workers: int = 2) -> None:
        self.client = client
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(limit)
        self._workers = workers
        self._tasks: list[asyncio.Task[None]] = []
        self.dropped = 0
        self.posted = 0

    def record(self, event: dict[str, Any]) -> None:
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._run(), name=f"events-{i}") for i in range(self._workers)
            ]

    async def flush(self) -> None:
        await self._queue.join()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self.client.create(EVENTS, event)
                self.posted += 1
            except (APIError, ConnectionError) as exc:
                log.debug("event %s dropped: %s", event.get("reason"), exc)
            finally:
                self._queue.task_done()


class ClientActions:
    """:class:`ClusterActions` over the API client."""

    def __init__(self, client: Client, recorder: EventRecorder) -> None:
        self.client = client
        self.recorder = recorder

    async def evict(self, pod: PodInfo) -> None:
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod.name, "namespace": pod.namespace},
        }
        if pod.uid:
            body["deleteOptions"] = {"preconditions": {"uid": pod.uid}}
        await self.client.create(PODS, body, namespace=pod.namespace, subresource="eviction")

    async def delete(self, pod: PodInfo) -> None:
        with contextlib.suppress(APINotFoundError):
            await self.client.delete(
                PODS,
                pod.name,
                namespace=pod.namespace,
                preconditions={"uid": pod.uid} if pod.uid else None,
            )

    async def write_status(
        self,
        pod: PodInfo,
        *,
        fields: Mapping[str, Any] | None = None,
        conditions: Mapping[str, Decision] | None = None,
    ) -> None:
        def compute(current: Mapping[str, Any]) -> StatusPatch | None:
            return status_update(
                current, writer=SCHEDULER, now=rfc3339(), fields=fields, decisions=conditions
            )

        if await write_pod_status(self.client, pod.namespace, pod.name, pod.obj, compute) is None:
            raise APINotFoundError(404, "NotFound", f'pods "{pod.name}" not found')

    def event(self, pod: PodInfo, type_: str, reason: str, message: str) -> None:
        self.recorder.record(pod_event(pod, type_, reason, message))
