"""The objects a cluster has before anyone creates anything, kept there while it runs.

Upstream's API server and controller manager keep a few objects in place: the ``kubernetes``
Service in ``default`` (the first address of the service range) with Endpoints and an
EndpointSlice pointing at the API server itself (its bootstrap controller and endpoint
reconciler), and a ``default`` ServiceAccount in every namespace (the serviceaccounts
controller). This module does the same: on start, and again whenever one of them is deleted.

Like k3s, which applies its ``local-storage`` manifest at every start, the API server also
creates the default StorageClass ``local-path`` (provisioner ``rancher.io/local-path``,
``WaitForFirstConsumer``, ``Delete``) on start when no class of that name exists. It is not
put back while running: deleting it, or taking its default annotation away, is the user's
choice until the next start, where only a missing class is created again.

The Endpoints and EndpointSlice carry the API server's own address, ``127.0.0.1`` unless it
listens elsewhere; validation refuses a loopback endpoint from a client, so the API server
writes these two to the store itself, as upstream's reconciler is the API server too.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, Final

from inplace.api.storage import (
    DEFAULT_CLASS_ANNOTATION,
    LOCAL_PATH_CLASS,
    LOCAL_PATH_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
)
from inplace.api.timestamps import rfc3339
from inplace.apiserver.cache import CachedEvent
from inplace.apiserver.errors import StatusError
from inplace.apiserver.rest import REST
from inplace.registry.lifecycle import DEFAULT_SERVICE_ACCOUNT
from inplace.registry.services import KUBERNETES_SERVICE_IP
from inplace.store import ConflictError, KeyExistsError

__all__ = ["KUBERNETES", "ClusterObjects"]

log = logging.getLogger(__name__)

#: The name of the Service (and its Endpoints and EndpointSlice) that stands for the API.
KUBERNETES: Final = "kubernetes"
_DEFAULT_NAMESPACE: Final = "default"
_SERVICE_LABELS: Final = {"component": "apiserver", "provider": "kubernetes"}

Spawn = Callable[[Coroutine[Any, Any, None], str], None]


class ClusterObjects:
    """Creates and restores the objects above for one API server listening on `host:port`."""

    def __init__(self, rest: REST, host: str, port: int) -> None:
        self.rest = rest
        self.host = host if host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        self.port = port

    async def ensure(self) -> None:
        """Everything, now (called once the API server listens)."""
        await self.ensure_kubernetes_service()
        await self.ensure_endpoints()
        await self.ensure_default_storage_class()
        namespaces = self.rest.registry.by_kind("", "Namespace")
        if namespaces is None:
            return
        await self.rest.cache.sync()
        for entry in list(self.rest.cache.entries(namespaces, None)):
            meta = entry.value.get("metadata", {})
            if not meta.get("deletionTimestamp"):
                await self.rest.ensure_default_service_account(meta["name"])

    def on_change(self, event: CachedEvent, spawn: Spawn) -> None:
        """Put back what was deleted (a watch-cache listener: it may only schedule work)."""
        if event.type != "DELETED":
            return
        kind = event.kind.kind
        name = event.value.get("metadata", {}).get("name")
        if kind == "ServiceAccount" and name == DEFAULT_SERVICE_ACCOUNT and event.namespace:
            spawn(self.rest.ensure_default_service_account(event.namespace), "default-sa")
        elif event.namespace == _DEFAULT_NAMESPACE and name == KUBERNETES:
            if kind == "Service":
                spawn(self.ensure_kubernetes_service(), "kubernetes-service")
            elif kind in ("Endpoints", "EndpointSlice"):
                spawn(self.ensure_endpoints(), "kubernetes-endpoints")

    async def ensure_kubernetes_service(self) -> None:
        """The ``kubernetes`` Service: port 443 (``https``) to the API server's port."""
        services = self.rest.registry.by_kind("", "Service")
        if services is None:
            return  # a registry without Services (tests' own kinds)
        service = {
            "metadata": {"name": KUBERNETES, "labels": dict(_SERVICE_LABELS)},
            "spec": {
                "clusterIP": KUBERNETES_SERVICE_IP,
                "ports": [
                    {"name": "https", "port": 443, "protocol": "TCP", "targetPort": self.port}
                ],
                "sessionAffinity": "None",
                "type": "ClusterIP",
            },
        }
        try:
            await self.rest.create(services, _DEFAULT_NAMESPACE, service)
        except StatusError as exc:
            if exc.code != 409:
                log.warning("could not create the kubernetes Service: %s", exc.message)

    async def ensure_default_storage_class(self) -> None:
        """The ``local-path`` StorageClass, as k3s ships it, unless one of that name exists."""
        classes = self.rest.registry.by_kind("storage.k8s.io", "StorageClass")
        if classes is None:
            return
        storage_class = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": LOCAL_PATH_CLASS,
                "annotations": {DEFAULT_CLASS_ANNOTATION: "true"},
            },
            "provisioner": LOCAL_PATH_PROVISIONER,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": WAIT_FOR_FIRST_CONSUMER,
        }
        try:
            await self.rest.create(classes, None, storage_class)
        except StatusError as exc:
            if exc.code != 409:
                log.warning("could not create the local-path StorageClass: %s", exc.message)

    async def ensure_endpoints(self) -> None:
        """The ``kubernetes`` Endpoints and EndpointSlice: the API server's address and port,
        rewritten when they changed (another ``--port``)."""
        ports = [{"name": "https", "port": self.port, "protocol": "TCP"}]
        await self._put(
            "",
            "Endpoints",
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {
                    "name": KUBERNETES,
                    "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
                },
                "subsets": [{"addresses": [{"ip": self.host}], "ports": ports}],
            },
        )
        await self._put(
            "discovery.k8s.io",
            "EndpointSlice",
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": KUBERNETES,
                    "labels": {"kubernetes.io/service-name": KUBERNETES},
                },
                "addressType": "IPv6" if ":" in self.host else "IPv4",
                "endpoints": [{"addresses": [self.host], "conditions": {"ready": True}}],
                "ports": ports,
            },
        )

    async def _put(self, group: str, kind_name: str, obj: dict[str, Any]) -> None:
        """Create `obj` in ``default``, or bring the stored one's content in line with it."""
        kind = self.rest.registry.by_kind(group, kind_name)
        if kind is None:
            return
        key = kind.storage_key(KUBERNETES, _DEFAULT_NAMESPACE)
        obj["metadata"]["namespace"] = _DEFAULT_NAMESPACE
        await self.rest.cache.sync()
        entry = self.rest.cache.get(kind, key, _DEFAULT_NAMESPACE)
        try:
            if entry is None:
                obj["metadata"]["uid"] = str(uuid.uuid4())
                obj["metadata"]["creationTimestamp"] = rfc3339()
                await self.rest.store.create(key, obj)
                return
            stored = entry.value
            content = {k: v for k, v in obj.items() if k != "metadata"}
            if all(stored.get(k) == v for k, v in content.items()):
                return
            await self.rest.store.update(
                key, {**stored, **content}, expected_revision=entry.revision
            )
        except (KeyExistsError, ConflictError):
            pass  # someone else wrote it meanwhile: theirs stands until the next change
