"""Events about the objects controllers manage, through the one recorder every component uses
(:class:`inplace.client.events.EventRecorder`: upstream's correlator, aggregation and spam
filter, posted in the background). Controllers hold API objects, not references: this is the
adapter that turns one into the Event's ``involvedObject``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inplace.client import Client
from inplace.client.events import EventRecorder, ObjectRef

__all__ = ["ControllerEvents", "object_ref"]


def object_ref(obj: Mapping[str, Any]) -> ObjectRef:
    """The reference to ``obj`` (a full API object: apiVersion and kind set)."""
    meta = obj.get("metadata") or {}
    return ObjectRef(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        kind=str(obj.get("kind") or ""),
        api_version=str(obj.get("apiVersion") or ""),
    )


class ControllerEvents:
    """Records events about API objects for one controller (``source.component``)."""

    def __init__(self, client: Client, component: str) -> None:
        self.component = component
        self.recorder = EventRecorder(client, component=component)

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Record an event about ``obj`` (never blocks)."""
        self.recorder.event(object_ref(obj), type_, reason, message)

    def start(self) -> None:
        self.recorder.start()

    async def flush(self) -> None:
        await self.recorder.flush()

    async def stop(self) -> None:
        await self.recorder.stop()
