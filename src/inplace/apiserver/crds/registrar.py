"""Serving what CustomResourceDefinitions define: the I/O beside `model.py` and `kinds.py`.

As upstream's apiextensions-apiserver, in one object per API server:

* the registry (the server's own copy) gains the kinds of every stored CRD when the server
  starts, and follows each CRD's creation, update and deletion as the watch cache applies it
  (synchronously, so routing, discovery, OpenAPI, tables and field selectors see a change as
  soon as the cache does). A CRD whose names another CRD of its group already accepted is
  not served (upstream's naming controller);
* each CRD's status is kept as upstream's naming and establishing controllers keep it:
  `acceptedNames`, `NamesAccepted` and `Established`;
* deleting a CRD (upstream's REST adds the `customresourcecleanup.apiextensions.k8s.io`
  finalizer, `rest.py`'s `finalize_on_delete`) sets `Terminating`, deletes every instance
  (their own finalizers honoured) and then removes the finalizer, so the CRD goes
  (upstream's finalizer controller).

`inplace up` runs one API server process, so one registrar sees every change.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Final

from inplace.api.validation.errors import or_empty
from inplace.apiserver.cache import CachedEvent, WatchCache
from inplace.apiserver.crds.kinds import CRD_KIND, kinds_from_crd
from inplace.apiserver.crds.model import (
    BUILTIN_VPA_CRDS,
    CLEANUP_FINALIZER,
    names_conflict,
    set_condition,
)
from inplace.apiserver.errors import StatusError
from inplace.apiserver.rest import REST
from inplace.registry.kinds import Kind
from inplace.registry.served import Registry
from inplace.registry.strategy import copy_json

log = logging.getLogger(__name__)

#: How long a terminating CRD waits before looking again at instances that still have
#: finalizers of their own.
_RECHECK: Final = 0.5


class CustomResourceDefinitions:
    """Keeps the server's registry and every CRD's status in step with the stored CRDs."""

    def __init__(self, rest: REST, cache: WatchCache, registry: Registry) -> None:
        self.rest = rest
        self.cache = cache
        self.registry = registry
        #: CRD name -> the kinds it serves now.
        self._served: dict[str, list[Kind]] = {}
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        # The CustomResourceDefinition kind itself; deleting one adds the cleanup finalizer.
        registry.add([CRD_KIND])
        rest.finalize_on_delete[(CRD_KIND.group, CRD_KIND.plural)] = CLEANUP_FINALIZER

    def start(self) -> None:
        """Serve every stored CRD's kinds, then follow changes (the cache must be started)."""
        for entry in self.cache.entries(CRD_KIND, None):
            self._serve(entry.value)
            self._enqueue(entry.value)
        self.cache.add_listener(self._on_change)

    def _on_change(self, event: CachedEvent) -> None:
        if event.kind is not CRD_KIND:
            return
        name = str(or_empty(event.value.get("metadata")).get("name", ""))
        if event.type == "DELETED":
            self._unserve(name)
            return
        self._serve(event.value)
        self._enqueue(event.value)

    def _others(self, name: str) -> list[Mapping[str, Any]]:
        return [
            e.value
            for e in self.cache.entries(CRD_KIND, None)
            if or_empty(e.value.get("metadata")).get("name") != name
        ]

    def _serve(self, crd: Mapping[str, Any]) -> None:
        name = str(or_empty(crd.get("metadata")).get("name", ""))
        if names_conflict(crd, self._others(name)) is not None:
            self._unserve(name)
            return
        kinds = kinds_from_crd(crd)
        before = self._served.get(name, [])
        if before == kinds and all(a.crd == b.crd for a, b in zip(before, kinds, strict=True)):
            return
        keep = {(k.group, k.version, k.plural) for k in kinds}
        self.registry.remove(k for k in before if (k.group, k.version, k.plural) not in keep)
        self.registry.add(kinds)
        self._served[name] = kinds
        log.info("serving %s: %s", name, ", ".join(k.api_version for k in kinds) or "built in")

    def _unserve(self, name: str) -> None:
        before = self._served.pop(name, [])
        if before:
            self.registry.remove(before)
            log.info("no longer serving %s", name)

    def _enqueue(self, crd: Mapping[str, Any]) -> None:
        name = str(or_empty(crd.get("metadata")).get("name", ""))
        if name and name not in self._queued:
            self._queued.add(name)
            self._queue.put_nowait(name)

    # -- status and cleanup ---------------------------------------------------------------

    async def run(self) -> None:
        """Work through CRDs whose status or deletion needs attention, one at a time."""
        while True:
            name = await self._queue.get()
            self._queued.discard(name)
            try:
                again = await self._reconcile(name)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reconciling CustomResourceDefinition %s", name)
                again = True
            if again:
                asyncio.get_running_loop().call_later(_RECHECK, self._requeue, name)

    def _requeue(self, name: str) -> None:
        if name not in self._queued:
            self._queued.add(name)
            self._queue.put_nowait(name)

    async def _reconcile(self, name: str) -> bool:
        """Bring one CRD's status up to date, or carry on deleting it; True: look again."""
        entry = self.cache.get(CRD_KIND, CRD_KIND.storage_key(name), None)
        if entry is None:
            return False
        crd = entry.value
        if or_empty(crd.get("metadata")).get("deletionTimestamp"):
            return await self._clean_up(crd)
        status = copy_json(dict(or_empty(crd.get("status"))))
        now = self.rest.now()
        conflict = names_conflict(crd, self._others(name))
        names = dict(or_empty(or_empty(crd.get("spec")).get("names")))
        if conflict is None:
            status["acceptedNames"] = names
            set_condition(status, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now)
            message = "the initial names have been accepted"
            if name in BUILTIN_VPA_CRDS:
                message = (
                    "the initial names have been accepted; the kind is built into this API "
                    "server, which keeps serving it"
                )
            set_condition(status, "Established", "True", "InitialNamesAccepted", message, now)
        else:
            reason, message = conflict
            status.setdefault("acceptedNames", {"plural": "", "kind": ""})
            set_condition(status, "NamesAccepted", "False", reason, message, now)
            set_condition(
                status, "Established", "False", "NotAccepted", "not all names are accepted", now
            )
        if status != crd.get("status"):
            await self._write_status(crd, status)
        return False

    async def _write_status(self, crd: Mapping[str, Any], status: dict[str, Any]) -> None:
        updated = copy_json(dict(crd))
        updated["status"] = status
        name = str(updated["metadata"]["name"])
        try:
            await self.rest.update(CRD_KIND, None, name, updated, subresource="status")
        except StatusError as exc:
            if exc.code not in (404, 409):
                raise
            self._requeue(name)  # changed meanwhile: the next event brings it back

    async def _clean_up(self, crd: Mapping[str, Any]) -> bool:
        """Delete every instance; once none is left, let the CRD go."""
        name = str(crd["metadata"]["name"])
        status = copy_json(dict(or_empty(crd.get("status"))))
        now = self.rest.now()
        kinds = self._served.get(name) or []
        entries = self.cache.entries(kinds[0], None) if kinds else []
        if not entries:
            return await self._release(crd, status, now)
        # As upstream's finalizer controller: say so first, then delete.
        set_condition(
            status,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            now,
        )
        if status != crd.get("status"):
            await self._write_status(crd, status)
        kind = kinds[0]
        for entry in entries:
            meta = or_empty(entry.value.get("metadata"))
            if meta.get("deletionTimestamp"):
                continue  # waits for its own finalizers
            try:
                await self.rest.delete(
                    kind,
                    meta.get("namespace") if kind.namespaced else None,
                    str(meta.get("name")),
                    {},
                )
            except StatusError as exc:
                if exc.code != 404:
                    raise
        return True

    async def _release(self, crd: Mapping[str, Any], status: dict[str, Any], now: str) -> bool:
        """No instance is left: record it and remove the cleanup finalizer, so the CRD goes."""
        name = str(crd["metadata"]["name"])
        set_condition(
            status,
            "Terminating",
            "False",
            "InstanceDeletionCompleted",
            "removed all instances",
            now,
        )
        updated = copy_json(dict(crd))
        updated["status"] = status
        try:
            written = await self.rest.update(CRD_KIND, None, name, updated, subresource="status")
            final = copy_json(written.obj)
            final["metadata"]["finalizers"] = [
                f for f in final["metadata"].get("finalizers") or () if f != CLEANUP_FINALIZER
            ]
            await self.rest.update(CRD_KIND, None, name, final)
        except StatusError as exc:
            if exc.code == 404:
                return False
            if exc.code == 409:
                return True
            raise
        return False
