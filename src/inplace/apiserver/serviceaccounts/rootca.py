"""The ``kube-root-ca.crt`` ConfigMap in every namespace (upstream's root-ca-cert-publisher
controller, run here inside the API server, which holds the CA).

Every namespace gets a ConfigMap ``kube-root-ca.crt`` whose ``ca.crt`` is the cluster CA, so a
pod's ``kube-api-access-*`` volume can verify the API server; a new namespace gets it at once,
and one that is deleted or changed is put back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any, Final

from inplace.api.token_volume import ROOT_CA_CONFIG_MAP
from inplace.apiserver.cache import CachedEvent
from inplace.apiserver.errors import StatusError
from inplace.apiserver.rest import REST

__all__ = ["RootCAPublisher"]

log = logging.getLogger(__name__)

_DESCRIPTION: Final = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)

Spawn = Callable[[Coroutine[Any, Any, None], str], None]


class RootCAPublisher:
    def __init__(self, rest: REST, ca_pem: str) -> None:
        self.rest = rest
        self.ca_pem = ca_pem
        self._config_maps = rest.registry.by_kind("", "ConfigMap")
        self._namespaces = rest.registry.by_kind("", "Namespace")

    def _wanted(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": ROOT_CA_CONFIG_MAP,
                "annotations": {"kubernetes.io/description": _DESCRIPTION},
            },
            "data": {"ca.crt": self.ca_pem},
        }

    async def ensure(self, namespace: str) -> None:
        """Create or repair the ConfigMap of `namespace` (not of one being deleted)."""
        kind, namespaces = self._config_maps, self._namespaces
        if kind is None or namespaces is None:
            return
        await self.rest.cache.sync()
        ns = self.rest.cache.get(namespaces, namespaces.storage_key(namespace), None)
        if ns is None or ns.value.get("metadata", {}).get("deletionTimestamp"):
            return
        entry = self.rest.cache.get(
            kind, kind.storage_key(ROOT_CA_CONFIG_MAP, namespace), namespace
        )
        try:
            if entry is None:
                await self.rest.create(kind, namespace, self._wanted())
            elif (entry.value.get("data") or {}).get("ca.crt") != self.ca_pem:
                fixed = {**entry.value, "data": {"ca.crt": self.ca_pem}}
                await self.rest.update(kind, namespace, ROOT_CA_CONFIG_MAP, fixed)
        except StatusError as exc:
            if exc.code not in (403, 404, 409):  # a namespace going away, or a racing write
                log.warning("publishing %s in %s: %s", ROOT_CA_CONFIG_MAP, namespace, exc)

    async def ensure_all(self) -> None:
        if self._namespaces is None:
            return
        await self.rest.cache.sync()
        for entry in list(self.rest.cache.entries(self._namespaces, None)):
            await self.ensure(entry.value["metadata"]["name"])

    def on_change(self, event: CachedEvent, spawn: Spawn) -> None:
        """A watch-cache listener: a new namespace, or our ConfigMap deleted or changed."""
        if event.kind is self._namespaces and event.type == "ADDED":
            spawn(self.ensure(event.value["metadata"]["name"]), "root-ca-publish")
        elif (
            event.kind is self._config_maps
            and event.value.get("metadata", {}).get("name") == ROOT_CA_CONFIG_MAP
            and (
                event.type == "DELETED"
                or (event.value.get("data") or {}).get("ca.crt") != self.ca_pem
            )
        ):
            spawn(self.ensure(event.namespace), "root-ca-publish")
