"""The StatefulSet controller (upstream's ``pkg/controller/statefulset``): pods with stable
names and claims, made and removed in ordinal order, rolled out by ControllerRevision — and,
here, resized in place when only their resources change.

Level-triggered, as upstream's ``sync``: a handler enqueues the set's key; :meth:`reconcile`
reads the set from the informer, adopts the orphan ControllerRevisions its selector matches,
claims its pods (those named ``<set>-<ordinal>`` that its selector matches: orphans adopted,
strays released), finds the current and update revisions (creating the update revision, or
renumbering an older equal one on a rollback, through :mod:`..history`), asks
:func:`.model.plan` what to do, does it, writes the status when upstream would, and trims the
revision history to ``revisionHistoryLimit``. An ``OrderedReady`` plan is run one action
after the other; a ``Parallel`` one in slow-start batches (1, 2, 4, ...). The first failure
ends the sync, which the queue retries with back-off (a create that finds its pod already
there, the cache a step behind, is retried at once).

Events are upstream's: ``SuccessfulCreate`` "create Pod web-0 in StatefulSet web successful",
``SuccessfulDelete``, ``SuccessfulUpdate``, their ``Failed*`` counterparts ("... failed
error: ..."), and for claims "create Claim www-web-0 Pod web-0 in StatefulSet web success".
A pod moved to the update revision in place gets ``InPlaceResize`` (this project's).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from inplace.client import (
    CONTROLLERREVISIONS,
    PERSISTENTVOLUMECLAIMS,
    PODS,
    STATEFULSETS,
    APIAlreadyExistsError,
    APIConflictError,
    APIError,
    APINotFoundError,
    key_of,
)

from ..base import NAMESPACE_INDEX, Context, QueueController, controller_key, selecting
from ..history import (
    create_revision,
    find_equal,
    history_to_delete,
    new_revision,
    next_revision_number,
    renumber_revision,
    sort_revisions,
)
from ..pods import (
    Ownership,
    controller_of,
    controller_ref,
    is_ready,
    lifecycle_signature,
    selector_of,
    uid_of,
    with_type,
)
from ..replicaset import slow_start_batches
from ..workloadresize.revisions import adopt_revision
from . import model as m

__all__ = ["StatefulSetController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DEFAULT_HISTORY_LIMIT = 10
"""Upstream's default ``revisionHistoryLimit``."""


class _Refused(Exception):
    """What upstream fails the sync with before calling the API (a claim being deleted)."""


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _message(error: APIError | ConnectionError) -> str:
    return error.message if isinstance(error, APIError) else str(error)


class StatefulSetController(QueueController):
    name = "statefulset-controller"
    workers = 5
    """Upstream's ``--concurrent-statefulset-syncs`` default."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.sets = ctx.informer(STATEFULSETS)
        self.pods = ctx.informer(PODS)
        self.revisions = ctx.informer(CONTROLLERREVISIONS)
        self.claims = ctx.informer(PERSISTENTVOLUMECLAIMS)
        self.recorder = ctx.recorder(self.name)
        self.sets.add_handler(
            lambda s: self.enqueue(key_of(s)),
            lambda old, new: self.enqueue(key_of(new)),
            lambda s: self.enqueue(key_of(s)),
        )
        self.pods.add_handler(self._pod_added, self._pod_updated, self._pod_deleted)
        self.claims.add_handler(None, None, self._claim_deleted)

    # -- event handlers ----------------------------------------------------------------------

    def _owner_key(self, pod: Mapping[str, Any]) -> str | None:
        """The key of the StatefulSet controlling ``pod``, if it is one we know."""
        return controller_key(pod, "StatefulSet", self.sets)

    def _selecting(self, pod: Mapping[str, Any]) -> list[str]:
        """The sets of the pod's namespace whose selector matches it (for adoption)."""
        return selecting(pod, self.sets)

    def _pod_added(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.enqueue(key)
        elif controller_of(pod) is None:
            for sts_key in self._selecting(pod):
                self.enqueue(sts_key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if lifecycle_signature(old) == lifecycle_signature(new):
            return  # e.g. a resize: nothing a StatefulSet decides on changed
        old_key, key = self._owner_key(old), self._owner_key(new)
        if old_key is not None and old_key != key:
            self.enqueue(old_key)
        if key is not None:
            self.enqueue(key)
            sts = self.sets.get(key) or {}
            min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready and is_ready(new) and not is_ready(old):
                self.queue.add_after(key, float(min_ready))
        elif controller_of(new) is None:
            for sts_key in self._selecting(new):
                self.enqueue(sts_key)

    def _pod_deleted(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.enqueue(key)

    def _claim_deleted(self, claim: Obj) -> None:
        """A claim gone may free a pod that waited for it (a stale claim collected)."""
        name = _name(claim)
        for sts in self.sets.by_index(NAMESPACE_INDEX, _namespace(claim)):
            for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or ():
                if name.startswith(f"{_name(template)}-{_name(sts)}-"):
                    self.enqueue(key_of(sts))
                    break

    # -- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, key: str) -> float | None:
        cached = self.sets.get(key)
        if cached is None:
            return None
        sts = with_type(cached, STATEFULSETS)
        revisions = await self._claim_revisions(sts)
        pods = await self._claim_pods(sts)
        current, update, collisions = await self._revision_pair(sts, revisions)
        claims = {_name(c): c for c in self.claims.by_index(NAMESPACE_INDEX, _namespace(sts))}
        known = {_name(r) for r in revisions}
        plan = m.plan(
            sts,
            pods,
            revisions if _name(update) in known else [*revisions, update],
            current,
            update,
            claims,
            collision_count=collisions,
            now=self.ctx.now(),
        )
        done, error = await self._execute(sts, plan)
        status = m.settle_status(sts, plan.status, done)
        if m.status_differs(sts, status):
            await self._write_status(sts, status)
        await self._truncate_history(sts, pods, revisions, current, update)
        if error is not None:
            # A conflict (a create that found its pod, the cache a step behind) is retried
            # at once by the queue, anything else with back-off.
            raise error
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and status.get("availableReplicas") != m.replicas_of(sts):
            return float(min_ready)
        return None

    # -- claiming ----------------------------------------------------------------------------

    async def _can_adopt(self, sts: Obj) -> bool:
        """Upstream's ``RecheckDeletionTimestamp``: a fresh read of the set before adopting."""
        try:
            fresh = await self.client.get(STATEFULSETS, _name(sts), namespace=_namespace(sts))
        except APINotFoundError:
            return False
        meta = fresh.get("metadata") or {}
        return uid_of(fresh) == uid_of(sts) and not meta.get("deletionTimestamp")

    async def _claim_pods(self, sts: Obj) -> list[Obj]:
        """Upstream's ``getPodsForStatefulSet``: every pod of the namespace, claimed by the
        selector and the name (finished ones too: a failed pod is made again)."""
        candidates = self.pods.by_index(NAMESPACE_INDEX, _namespace(sts))
        ownership = Ownership(
            self.client,
            PODS,
            sts,
            selector_of(sts),
            can_adopt=lambda: self._can_adopt(sts),
            accept=lambda pod: m.is_member(sts, pod),
        )
        return await ownership.claim(list(candidates))

    async def _claim_revisions(self, sts: Obj) -> list[Obj]:
        """The set's revisions, oldest first, after adopting the orphans its selector matches
        (upstream's ``adoptOrphanRevisions`` and ``ListControllerRevisions``)."""
        selector = selector_of(sts)
        uid = uid_of(sts)
        owned: list[Obj] = []
        orphans: list[Obj] = []
        for revision in self.revisions.by_index(NAMESPACE_INDEX, _namespace(sts)):
            labels = (revision.get("metadata") or {}).get("labels") or {}
            if not selector.matches(labels):
                continue
            ref = controller_of(revision)
            if ref is None:
                orphans.append(revision)
            elif ref.get("uid") == uid:
                owned.append(revision)
        if orphans and await self._can_adopt(sts):
            for revision in orphans:
                patch = {
                    "metadata": {"ownerReferences": [controller_ref(sts)], "uid": uid_of(revision)}
                }
                try:
                    adopted = await self.client.patch(
                        CONTROLLERREVISIONS,
                        _name(revision),
                        patch,
                        patch_type="strategic",
                        namespace=_namespace(sts),
                    )
                except APINotFoundError:
                    continue
                owned.append(adopted)
        return sort_revisions(owned)

    async def _revision_pair(self, sts: Obj, revisions: list[Obj]) -> tuple[Obj, Obj, int]:
        """The current and update revisions and the collision count (upstream's
        ``getStatefulSetRevisions``)."""
        status = sts.get("status") or {}
        collisions = int(status.get("collisionCount") or 0)
        template = (sts.get("spec") or {}).get("template") or {}
        proposed = new_revision(sts, template, next_revision_number(revisions), collisions)
        choice = m.choose_update_revision(revisions, proposed, find_equal(revisions, proposed))
        if choice.how == "existing":
            update = choice.revision
        elif choice.how == "renumber":
            update = await renumber_revision(self.client, choice.revision, choice.number)
        else:
            update, collisions = await create_revision(self.client, sts, proposed, collisions)
        current = next((r for r in revisions if _name(r) == status.get("currentRevision")), update)
        return current, update, collisions

    # -- acting ------------------------------------------------------------------------------

    async def _execute(self, sts: Obj, plan: m.Plan) -> tuple[list[m.Action], Exception | None]:
        """Run the plan's phases in order; the first failure ends it. Returns what was done
        and the failure."""
        done: list[m.Action] = []
        for phase in plan.phases:
            if not phase.parallel:
                for step in phase.steps:
                    try:
                        await self._run_step(sts, step, done)
                    except (APIError, ConnectionError, _Refused) as exc:
                        return done, exc
                continue
            offset = 0
            for size in slow_start_batches(len(phase.steps)):
                batch = phase.steps[offset : offset + size]
                offset += size
                results = await asyncio.gather(
                    *(self._run_step(sts, step, done) for step in batch), return_exceptions=True
                )
                for result in results:
                    if isinstance(result, (APIError, ConnectionError, _Refused)):
                        return done, result
                    if isinstance(result, BaseException):
                        raise result
        return done, None

    async def _run_step(self, sts: Obj, step: tuple[m.Action, ...], done: list[m.Action]) -> None:
        for action in step:
            await self._run(sts, action)
            done.append(action)

    async def _run(self, sts: Obj, action: m.Action) -> None:
        if isinstance(action, m.CreatePod):
            await self._create_claims(sts, action.pod, action.claims, verb="create")
            await self._create_pod(sts, action.pod)
        elif isinstance(action, m.DeletePod):
            await self._delete_pod(sts, action.pod)
        elif isinstance(action, m.CreateClaims):
            await self._create_claims(sts, action.pod, action.claims, verb="update")
        elif isinstance(action, m.SetClaimOwners):
            await self._set_claim_owners(sts, action)
        elif isinstance(action, m.MendIdentity):
            await self._mend_identity(sts, action)
        elif isinstance(action, m.AdoptRevision):
            await adopt_revision(self.client, action.pod, action.labels)
            revision = next(iter(action.labels.values()))
            self.recorder.event(
                sts,
                "Normal",
                "InPlaceResize",
                f"Moved pod {_name(action.pod)} to revision {revision} in place: it is resized "
                "without being replaced",
            )
        elif isinstance(action, m.Fail):
            self._pod_event(sts, action.verb, action.pod, action.message)
            raise _Refused(f"{_name(action.pod)}: {action.message}")

    def _pod_event(self, sts: Obj, verb: str, pod: Mapping[str, Any], error: str | None) -> None:
        """Upstream's ``recordPodEvent``."""
        if error is None:
            message = f"{verb} Pod {_name(pod)} in StatefulSet {_name(sts)} successful"
            self.recorder.event(sts, "Normal", f"Successful{verb.title()}", message)
        else:
            message = f"{verb} Pod {_name(pod)} in StatefulSet {_name(sts)} failed error: {error}"
            self.recorder.event(sts, "Warning", f"Failed{verb.title()}", message)

    def _claim_event(self, sts: Obj, pod: Mapping[str, Any], claim: str, error: str | None) -> None:
        """Upstream's ``recordClaimEvent`` (for creates, the only verb it records)."""
        if error is None:
            message = f"create Claim {claim} Pod {_name(pod)} in StatefulSet {_name(sts)} success"
            self.recorder.event(sts, "Normal", "SuccessfulCreate", message)
        else:
            message = (
                f"create Claim {claim} for Pod {_name(pod)} in StatefulSet {_name(sts)} "
                f"failed error: {error}"
            )
            self.recorder.event(sts, "Warning", "FailedCreate", message)

    async def _create_claims(
        self, sts: Obj, pod: Obj, claims: tuple[Obj, ...], *, verb: str
    ) -> None:
        """Create the claims before the pod that mounts them; one that exists already (made
        by an earlier sync the cache has not shown yet) is fine."""
        for body in claims:
            try:
                await self.client.create(PERSISTENTVOLUMECLAIMS, body, namespace=_namespace(sts))
            except APIAlreadyExistsError:
                continue
            except APIError as exc:
                self._claim_event(sts, pod, _name(body), exc.message)
                self._pod_event(
                    sts, verb, pod, f"failed to create PVC {_name(body)}: {exc.message}"
                )
                raise
            self._claim_event(sts, pod, _name(body), None)

    async def _create_pod(self, sts: Obj, pod: Obj) -> None:
        try:
            await self.client.create(PODS, pod, namespace=_namespace(sts))
        except APIAlreadyExistsError:
            raise  # upstream records no event for it
        except (APIError, ConnectionError) as exc:
            self._pod_event(sts, "create", pod, _message(exc))
            raise
        self._pod_event(sts, "create", pod, None)

    async def _delete_pod(self, sts: Obj, pod: Obj) -> None:
        """Delete ``pod`` (that very pod: a uid precondition); one already gone is done."""
        meta = pod.get("metadata") or {}
        try:
            await self.client.delete(
                PODS,
                _name(pod),
                namespace=_namespace(sts),
                preconditions={"uid": meta["uid"]} if meta.get("uid") else None,
            )
        except (APINotFoundError, APIConflictError):
            return
        except (APIError, ConnectionError) as exc:
            self._pod_event(sts, "delete", pod, _message(exc))
            raise
        self._pod_event(sts, "delete", pod, None)

    async def _set_claim_owners(self, sts: Obj, action: m.SetClaimOwners) -> None:
        claim = action.claim
        body = {
            **claim,
            "metadata": {**claim["metadata"], "ownerReferences": list(action.owner_references)},
        }
        try:
            await self.client.update(PERSISTENTVOLUMECLAIMS, body, namespace=_namespace(sts))
        except APINotFoundError:
            return
        except APIError as exc:
            message = (
                f"could not update claim {_name(claim)} for delete policy ownerRefs: {exc.message}"
            )
            self._pod_event(sts, "update", action.pod, message)
            raise

    async def _mend_identity(self, sts: Obj, action: m.MendIdentity) -> None:
        meta = action.pod.get("metadata") or {}
        body = {
            "metadata": {"resourceVersion": meta.get("resourceVersion"), "labels": action.labels}
        }
        try:
            await self.client.patch(
                PODS, _name(action.pod), body, patch_type="strategic", namespace=_namespace(sts)
            )
        except APIError as exc:
            self._pod_event(sts, "update", action.pod, exc.message)
            raise
        self._pod_event(sts, "update", action.pod, None)

    # -- status and history ------------------------------------------------------------------

    async def _write_status(self, sts: Obj, status: Obj) -> None:
        """PUT the status (a 409, the set changed meanwhile, is retried by the queue)."""
        body = {**sts, "status": status}
        await self.client.update(STATEFULSETS, body, subresource="status")

    async def _truncate_history(
        self, sts: Obj, pods: list[Obj], revisions: list[Obj], current: Obj, update: Obj
    ) -> None:
        """Delete the oldest revisions no pod and neither status revision names, beyond
        ``revisionHistoryLimit`` (upstream's ``truncateHistory``)."""
        limit = (sts.get("spec") or {}).get("revisionHistoryLimit")
        limit = DEFAULT_HISTORY_LIMIT if limit is None else int(limit)
        live = {_name(current), _name(update), *(m.revision_of(p) for p in pods)}
        for revision in history_to_delete(revisions, live, limit):
            try:
                await self.client.delete(
                    CONTROLLERREVISIONS,
                    _name(revision),
                    namespace=_namespace(revision),
                    preconditions={"uid": uid_of(revision)},
                )
            except (APINotFoundError, APIConflictError):
                continue
