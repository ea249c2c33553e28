"""The ReplicaSet controller: keep ``spec.replicas`` pods from the template (upstream's
``pkg/controller/replicaset``).

Level-triggered: handlers enqueue the ReplicaSet's key; :meth:`ReplicaSetController.reconcile`
reads the ReplicaSet and the namespace's pods from the informers, claims the active pods its
selector matches (adopting orphans, releasing pods that no longer match), creates or deletes
the difference, and writes the status counts. Expectations (:mod:`.expectations`) hold the
next create/delete back until the informer has seen the last ones, so a burst of events never
makes a pod twice. Creates go out in "slow start" batches (1, 2, 4, ...) so a systematic
failure (a quota, a bad template) costs one request, not hundreds; deletions pick the pods
that are the least far along (:func:`.pods.deletion_order`).

A template change does not touch existing pods (upstream's rule); resizing them in place when
only their resources changed is the separate workload-resize controller's job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from inplace.api.timestamps import rfc3339
from inplace.client import (
    PODS,
    REPLICASETS,
    APIConflictError,
    APIError,
    APINotFoundError,
    key_of,
)

from .base import NAMESPACE_INDEX, Context, QueueController, controller_key, selecting
from .expectations import Expectations
from .pods import (
    Ownership,
    PodControl,
    controller_of,
    deletion_order,
    is_active,
    is_available,
    is_ready,
    is_terminating,
    lifecycle_signature,
    pod_from_template,
    ready_since,
    selector_of,
    uid_of,
    with_type,
)

__all__ = ["BURST_REPLICAS", "ReplicaSetController", "replica_set_status", "slow_start_batches"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

BURST_REPLICAS = 500
"""Upstream's ``BurstReplicas``: at most this many creates or deletes per sync."""


def slow_start_batches(count: int, initial: int = 1) -> list[int]:
    """Batch sizes for ``count`` creates: ``initial``, doubling, the last one what remains."""
    batches: list[int] = []
    size = min(initial, count)
    remaining = count
    while remaining > 0:
        size = min(size, remaining)
        batches.append(size)
        remaining -= size
        size *= 2
    return batches


def replica_set_status(
    rs: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    *,
    now: float,
    failure: tuple[str, str] | None,
    failure_since: str,
) -> Obj:
    """The status upstream's ``calculateStatus`` writes for ``rs`` owning the active ``pods``.

    ``failure`` is ``(reason, message)`` when creating or deleting failed this sync: it sets
    the ``ReplicaFailure`` condition, which a later successful sync removes.
    """
    spec = rs.get("spec") or {}
    old = rs.get("status") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    total = fully_labeled = ready = available = 0
    for pod in pods:
        total += 1
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully_labeled += 1
        if is_ready(pod):
            ready += 1
            if is_available(pod, min_ready, now):
                available += 1
    conditions = [c for c in old.get("conditions") or () if c.get("type") != "ReplicaFailure"]
    existing = [c for c in old.get("conditions") or () if c.get("type") == "ReplicaFailure"]
    if failure is not None:
        if existing:
            conditions.append(existing[0])
        else:
            conditions.append(
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "lastTransitionTime": failure_since,
                    "reason": failure[0],
                    "message": failure[1],
                }
            )
    status: Obj = {"replicas": total}
    for name, value in (
        ("fullyLabeledReplicas", fully_labeled),
        ("readyReplicas", ready),
        ("availableReplicas", available),
    ):
        if value:
            status[name] = value
    generation = (rs.get("metadata") or {}).get("generation")
    if generation:
        status["observedGeneration"] = generation
    if conditions:
        status["conditions"] = conditions
    return status


class ReplicaSetController(QueueController):
    name = "replicaset-controller"
    workers = 5

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.replica_sets = ctx.informer(REPLICASETS)
        self.pods = ctx.informer(PODS)
        self.expectations = Expectations(ctx.clock.monotonic)
        self.recorder = ctx.recorder(self.name)
        self.pod_control = PodControl(self.client, self.recorder)
        self.burst = int(ctx.options.get("burst_replicas", BURST_REPLICAS))
        self.replica_sets.add_handler(
            lambda rs: self.enqueue(key_of(rs)),
            lambda old, new: self.enqueue(key_of(new)),
            self._rs_deleted,
        )
        self.pods.add_handler(self._pod_added, self._pod_updated, self._pod_deleted)

    # -- event handlers ----------------------------------------------------------------------

    def _rs_deleted(self, rs: Obj) -> None:
        key = key_of(rs)
        self.expectations.forget(key)
        self.enqueue(key)

    def _owner_key(self, pod: Mapping[str, Any]) -> str | None:
        """The key of the ReplicaSet controlling ``pod``, if it is one we know."""
        return controller_key(pod, "ReplicaSet", self.replica_sets)

    def _matching(self, pod: Mapping[str, Any]) -> list[str]:
        """ReplicaSets in the pod's namespace whose selector matches it (for adoption)."""
        return selecting(pod, self.replica_sets)

    def _pod_added(self, pod: Obj) -> None:
        if is_terminating(pod):
            self._pod_deleted(pod)
            return
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.creation_observed(key)
            self.enqueue(key)
        elif controller_of(pod) is None:
            for rs_key in self._matching(pod):
                self.enqueue(rs_key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if lifecycle_signature(old) == lifecycle_signature(new):
            return  # e.g. a resize: nothing a ReplicaSet counts changed
        if is_terminating(new) and not is_terminating(old):
            key = self._owner_key(new)
            if key is not None:
                self.expectations.deletion_observed(key, key_of(new))
        old_ref, new_ref = controller_of(old), controller_of(new)
        if old_ref is not None and (new_ref is None or old_ref.get("uid") != new_ref.get("uid")):
            old_key = self._owner_key(old)
            if old_key is not None:
                self.enqueue(old_key)
        key = self._owner_key(new)
        if key is not None:
            self.enqueue(key)
            rs = self.replica_sets.get(key)
            min_ready = int(((rs or {}).get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready and ready_since(new) is not None and ready_since(old) is None:
                self.queue.add_after(key, min_ready + 1.0)
        elif new_ref is None:
            for rs_key in self._matching(new):
                self.enqueue(rs_key)

    def _pod_deleted(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is None:
            return
        self.expectations.deletion_observed(key, key_of(pod))
        self.enqueue(key)

    # -- reconcile ---------------------------------------------------------------------------

    async def reconcile(self, key: str) -> float | None:
        rs = self.replica_sets.get(key)
        if rs is None:
            self.expectations.forget(key)
            return None
        need_sync = self.expectations.satisfied(key)
        namespace = rs["metadata"].get("namespace") or ""
        candidates = [p for p in self.pods.by_index(NAMESPACE_INDEX, namespace) if is_active(p)]
        pods = await self._claim(rs, candidates)
        failure: tuple[str, str] | None = None
        if need_sync and not is_terminating(rs):
            failure = await self._manage_replicas(rs, pods)
        status = replica_set_status(
            rs, pods, now=self.ctx.now(), failure=failure, failure_since=rfc3339(self.ctx.now())
        )
        updated = await self._write_status(rs, status)
        if failure is not None:
            raise RuntimeError(f"{key}: {failure[1]}")  # requeued with back-off
        spec = updated.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        st = updated.get("status") or {}
        replicas = int(spec.get("replicas") or 0)
        if (
            min_ready
            and int(st.get("readyReplicas") or 0) == replicas
            and int(st.get("availableReplicas") or 0) != replicas
        ):
            return float(min_ready)
        return None

    async def _claim(self, rs: Obj, pods: list[Obj]) -> list[Obj]:
        async def can_adopt() -> bool:
            try:
                fresh = await self.client.get(
                    REPLICASETS, rs["metadata"]["name"], namespace=rs["metadata"]["namespace"]
                )
            except APINotFoundError:
                return False
            return uid_of(fresh) == uid_of(rs) and not is_terminating(fresh)

        ownership = Ownership(self.client, PODS, rs, selector_of(rs), can_adopt=can_adopt)
        return await ownership.claim(pods)

    async def _manage_replicas(self, rs: Obj, pods: list[Obj]) -> tuple[str, str] | None:
        key = key_of(rs)
        want = int((rs.get("spec") or {}).get("replicas") or 0)
        diff = len(pods) - want
        if diff < 0:
            count = min(-diff, self.burst)
            return await self._create(rs, key, count)
        if diff > 0:
            count = min(diff, self.burst)
            return await self._delete(rs, key, pods, count)
        return None

    async def _create(self, rs: Obj, key: str, count: int) -> tuple[str, str] | None:
        self.expectations.expect_creations(key, count)
        template = (rs.get("spec") or {}).get("template") or {}
        owner = with_type(rs, REPLICASETS)
        error: APIError | ConnectionError | None = None
        done = 0
        for size in slow_start_batches(count):
            results = await asyncio.gather(
                *(
                    self.pod_control.create(owner, pod_from_template(template, owner))
                    for _ in range(size)
                ),
                return_exceptions=True,
            )
            failed = 0
            for result in results:
                # A refused create will not be observed. Nor will one the API server never
                # answered: PodControl sends a lost create again under the same name until the
                # server answers, so this is a server unreachable for minutes; expecting it would
                # stall this ReplicaSet until the expectations' TTL.
                if isinstance(result, (APIError, ConnectionError)):
                    error, failed = result, failed + 1
                elif isinstance(result, BaseException):
                    raise result
            done += size
            if failed:
                # Neither the failed creates nor the skipped batches will ever be observed.
                self.expectations.lower_creations(key, failed + (count - done))
                break
        if error is not None:
            return "FailedCreate", _message(error)
        return None

    async def _delete(
        self, rs: Obj, key: str, pods: list[Obj], count: int
    ) -> tuple[str, str] | None:
        colocated: dict[str, int] = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName") or ""
            colocated[node] = colocated.get(node, 0) + 1
        victims = deletion_order(pods, colocated=colocated)[:count]
        self.expectations.expect_deletions(key, [key_of(p) for p in victims])
        owner = with_type(rs, REPLICASETS)
        results = await asyncio.gather(
            *(self.pod_control.delete(owner, pod) for pod in victims), return_exceptions=True
        )
        error: APIError | ConnectionError | None = None
        for pod, result in zip(victims, results, strict=True):
            if isinstance(result, (APIError, ConnectionError)):
                self.expectations.deletion_observed(key, key_of(pod))
                if not isinstance(result, APINotFoundError):
                    error = result
            elif isinstance(result, BaseException):
                raise result
        if error is not None:
            return "FailedDelete", _message(error)
        return None

    async def _write_status(self, rs: Obj, status: Obj) -> Obj:
        old = rs.get("status") or {}
        if _same_status(old, status):
            return rs
        body = {**rs, "status": status}
        try:
            updated: Obj = await self.client.update(REPLICASETS, body, subresource="status")
        except APINotFoundError:
            return rs
        except APIConflictError:
            # A newer version is on its way through the informer, which will enqueue again.
            return rs
        return updated


def _same_status(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    keys = {"replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"}
    for key in keys:
        if int(old.get(key) or 0) != int(new.get(key) or 0):
            return False
    if old.get("observedGeneration") != new.get("observedGeneration"):
        return False
    return list(old.get("conditions") or []) == list(new.get("conditions") or [])


def _message(error: APIError | ConnectionError) -> str:
    return error.message if isinstance(error, APIError) else str(error)
