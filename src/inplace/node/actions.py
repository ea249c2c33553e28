"""What the node agent does to the cluster, behind one small interface.

:class:`NodeActions` is the seam tests plug into (a fake applies status patches to pods it
keeps and records deletions and events, so the agent's logic runs without a server);
:class:`ClientActions` is the real one over :class:`~inplace.client.Client`. The Node and
its Lease are written by :class:`~inplace.node.registration.NodeRegistration`, not here.
Events are fire and forget: a slow API server never stalls a pod worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from inplace.api.timestamps import rfc3339
from inplace.client import EVENTS, PODS, APIConflictError, APIError, APINotFoundError, Client

__all__ = ["ClientActions", "NodeActions", "PodRef"]

log = logging.getLogger(__name__)


class PodRef(Protocol):
    """The pod an action is about (a :class:`~inplace.node.worker.PodWorker` is one)."""

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def uid(self) -> str: ...


class NodeActions(Protocol):
    async def patch_pod_status(
        self, pod: PodRef, status: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Strategic-merge-patch ``pods/NAME/status`` with ``{"status": status}``; the pod
        as written, or None when it is gone."""
        ...

    async def confirm_deletion(self, pod: PodRef) -> None:
        """Delete the pod for good (grace 0, precondition on its uid) once its containers
        are stopped, as kubelet does; a pod already gone or replaced is no error."""
        ...

    def event(self, pod: PodRef, type_: str, reason: str, message: str) -> None:
        """Record a core/v1 Event about the pod (never blocks)."""
        ...


class ClientActions:
    """:class:`NodeActions` over the API client."""

    def __init__(self, client: Client, node_name: str) -> None:
        self.client = client
        self.node_name = node_name
        self._background: set[asyncio.Task[None]] = set()

    async def patch_pod_status(
        self, pod: PodRef, status: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        try:
            return await self.client.patch(
                PODS,
                pod.name,
                {"status": dict(status)},
                namespace=pod.namespace,
                subresource="status",
                patch_type="strategic",
            )
        except APINotFoundError:
            return None

    async def confirm_deletion(self, pod: PodRef) -> None:
        try:
            await self.client.delete(
                PODS,
                pod.name,
                namespace=pod.namespace,
                grace_period_seconds=0,
                preconditions={"uid": pod.uid},
            )
        except (APINotFoundError, APIConflictError):
            pass

    def event(self, pod: PodRef, type_: str, reason: str, message: str) -> None:
        now = rfc3339()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{pod.name}.{uuid.uuid4().hex[:16]}",
                "namespace": pod.namespace,
            },
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod.name,
                "namespace": pod.namespace,
                "uid": pod.uid,
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": "kubelet", "host": self.node_name},
            "reportingComponent": "kubelet",
            "reportingInstance": self.node_name,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "eventTime": None,
            "count": 1,
        }

        async def post() -> None:
            try:
                await self.client.create(EVENTS, body, namespace=pod.namespace)
            except APIError as exc:
                log.warning("event %s for %s/%s: %s", reason, pod.namespace, pod.name, exc)

        task = asyncio.ensure_future(post())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        """Cancel the events still being posted."""
        for task in list(self._background):
            task.cancel()
        for task in list(self._background):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
