"""Where a node's volumes read the objects they project, and the claims they mount.

:class:`WatchedObjects` keeps one watch per referenced ConfigMap or Secret
(``fieldSelector=metadata.name=…`` in its namespace, as kubelet's ``Watch`` change-detection
strategy does, which the Node authorizer permits for a node's own pods), and calls
``on_change(namespace)`` whenever one changes, so the pods of that namespace get their
volumes rewritten at once instead of at the next periodic sync.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from inplace.client import (
    CONFIGMAPS,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    SECRETS,
    Client,
    Informer,
)
from inplace.client.errors import APIError, APINotFoundError

from .manager import VolumeError

__all__ = ["APIClaims", "WatchedObjects"]

_RESOURCES = {"configmaps": CONFIGMAPS, "secrets": SECRETS}


class WatchedObjects:
    """:class:`~inplace.node.volumes.payload.ObjectReader` over per-object watches."""

    def __init__(self, client: Client, on_change: Callable[[str], None]) -> None:
        self.client = client
        self.on_change = on_change
        self._watches: dict[tuple[str, str, str], tuple[Informer, asyncio.Task[None]]] = {}

    async def get(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        key = (resource, namespace, name)
        watch = self._watches.get(key)
        if watch is None:
            informer: Informer = Informer(
                self.client,
                _RESOURCES[resource],
                namespace=namespace,
                field_selector=f"metadata.name={name}",
            )
            informer.add_handler(
                lambda _obj: self.on_change(namespace),
                lambda _old, _new: self.on_change(namespace),
                lambda _obj: self.on_change(namespace),
            )
            task = asyncio.create_task(informer.run(), name=f"watch-{resource}-{namespace}-{name}")
            watch = self._watches[key] = (informer, task)
        try:
            async with asyncio.timeout(10):
                await watch[0].wait_synced()
        except TimeoutError:
            raise VolumeError(name, f"timed out reading {resource} {namespace}/{name}") from None
        obj: dict[str, Any] | None = watch[0].get(f"{namespace}/{name}")
        return obj

    def keep_only(self, namespaces: set[str]) -> None:
        """Stop the watches of namespaces no pod on the node uses any more."""
        for key in [k for k in self._watches if k[1] not in namespaces]:
            informer, task = self._watches.pop(key)
            informer.stop()
            task.cancel()

    async def close(self) -> None:
        for informer, task in self._watches.values():
            informer.stop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._watches.clear()


class APIClaims:
    """The host path of a claim's bound PersistentVolume, read from the API."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def host_path(self, namespace: str, claim: str) -> str:
        try:
            pvc = await self.client.get(PERSISTENTVOLUMECLAIMS, claim, namespace=namespace)
        except APINotFoundError:
            raise VolumeError(claim, f'persistentvolumeclaim "{claim}" not found') from None
        except APIError as exc:
            raise VolumeError(claim, str(exc)) from None
        volume = (pvc.get("spec") or {}).get("volumeName")
        if (pvc.get("status") or {}).get("phase") != "Bound" or not volume:
            raise VolumeError(claim, f'persistentvolumeclaim "{claim}" is not bound')
        try:
            pv = await self.client.get(PERSISTENTVOLUMES, volume)
        except APIError as exc:
            raise VolumeError(claim, f'persistentvolume "{volume}": {exc}') from None
        spec = pv.get("spec") or {}
        path = (spec.get("hostPath") or {}).get("path") or (spec.get("local") or {}).get("path")
        if not path:
            raise VolumeError(claim, f'persistentvolume "{volume}" has no local path')
        return str(path)
