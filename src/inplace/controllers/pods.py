"""What every workload controller does with the objects it owns: upstream's ``controller_utils``.

* Owner references: :func:`controller_of` reads an object's controller, :func:`controller_ref`
  makes one (``controller: true``, ``blockOwnerDeletion: true``, as upstream's
  ``NewControllerRef``).
* Pod state: :func:`is_active`, :func:`is_ready`, :func:`is_available` (ready for
  ``minReadySeconds``), read from the pod's status exactly as upstream's ``podutil`` does.
* :func:`pod_from_template`: a pod as ``GetPodFromTemplate`` builds it (the template's labels,
  annotations, finalizers and spec; ``generateName`` from the owner's name; the controller ref).
* :func:`deletion_order`: upstream's ``ActivePods`` ordering, so a controller that scales
  down removes the pods that are the least far along first.
* :class:`Ownership`: the ``ControllerRefManager`` — claim the objects a controller selects
  (adopt orphans that match, release owned ones that no longer match).
* :class:`PodControl`: create and delete pods with upstream's events
  (``SuccessfulCreate``/``FailedCreate``/``SuccessfulDelete``/``FailedDelete``); a create
  whose answer the connection lost is sent again under the same name, so it happens once.

Everything here reads the plain JSON dicts the API sends and never mutates them.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from inplace.api.backoff import Backoff
from inplace.api.names import generated_name
from inplace.api.selectors import LabelSelector
from inplace.api.timestamps import parse_rfc3339
from inplace.client import (
    PODS,
    APIAlreadyExistsError,
    APIConflictError,
    APIConnectionError,
    APIError,
    APINotFoundError,
    Client,
    Resource,
)

from .events import ControllerEvents

__all__ = [
    "CONTROLLER_INDEX",
    "LOST_CREATE_RETRY_SECONDS",
    "OWNER_INDEX",
    "Ownership",
    "PodControl",
    "condition",
    "controller_of",
    "controller_ref",
    "controller_uid_index",
    "deletion_order",
    "is_active",
    "is_available",
    "is_ready",
    "is_terminating",
    "lifecycle_signature",
    "owner_uids_index",
    "pod_from_template",
    "ready_since",
    "selector_of",
    "uid_of",
    "with_type",
]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

LOST_CREATE_RETRY_SECONDS = 300.0
"""How long a create whose answer was lost is sent again: the expectations' TTL, after which
an owner would not wait for it anyway."""
_LOST_CREATE_BACKOFF = Backoff(0.5, 5.0)
P = TypeVar("P", bound=Mapping[str, Any])

CONTROLLER_INDEX = "controller-uid"
"""Informer index: the uid of the object's controller (its ``controller: true`` owner)."""
OWNER_INDEX = "owner-uid"
"""Informer index: the uids of every owner of the object."""


def uid_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference with ``controller: true``, or None (upstream ``GetControllerOf``)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def controller_uid_index(obj: Mapping[str, Any]) -> list[str]:
    ref = controller_of(obj)
    return [str(ref.get("uid"))] if ref is not None and ref.get("uid") else []


def owner_uids_index(obj: Mapping[str, Any]) -> list[str]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return [str(r["uid"]) for r in refs if r.get("uid")]


def controller_ref(owner: Mapping[str, Any]) -> dict[str, Any]:
    """A controller owner reference to ``owner`` (apiVersion and kind must be set on it)."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def selector_of(obj: Mapping[str, Any]) -> LabelSelector:
    """The object's ``spec.selector`` as a selector (an unparseable one selects nothing)."""
    try:
        return LabelSelector.from_dict((obj.get("spec") or {}).get("selector"))
    except ValueError:
        return LabelSelector.nothing()


# -- pod state -------------------------------------------------------------------------------


def is_terminating(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def is_active(pod: Mapping[str, Any]) -> bool:
    """Not finished and not being deleted (upstream ``IsPodActive``)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not is_terminating(pod)


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return cond  # type: ignore[no-any-return]
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    cond = condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def ready_since(pod: Mapping[str, Any]) -> float | None:
    """When the pod became ready (Unix time), or None if it is not ready."""
    cond = condition(pod, "Ready")
    if cond is None or cond.get("status") != "True":
        return None
    stamp = cond.get("lastTransitionTime")
    if not stamp:
        return 0.0
    try:
        return parse_rfc3339(str(stamp)).timestamp()
    except ValueError:
        return 0.0


def is_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """Ready for at least ``min_ready_seconds`` (upstream ``IsPodAvailable``)."""
    since = ready_since(pod)
    if since is None:
        return False
    return min_ready_seconds <= 0 or since + min_ready_seconds <= now


def lifecycle_signature(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a workload controller reacts to in a pod: ownership, labels, deletion, phase,
    conditions other than the resize ones, containers' readiness, states and restarts.

    A resize changes none of it (only resources and the ``PodResize*`` conditions), so a
    controller that skips updates with an unchanged signature does no work per resized pod,
    with the same outcome: its reconcile would have decided the same."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    conditions = tuple(
        sorted(
            (str(c.get("type")), str(c.get("status")), str(c.get("lastTransitionTime")))
            for c in status.get("conditions") or ()
            if not str(c.get("type") or "").startswith("PodResize")
        )
    )
    containers = tuple(
        (
            cs.get("name"),
            cs.get("ready"),
            cs.get("restartCount"),
            tuple(sorted((cs.get("state") or {}).keys())),
        )
        for key in ("initContainerStatuses", "containerStatuses")
        for cs in status.get(key) or ()
    )
    return (
        meta.get("deletionTimestamp"),
        tuple(meta.get("finalizers") or ()),
        tuple(sorted((meta.get("labels") or {}).items())),
        tuple((r.get("uid"), r.get("controller")) for r in meta.get("ownerReferences") or ()),
        (pod.get("spec") or {}).get("nodeName"),
        status.get("phase"),
        conditions,
        containers,
    )


def _restarts(pod: Mapping[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def _created(pod: Mapping[str, Any]) -> float:
    stamp = (pod.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_rfc3339(str(stamp)).timestamp() if stamp else 0.0
    except ValueError:
        return 0.0


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_order(pods: Iterable[P], *, colocated: Mapping[str, int] | None = None) -> list[P]:
    """``pods`` sorted as upstream's ``ActivePodsWithRanks``: the first ones are deleted first.

    Unassigned before assigned; Pending before Unknown before Running; not ready before
    ready; more pods of the same owner on the node (``colocated``) first; ready for less
    time first; more restarts first; newer first.
    """

    def key(pod: Mapping[str, Any]) -> tuple[Any, ...]:
        spec = pod.get("spec") or {}
        node = spec.get("nodeName") or ""
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        since = ready_since(pod)
        rank = (colocated or {}).get(node, 0) if node else 0
        return (
            bool(node),
            _PHASE_RANK.get(phase, 0),
            since is not None,
            -rank,
            -(since or 0.0),
            -_restarts(pod),
            -_created(pod),
        )

    return sorted(pods, key=key)


def pod_from_template(
    template: Mapping[str, Any],
    owner: Mapping[str, Any],
    *,
    generate_name: str | None = None,
    extra_finalizers: Iterable[str] = (),
) -> Obj:
    """A new pod from ``template`` owned by ``owner`` (upstream ``GetPodFromTemplate``)."""
    meta_t = template.get("metadata") or {}
    owner_meta = owner["metadata"]
    metadata: Obj = {
        "generateName": generate_name or f"{owner_meta['name']}-",
        "namespace": owner_meta.get("namespace") or "default",
        "ownerReferences": [controller_ref(owner)],
    }
    if meta_t.get("labels"):
        metadata["labels"] = dict(meta_t["labels"])
    if meta_t.get("annotations"):
        metadata["annotations"] = dict(meta_t["annotations"])
    finalizers = list(meta_t.get("finalizers") or ())
    for fin in extra_finalizers:
        if fin not in finalizers:
            finalizers.append(fin)
    if finalizers:
        metadata["finalizers"] = finalizers
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


# -- claiming --------------------------------------------------------------------------------


class Ownership:
    """Claim objects for a controller (upstream ``ControllerRefManager``).

    An object already controlled by someone else is left alone. One controlled by the owner
    is kept while its labels match and released (its owner reference removed) when they no
    longer do. An orphan that matches is adopted (the owner reference added), unless the owner
    or the object is being deleted; ``can_adopt`` (upstream: a fresh read of the owner) is
    asked once before the first adoption. ``accept`` narrows what matches beyond the
    selector (upstream's ``ClaimPods`` filters: a StatefulSet claims only pods named after it).
    """

    def __init__(
        self,
        client: Client,
        resource: Resource,
        owner: Mapping[str, Any],
        selector: LabelSelector,
        *,
        can_adopt: Callable[[], Awaitable[bool]] | None = None,
        adopt_finalizers: tuple[str, ...] = (),
        accept: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> None:
        self.client = client
        self.accept = accept
        self.resource = resource
        self.owner = owner
        self.selector = selector
        self._can_adopt = can_adopt
        self._adopt_ok: bool | None = None
        self.adopt_finalizers = adopt_finalizers

    async def claim(self, objects: Iterable[Obj]) -> list[Obj]:
        owner_uid = uid_of(self.owner)
        owner_deleting = is_terminating(self.owner)
        claimed: list[Obj] = []
        for obj in objects:
            ref = controller_of(obj)
            labels = (obj.get("metadata") or {}).get("labels") or {}
            matches = self.selector.matches(labels) and (self.accept is None or self.accept(obj))
            if ref is not None:
                if ref.get("uid") != owner_uid:
                    continue
                if matches or owner_deleting:
                    claimed.append(obj)
                    continue
                await self._release(obj)
                continue
            if owner_deleting or not matches or is_terminating(obj):
                continue
            adopted = await self._adopt(obj)
            if adopted is not None:
                claimed.append(adopted)
        return claimed

    async def _adopt(self, obj: Obj) -> Obj | None:
        if self._adopt_ok is None:
            self._adopt_ok = True if self._can_adopt is None else await self._can_adopt()
        if not self._adopt_ok:
            return None
        meta = obj["metadata"]
        patch: Obj = {"metadata": {"ownerReferences": [controller_ref(self.owner)]}}
        if self.adopt_finalizers:
            patch["metadata"]["finalizers"] = list(self.adopt_finalizers)
        try:
            adopted: Obj = await self.client.patch(
                self.resource,
                meta["name"],
                patch,
                patch_type="strategic",
                namespace=meta.get("namespace"),
            )
        except APINotFoundError:
            return None
        return adopted

    async def _release(self, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid_of(self.owner)}]}}
        try:
            await self.client.patch(
                self.resource,
                meta["name"],
                patch,
                patch_type="strategic",
                namespace=meta.get("namespace"),
            )
        except (APINotFoundError, APIConflictError):
            pass


# -- acting on pods --------------------------------------------------------------------------


class PodControl:
    """Creates and deletes a controller's pods, recording upstream's events on the owner."""

    def __init__(
        self,
        client: Client,
        recorder: ControllerEvents,
        *,
        lost_create_retry: float = LOST_CREATE_RETRY_SECONDS,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.lost_create_retry = lost_create_retry

    async def create(self, owner: Mapping[str, Any], pod: Obj) -> Obj:
        """Create ``pod`` once, even when the connection drops with the answer.

        A create whose answer is lost may or may not have been stored. Expecting it stalls the
        owner until the expectations' TTL if it was not; not expecting it makes a second pod
        for the same slot if it was (the chaos storm found both). So the pod is named here,
        by the rule the API server applies to ``generateName``, and a lost create is sent
        again with the same name until there is an answer: created, or refused because a pod
        of that name exists, which is the lost create's own when ``owner`` controls it.
        A connection still failing after ``lost_create_retry`` seconds is raised.
        """
        meta = pod["metadata"]
        namespace = meta["namespace"]
        if not meta.get("name") and meta.get("generateName"):
            pod = {**pod, "metadata": {**meta, "name": generated_name(meta["generateName"])}}
        name = pod["metadata"]["name"]
        deadline = asyncio.get_running_loop().time() + self.lost_create_retry
        delay: float | None = None
        lost: APIConnectionError | None = None
        while True:
            try:
                created: Obj = await self.client.create(PODS, pod, namespace=namespace)
                break
            except APIConnectionError as exc:
                lost = exc
                delay = _LOST_CREATE_BACKOFF.next(delay)
                if asyncio.get_running_loop().time() + delay > deadline:
                    raise
                log.info("create of pod %s/%s lost (%s); sending it again", namespace, name, exc)
                await asyncio.sleep(delay)
            except APIAlreadyExistsError:
                if lost is None:
                    raise
                existing = await self._own_pod(owner, namespace, name)
                if existing is None:
                    raise
                created = existing
                break
            except APIError as exc:
                self.recorder.event(
                    owner, "Warning", "FailedCreate", f"Error creating: {exc.message}"
                )
                raise
        self.recorder.event(
            owner, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}"
        )
        return created

    async def _own_pod(self, owner: Mapping[str, Any], namespace: str, name: str) -> Obj | None:
        """The pod ``name`` if ``owner`` controls it (a lost create of ours stored it).

        Read by a LIST of that one name, not a GET: the roles upstream gives the workload
        controllers (``system:controller:replicaset-controller``, ``job-controller``...)
        grant list and watch on pods but not get, and a refused read here was taken for a
        failed create, so one more pod was made (found by the chaos storm: 3 pods of a
        2-replica ReplicaSet after an API server restart lost a create)."""
        listed = await self.client.list(
            PODS, namespace=namespace, field_selector=f"metadata.name={name}"
        )
        if not listed.get("items"):
            return None
        existing: Obj = listed["items"][0]
        ref = controller_of(existing)
        if ref is None or ref.get("uid") != owner["metadata"].get("uid"):
            return None
        return existing

    async def delete(self, owner: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        try:
            await self.client.delete(
                PODS,
                meta["name"],
                namespace=meta.get("namespace"),
                preconditions={"uid": meta["uid"]} if meta.get("uid") else None,
            )
        except APINotFoundError:
            raise
        except APIError as exc:
            self.recorder.event(owner, "Warning", "FailedDelete", f"Error deleting: {exc.message}")
            raise
        self.recorder.event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")

    async def patch(self, pod: Mapping[str, Any], body: Obj) -> Obj:
        meta = pod["metadata"]
        result: Obj = await self.client.patch(
            PODS, meta["name"], body, patch_type="strategic", namespace=meta.get("namespace")
        )
        return result


def with_type(obj: Obj, resource: Resource) -> Obj:
    """``obj`` with its ``apiVersion`` and ``kind`` (list items come without them; owner
    references and events need them)."""
    if obj.get("apiVersion") == resource.api_version and obj.get("kind") == resource.kind:
        return obj
    return {**obj, "apiVersion": resource.api_version, "kind": resource.kind}
