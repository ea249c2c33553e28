"""What the scheduler does to the cluster, behind one small interface.

:class:`ClusterActions` is the seam tests plug into (a fake records calls and can answer an
eviction with a 429); :class:`ClientActions` is the real one over
:class:`~inplace.client.Client`. Events go through the shared recorder
(:class:`inplace.client.events.EventRecorder`): correlated as upstream's, queued, posted in
the background, so a slow API server never stalls a scheduling cycle.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from inplace.api.conditions import SCHEDULER, Decision, StatusPatch, status_update
from inplace.api.timestamps import rfc3339
from inplace.client import PODS, APINotFoundError, Client
from inplace.client.events import EventRecorder, ObjectRef
from inplace.client.status import write_pod_status

from .framework import PodInfo

__all__ = ["COMPONENT", "ClientActions", "ClusterActions"]

log = logging.getLogger(__name__)

COMPONENT = SCHEDULER


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
        self.recorder.event(
            ObjectRef(pod.namespace or "default", pod.name, pod.uid), type_, reason, message
        )
