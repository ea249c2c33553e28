"""What the node agent does to the cluster, behind one small interface.

:class:`NodeActions` is the seam tests plug into (a fake applies status patches to pods it
keeps and records deletions and events, so the agent's logic runs without a server);
:class:`ClientActions` is the real one over :class:`~inplace.client.Client`. The Node and
its Lease are written by :class:`~inplace.node.registration.NodeRegistration`, not here.
Events go through the shared recorder (:class:`inplace.client.events.EventRecorder`, as
kubelet's: correlated, counted, spam-filtered, posted in the background), so a slow API server
never stalls a pod worker.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from inplace.api.conditions import KUBELET
from inplace.client import PODS, APIConflictError, APINotFoundError, Client
from inplace.client.events import EventRecorder, ObjectRef
from inplace.client.status import ComputeStatus, write_pod_status

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
    async def write_pod_status(
        self, pod: PodRef, current: Mapping[str, Any], compute: ComputeStatus
    ) -> dict[str, Any] | None:
        """Write ``compute(current)`` to ``pods/NAME/status`` under the status-writers rule
        (:func:`inplace.client.status.write_status`: re-read and recompute on a conflict);
        the pod as written, or None when it is gone."""
        ...

    async def confirm_deletion(self, pod: PodRef) -> None:
        """Delete the pod for good (grace 0, precondition on its uid) once its containers
        are stopped, as kubelet does; a pod already gone or replaced is no error."""
        ...

    def event(self, ref: ObjectRef, type_: str, reason: str, message: str) -> None:
        """Record a core/v1 Event about the pod or one of its containers (never blocks)."""
        ...


class ClientActions:
    """:class:`NodeActions` over the API client."""

    def __init__(self, client: Client, node_name: str) -> None:
        self.client = client
        self.node_name = node_name
        self.recorder = EventRecorder(client, component=KUBELET, host=node_name, workers=1)

    async def write_pod_status(
        self, pod: PodRef, current: Mapping[str, Any], compute: ComputeStatus
    ) -> dict[str, Any] | None:
        return await write_pod_status(self.client, pod.namespace, pod.name, current, compute)

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

    def event(self, ref: ObjectRef, type_: str, reason: str, message: str) -> None:
        self.recorder.event(ref, type_, reason, message)

    def start(self) -> None:
        self.recorder.start()

    async def close(self) -> None:
        """Stop posting events (those still queued are dropped, as at a kubelet's exit)."""
        await self.recorder.stop()
