"""The DaemonSet controller (upstream's ``pkg/controller/daemon``): one pod on every node
that should run one, rolled out by ControllerRevision.

Level-triggered like upstream's: handlers on DaemonSets, ControllerRevisions, pods and nodes
only enqueue keys; a sync reads the informers and

1. builds the history (upstream's ``constructHistory``): claims the DaemonSet's
   ControllerRevisions, finds the one matching the template or snapshots it under the
   template hash (a hash taken by another template bumps ``status.collisionCount``),
   renumbers it the newest;
2. ``manage``: creates the missing pods (slow-start batches, node affinity to their node,
   the default scheduler binds them) and deletes misscheduled, duplicate, failed (with a
   per-node back-off) and succeeded ones;
3. once the expectations are met, the update step: **the in-place rule** first (an old pod
   whose template differs from the update revision's only in what a resize changes is
   relabelled to it, :func:`~inplace.controllers.workloadresize.revisions.adopt_revision`,
   and the workload-resize controller resizes it), then for ``RollingUpdate`` upstream's
   rolling update under ``maxUnavailable``/``maxSurge``; ``OnDelete`` replaces nothing;
4. truncates the history to ``revisionHistoryLimit`` and writes the status counts.

The decisions are :mod:`.model`'s; this module does the reading and the writing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from inplace.api.backoff import Backoff
from inplace.api.conditions import StatusPatch
from inplace.client import (
    CONTROLLERREVISIONS,
    DAEMONSETS,
    NODES,
    PODS,
    APIAlreadyExistsError,
    APIError,
    APINotFoundError,
    key_of,
)
from inplace.client.status import write_status

from ..base import NAMESPACE_INDEX, Context, QueueController, controller_key, selecting
from ..deployment.rollout import pod_template_hash
from ..expectations import Expectations
from ..history import new_revision, renumber_revision
from ..pods import (
    Ownership,
    PodControl,
    controller_of,
    is_ready,
    is_terminating,
    lifecycle_signature,
    pod_from_template,
    selector_of,
    uid_of,
    with_type,
)
from ..replicaset import slow_start_batches
from ..workloadresize.revisions import adopt_revision
from . import model as m

__all__ = ["BURST_REPLICAS", "FAILED_POD_BACKOFF", "DaemonSetController"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

BURST_REPLICAS: Final = 250
"""Upstream's ``BurstReplicas``: at most this many creates and deletes per sync."""
FAILED_POD_BACKOFF: Final = (1.0, 900.0)
"""Upstream's ``failedPodsBackoff`` (1 s doubling to 15 min): how soon a node whose daemon
pod failed may have it deleted (and so replaced) again."""


class _FailedPodBackoff:
    """client-go's ``flowcontrol.Backoff`` for failed daemon pods, keyed by DaemonSet,
    observed generation and node: a kubelet rejecting every pod must not make the
    controller replace it in a hot loop."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.rule = Backoff(initial, maximum)
        self.maximum = maximum
        self._entries: dict[str, tuple[float, float]] = {}

    def delay(self, key: str) -> float:
        entry = self._entries.get(key)
        return entry[0] if entry is not None else 0.0

    def in_backoff(self, key: str, now: float) -> bool:
        entry = self._entries.get(key)
        return entry is not None and now - entry[1] < entry[0]

    def next(self, key: str, now: float) -> None:
        entry = self._entries.get(key)
        fresh = entry is None or now - entry[1] > 2 * self.maximum
        delay = self.rule.next(None if fresh or entry is None else entry[0])
        self._entries[key] = (delay, now)
        self._entries = {k: v for k, v in self._entries.items() if now - v[1] <= 2 * self.maximum}


class DaemonSetController(QueueController):
    name = "daemonset-controller"
    workers = 2

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.daemon_sets = ctx.informer(DAEMONSETS)
        self.revisions = ctx.informer(CONTROLLERREVISIONS)
        self.pods = ctx.informer(PODS)
        self.nodes = ctx.informer(NODES)
        # Upstream sets creations and deletions in one record; two records, one each,
        # say the same (deletions tracked by pod key, so each counts once).
        self.creations = Expectations(ctx.clock.monotonic)
        self.deletions = Expectations(ctx.clock.monotonic)
        self.recorder = ctx.recorder(self.name)
        self.pod_control = PodControl(self.client, self.recorder)
        self.burst = int(ctx.options.get("burst_replicas", BURST_REPLICAS))
        self.failed_backoff = _FailedPodBackoff(*FAILED_POD_BACKOFF)
        self.daemon_sets.add_handler(
            lambda ds: self.enqueue(key_of(ds)), self._ds_updated, self._ds_deleted
        )
        self.revisions.add_handler(
            self._revision_added, self._revision_updated, self._revision_deleted
        )
        self.pods.add_handler(self._pod_added, self._pod_updated, self._pod_deleted)
        self.nodes.add_handler(self._node_added, self._node_updated, None)

    # -- event handlers ----------------------------------------------------------------------

    def _forget(self, key: str) -> None:
        self.creations.forget(key)
        self.deletions.forget(key)

    def _ds_updated(self, old: Obj, new: Obj) -> None:
        if uid_of(old) != uid_of(new):
            self._forget(key_of(old))
        self.enqueue(key_of(new))

    def _ds_deleted(self, ds: Obj) -> None:
        self._forget(key_of(ds))
        self.enqueue(key_of(ds))

    def _resolve(self, obj: Mapping[str, Any]) -> str | None:
        """The key of the DaemonSet controlling ``obj``, if it is one we know."""
        return controller_key(obj, "DaemonSet", self.daemon_sets)

    def _matching(self, obj: Mapping[str, Any]) -> list[str]:
        """DaemonSets in the object's namespace whose selector matches it (for adoption)."""
        return selecting(obj, self.daemon_sets)

    def _owner_or_matching(self, obj: Mapping[str, Any]) -> None:
        if controller_of(obj) is not None:
            key = self._resolve(obj)
            if key is not None:
                self.enqueue(key)
            return
        for key in self._matching(obj):
            self.enqueue(key)

    def _revision_added(self, revision: Obj) -> None:
        self._owner_or_matching(revision)

    def _revision_updated(self, old: Obj, new: Obj) -> None:
        old_key = self._resolve(old)
        if old_key is not None and old_key != self._resolve(new):
            self.enqueue(old_key)
        self._owner_or_matching(new)

    def _revision_deleted(self, revision: Obj) -> None:
        key = self._resolve(revision)
        if key is not None:
            self.enqueue(key)

    def _pod_added(self, pod: Obj) -> None:
        if is_terminating(pod):
            self._pod_deleted(pod)
            return
        key = self._resolve(pod)
        if key is not None:
            self.creations.creation_observed(key)
            self.enqueue(key)
        elif controller_of(pod) is None:
            for ds_key in self._matching(pod):
                self.enqueue(ds_key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if lifecycle_signature(old) == lifecycle_signature(new):
            return  # e.g. a resize: nothing a DaemonSet counts changed
        if is_terminating(new):
            self._pod_deleted(new)
            return
        old_key = self._resolve(old)
        key = self._resolve(new)
        if old_key is not None and old_key != key:
            self.enqueue(old_key)
        if key is not None:
            self.enqueue(key)
            ds = self.daemon_sets.get(key) or {}
            min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready and is_ready(new) and not is_ready(old):
                self.queue.add_after(key, min_ready + 1.0)
        elif controller_of(new) is None:
            for ds_key in self._matching(new):
                self.enqueue(ds_key)

    def _pod_deleted(self, pod: Obj) -> None:
        key = self._resolve(pod)
        if key is None:
            return
        self.deletions.deletion_observed(key, key_of(pod))
        self.enqueue(key)

    def _node_added(self, node: Obj) -> None:
        for ds in self.daemon_sets.list():
            if m.node_should_run(node, ds)[0]:
                self.enqueue(key_of(ds))

    def _node_updated(self, old: Obj, new: Obj) -> None:
        for ds in self.daemon_sets.list():
            if m.node_should_run(old, ds) != m.node_should_run(new, ds):
                self.enqueue(key_of(ds))

    # -- reconcile ---------------------------------------------------------------------------

    def _satisfied(self, key: str) -> bool:
        return self.creations.satisfied(key) and self.deletions.satisfied(key)

    async def reconcile(self, key: str) -> float | None:
        cached = self.daemon_sets.get(key)
        if cached is None:
            self._forget(key)
            return None
        ds = with_type(cached, DAEMONSETS)
        if (ds.get("spec") or {}).get("selector") == {}:
            self.recorder.event(
                ds,
                "Warning",
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
            )
            return None
        if is_terminating(ds):
            # Its revisions may be going already: the status cannot be trusted.
            return None
        nodes = self.nodes.list()
        current, old = await self._history(ds)
        hash_ = str(((current.get("metadata") or {}).get("labels") or {})[m.REVISION_HASH_LABEL])
        if not self._satisfied(key):
            return await self._write_status(ds, nodes, hash_, observed=False)
        retry: float | None = None
        failure: Exception | None = None
        try:
            retry = await self._update(ds, key, nodes, hash_, current, old)
        except APIError as exc:
            failure = exc
        status_retry = await self._write_status(ds, nodes, hash_, observed=True)
        if failure is not None:
            raise failure
        return _sooner(retry, status_retry)

    async def _daemon_pods(self, ds: Obj) -> list[Obj]:
        """The DaemonSet's pods, adopting matching orphans and releasing pods that no
        longer match (upstream's ``getDaemonPods``)."""

        async def can_adopt() -> bool:
            return await self._still_there(ds)

        namespace = ds["metadata"].get("namespace") or ""
        ownership = Ownership(self.client, PODS, ds, selector_of(ds), can_adopt=can_adopt)
        return await ownership.claim(self.pods.by_index(NAMESPACE_INDEX, namespace))

    async def _still_there(self, ds: Obj) -> bool:
        """A fresh read: may this DaemonSet adopt (not deleted, not replaced)?"""
        meta = ds["metadata"]
        try:
            fresh = await self.client.get(DAEMONSETS, meta["name"], namespace=meta["namespace"])
        except APINotFoundError:
            return False
        return uid_of(fresh) == uid_of(ds) and not is_terminating(fresh)

    async def _update(
        self,
        ds: Obj,
        key: str,
        nodes: Sequence[Obj],
        hash_: str,
        current: Obj,
        old: list[Obj],
    ) -> float | None:
        """Upstream's ``updateDaemonSet``: manage, the update step, the history cleanup."""
        retry = await self._manage(ds, key, nodes, hash_)
        if self._satisfied(key):
            by_node = m.pods_by_node(await self._daemon_pods(ds))
            by_node = await self._adopt_in_place(ds, by_node, hash_, current, old)
            strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type")
            if (strategy or "RollingUpdate") == "RollingUpdate":
                plan = m.rolling_update(ds, nodes, by_node, hash_, self.ctx.now())
                await self._sync_nodes(ds, key, plan.delete, plan.create_on, hash_)
        await self._clean_history(ds, old)
        return retry

    async def _manage(self, ds: Obj, key: str, nodes: Sequence[Obj], hash_: str) -> float | None:
        by_node = m.pods_by_node(await self._daemon_pods(ds))
        plan = m.manage(ds, nodes, by_node, hash_, self.ctx.now())
        delete = list(plan.delete)
        for pod, node in plan.succeeded:
            self.recorder.event(
                ds,
                "Normal",
                "SucceededDaemonPod",
                f"Found succeeded daemon pod {_pod_name(pod)} on node {node}, "
                "will try to delete it",
            )
            delete.append(pod)
        retry: float | None = None
        now = self.ctx.clock.monotonic()
        generation = int((ds.get("status") or {}).get("observedGeneration") or 0)
        for pod, node in plan.failed:
            backoff_key = f"{uid_of(ds)}/{generation}/{node}"
            if self.failed_backoff.in_backoff(backoff_key, now):
                retry = _sooner(retry, self.failed_backoff.delay(backoff_key))
                continue
            self.failed_backoff.next(backoff_key, now)
            self.recorder.event(
                ds,
                "Warning",
                "FailedDaemonPod",
                f"Found failed daemon pod {_pod_name(pod)} on node {node}, will try to kill it",
            )
            delete.append(pod)
        await self._sync_nodes(ds, key, delete, plan.create_on, hash_)
        return retry

    async def _adopt_in_place(
        self,
        ds: Obj,
        by_node: dict[str, list[Obj]],
        hash_: str,
        current: Obj,
        old: list[Obj],
    ) -> dict[str, list[Obj]]:
        """The in-place rule: relabel the old pods that a resize brings to the update
        revision; the returned grouping has them as they are now (of the new revision), so
        the rolling update replaces only the others and spends no budget on them."""
        generation = m.template_generation(ds)
        adoptions = m.in_place_adoptions(by_node, [*old, current], current, hash_, generation)
        if not adoptions:
            return by_node
        moved: dict[str, Obj] = {}
        for pod, labels in adoptions:
            updated = await adopt_revision(self.client, pod, labels)
            moved[uid_of(pod)] = updated
            log.info(
                "%s: pod %s moved to revision %s in place",
                key_of(ds),
                _pod_name(pod),
                hash_,
            )
        return {node: [moved.get(uid_of(p), p) for p in pods] for node, pods in by_node.items()}

    async def _sync_nodes(
        self,
        ds: Obj,
        key: str,
        delete: Sequence[Obj],
        create_on: Sequence[str],
        hash_: str,
    ) -> None:
        """Upstream's ``syncNodes``: expectations first, creates in slow-start batches,
        then the deletes; the first error is raised once everything was tried."""
        create_on = list(create_on)[: self.burst]
        delete = list(delete)[: self.burst]
        self.creations.expect_creations(key, len(create_on))
        self.deletions.expect_deletions(key, [key_of(p) for p in delete])
        errors: list[BaseException] = []
        template = m.daemon_pod_template(ds, hash_)
        done = 0
        for size in slow_start_batches(len(create_on)):
            batch = create_on[done : done + size]
            done += size
            results = await asyncio.gather(
                *(self._create(ds, template, node) for node in batch), return_exceptions=True
            )
            failed = [r for r in results if isinstance(r, BaseException)]
            for result in failed:
                if not isinstance(result, (APIError, ConnectionError)):
                    raise result
            if failed:
                # Neither the failed creates nor the skipped batches will be observed.
                self.creations.lower_creations(key, len(failed) + len(create_on) - done)
                errors.extend(failed)
                break
        deleted = await asyncio.gather(
            *(self.pod_control.delete(ds, pod) for pod in delete), return_exceptions=True
        )
        for pod, outcome in zip(delete, deleted, strict=True):
            if isinstance(outcome, (APIError, ConnectionError)):
                self.deletions.deletion_observed(key, key_of(pod))
                if not isinstance(outcome, APINotFoundError):
                    errors.append(outcome)
            elif isinstance(outcome, BaseException):
                raise outcome
        if errors:
            raise errors[0]

    async def _create(self, ds: Obj, template: Mapping[str, Any], node: str) -> Obj:
        spec = m.with_node_affinity(template.get("spec") or {}, node)
        pod = pod_from_template({**template, "spec": spec}, ds)
        return await self.pod_control.create(ds, pod)

    # -- history -----------------------------------------------------------------------------

    async def _history(self, ds: Obj) -> tuple[Obj, list[Obj]]:
        """Upstream's ``constructHistory``: the revision of the current template (made if
        missing, deduplicated, renumbered the newest) and the old ones."""
        revisions = await self._controlled_revisions(ds)
        current, old = m.split_history(ds, revisions)
        number = max((int(r.get("revision") or 0) for r in old), default=0) + 1
        if not current:
            return await self._snapshot(ds, number), old
        kept = await self._dedup(ds, current)
        if int(kept.get("revision") or 0) < number:
            kept = await renumber_revision(self.client, kept, number)
        return kept, old

    async def _controlled_revisions(self, ds: Obj) -> list[Obj]:
        async def can_adopt() -> bool:
            return await self._still_there(ds)

        namespace = ds["metadata"].get("namespace") or ""
        ownership = Ownership(
            self.client, CONTROLLERREVISIONS, ds, selector_of(ds), can_adopt=can_adopt
        )
        claimed = await ownership.claim(self.revisions.by_index(NAMESPACE_INDEX, namespace))
        out: list[Obj] = []
        for revision in claimed:
            meta = revision.get("metadata") or {}
            if m.REVISION_HASH_LABEL not in (meta.get("labels") or {}):
                # A revision from before revisions were labelled: its name is its hash.
                labels = {**(meta.get("labels") or {}), m.REVISION_HASH_LABEL: meta["name"]}
                body = {**revision, "metadata": {**meta, "labels": labels}}
                revision = await self.client.update(CONTROLLERREVISIONS, body)
            out.append(revision)
        return out

    async def _dedup(self, ds: Obj, current: list[Obj]) -> Obj:
        """Several revisions with the current template: keep the newest, move the pods of
        the others to its hash, delete them (upstream's ``dedupCurHistories``)."""
        if len(current) == 1:
            return current[0]
        keep = max(current, key=lambda r: int(r.get("revision") or 0))
        keep_hash = keep["metadata"]["labels"][m.REVISION_HASH_LABEL]
        for pod in await self._daemon_pods(ds):
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if labels.get(m.REVISION_HASH_LABEL) != keep_hash:
                await self.client.patch(
                    PODS,
                    pod["metadata"]["name"],
                    {"metadata": {"labels": {m.REVISION_HASH_LABEL: keep_hash}}},
                    namespace=pod["metadata"]["namespace"],
                )
        for revision in current:
            if revision["metadata"]["name"] != keep["metadata"]["name"]:
                await self._delete_revision(revision)
        return keep

    async def _snapshot(self, ds: Obj, number: int) -> Obj:
        """Record the current template as revision ``number``, named by its hash (upstream's
        ``snapshot``). The name taken by another template is a hash collision: the
        collision count is bumped, which changes the hash, and the sync is retried."""
        template = (ds.get("spec") or {}).get("template") or {}
        collisions = (ds.get("status") or {}).get("collisionCount")
        hash_ = pod_template_hash(template, collisions)
        revision = new_revision(ds, template, number, hash_=hash_)
        meta = ds["metadata"]
        try:
            created: Obj = await self.client.create(
                CONTROLLERREVISIONS, revision, namespace=meta["namespace"]
            )
            return created
        except APIAlreadyExistsError:
            name = revision["metadata"]["name"]
            existing: Obj = await self.client.get(
                CONTROLLERREVISIONS, name, namespace=meta["namespace"]
            )
            if m.matches_revision(ds, existing):
                return existing
        fresh = await self.client.get(DAEMONSETS, meta["name"], namespace=meta["namespace"])
        stored = (fresh.get("status") or {}).get("collisionCount")
        if stored != collisions:
            raise RuntimeError(
                f"found a stale collision count ({collisions}, expected {stored}) of "
                f'DaemonSet "{meta["name"]}" while processing; will retry until it is updated'
            )
        bumped = int(stored or 0) + 1
        fresh["status"] = {**(fresh.get("status") or {}), "collisionCount": bumped}
        await self.client.update(DAEMONSETS, fresh, subresource="status")
        raise RuntimeError(
            f"found a hash collision for DaemonSet {meta['name']}: "
            f"bumped collisionCount to {bumped} to resolve it"
        )

    async def _clean_history(self, ds: Obj, old: list[Obj]) -> None:
        pods = await self._daemon_pods(ds)
        live = [
            p for ps in m.pods_by_node(pods, include_deleted_terminal=True).values() for p in ps
        ]
        for revision in m.history_to_clean(ds, old, live):
            await self._delete_revision(revision)

    async def _delete_revision(self, revision: Mapping[str, Any]) -> None:
        meta = revision.get("metadata") or {}
        try:
            await self.client.delete(
                CONTROLLERREVISIONS, str(meta.get("name")), namespace=meta.get("namespace")
            )
        except APINotFoundError:
            pass

    # -- status ------------------------------------------------------------------------------

    async def _write_status(
        self, ds: Obj, nodes: Sequence[Obj], hash_: str, *, observed: bool
    ) -> float | None:
        """Upstream's ``updateDaemonSetStatus``, written through the one status loop: the
        counts from the pods as cached now, ``observedGeneration`` only when this sync acted
        on the generation. Returns when to look again for pods turning available."""
        by_node = m.pods_by_node(await self._daemon_pods(ds))
        counts = m.daemon_set_status(ds, nodes, by_node, hash_, self.ctx.now())
        latest: dict[str, Obj] = {"ds": ds}

        def compute(current: Mapping[str, Any]) -> StatusPatch | None:
            if m.status_unchanged(current, counts):
                return None
            status: Obj = {**(current.get("status") or {}), **counts}
            if observed:
                # The generation this sync acted on, even when a newer one came meanwhile.
                status["observedGeneration"] = (ds.get("metadata") or {}).get("generation")
            return StatusPatch(status, guarded=True)

        async def send(body: Obj) -> Obj:
            updated: Obj = await self.client.update(
                DAEMONSETS, {**latest["ds"], "status": body["status"]}, subresource="status"
            )
            return updated

        async def reread() -> Obj:
            meta = ds["metadata"]
            fresh: Obj = await self.client.get(
                DAEMONSETS, meta["name"], namespace=meta["namespace"]
            )
            latest["ds"] = fresh
            return fresh

        await write_status(ds, compute, send=send, reread=reread)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and counts["numberReady"] != counts["numberAvailable"]:
            return float(min_ready)
        return None


def _pod_name(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _sooner(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
