"""The workload-resize controller: bring a workload's running pods to its template's resources
in place, through ``pods/resize``, and report how far it got.

It works on the objects that *own* pods — ReplicaSets, Jobs, StatefulSets and DaemonSets — and
never on how they came to change, so it runs the same whether this project's controllers own
them or upstream's do (``inplace controller-manager --controllers=workload-resize`` on a real
cluster). Progress is reported on the top-level workload: the Deployment that owns a
ReplicaSet, else the ReplicaSet; the Job; the StatefulSet; the DaemonSet.

A StatefulSet's or DaemonSet's pods are resized only once they are at its update revision:
its controller moves a pod there by relabelling it when the change is in-place-able
(:mod:`.revisions`), and replaces it otherwise; a pod still at an older revision (waiting for
its replacement, or held by a ``partition``) keeps the size it was made with.

For every pod whose spec differs from its owner's template in cpu or memory it
sends one ``pods/resize`` patch; the scheduler's arbiter (or a kubelet) decides each. It then
follows the pods' conditions: at size, resizing, or waiting (``Deferred``/``Infeasible`` with
the reason). An ``InPlacePreferred`` pod that has waited longer than ``replace_after`` is
evicted through the Eviction API (disruption budgets apply; a 429 is reported naming the
budget) when its new size fits another node; its owner recreates it from the template, at the
new size. The ``PodsResized`` condition carries the counts; events mark the start, the end,
waits and moves. Patches are remembered per pod and fingerprint so a burst of events never
sends one twice; after a restart the pods' specs say what was already sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from inplace.api.annotations import (
    IN_PLACE_ONLY,
    IN_PLACE_PREFERRED,
    RESIZE_STATUS,
    resize_policy,
)
from inplace.api.podtemplates import effective_template
from inplace.api.timestamps import rfc3339
from inplace.api.vpa_policy import OFF, update_mode
from inplace.api.vpa_targets import Lookup, Target, controlling_vpa, resolve_target
from inplace.client import (
    DAEMONSETS,
    DEPLOYMENTS,
    JOBS,
    NODES,
    PODS,
    REPLICASETS,
    STATEFULSETS,
    VERTICALPODAUTOSCALERS,
    APIError,
    APIInvalidError,
    APINotFoundError,
    APITooManyRequestsError,
    Resource,
    WorkQueue,
    key_of,
    run_workers,
)

from ..base import NAMESPACE_INDEX, NODE_INDEX, Context
from ..pods import (
    CONTROLLER_INDEX,
    controller_of,
    is_active,
    is_terminating,
    uid_of,
    with_type,
)
from ..workloads import WorkloadLookup
from .model import (
    CONDITION,
    ContainerWant,
    PodState,
    Progress,
    State,
    desired_resources,
    fingerprint,
    fits_elsewhere,
    pod_state,
    progress_condition,
    resize_patch,
    should_replace,
    summarize,
)

__all__ = ["REPLACE_AFTER", "WorkloadResizeController", "sized_by_vpa"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

REPLACE_AFTER = 30.0
"""Seconds an ``InPlacePreferred`` pod may wait (Deferred/Infeasible) before it is replaced."""
_KINDS: dict[str, Resource] = {
    "Deployment": DEPLOYMENTS,
    "ReplicaSet": REPLICASETS,
    "Job": JOBS,
    "StatefulSet": STATEFULSETS,
    "DaemonSet": DAEMONSETS,
}
_POD_OWNERS = ("ReplicaSet", "Job", "StatefulSet", "DaemonSet")
"""The kinds whose template the pods they control are made from."""
_REVISION_HASH = "controller-revision-hash"
_TEMPLATE_GENERATION = "pod-template-generation"
_DAEMONSET_GENERATION = "deprecated.daemonset.template.generation"
_STATUS_EVERY = 1.0
POD_BATCH_PERIOD = 0.1
"""Seconds pod events of one workload are gathered before it is reconciled."""


def sized_by_vpa(
    pod: Mapping[str, Any],
    vpas: Iterable[Mapping[str, Any]],
    lookup: Lookup,
    targets: Mapping[tuple[str, str], Target] | None = None,
) -> bool:
    """A VerticalPodAutoscaler sizes ``pod``: its controlling VPA by the shared rule
    (:func:`inplace.api.vpa_targets.controlling_vpa`, the one the VPA updater and admission
    use) is in any mode but ``Off``. The template's resources are then only where new pods
    start (as upstream), so the pod is not resized to them. A VPA whose target cannot be
    read, or a younger one on the same target, sizes nothing."""
    vpa = controlling_vpa(pod, vpas, lookup, targets)
    return vpa is not None and update_mode(vpa) != OFF


@dataclass
class _Round:
    """What this process knows about one workload's current resize round."""

    fingerprint: str = ""
    moved: int = 0
    counted: set[str] = field(default_factory=set)
    started: bool = False
    announced: str = ""
    """The fingerprint whose start was announced (ResizeStarted)."""
    reported_done: bool = False
    last_write: float = 0.0
    announced_waits: set[str] = field(default_factory=set)


class WorkloadResizeController:
    name = "workload-resize"
    workers = 4

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.client = ctx.client
        self.queue: WorkQueue[str] = WorkQueue(clock=ctx.clock, name=self.name)
        self.pods = ctx.informer(PODS)
        self.replica_sets = ctx.informer(REPLICASETS)
        self.deployments = ctx.informer(DEPLOYMENTS)
        self.jobs = ctx.informer(JOBS)
        self.stateful_sets = ctx.informer(STATEFULSETS)
        self.daemon_sets = ctx.informer(DAEMONSETS)
        self.owners = {
            "ReplicaSet": self.replica_sets,
            "Job": self.jobs,
            "StatefulSet": self.stateful_sets,
            "DaemonSet": self.daemon_sets,
        }
        self.nodes = ctx.informer(NODES)
        self.recorder = ctx.recorder("workload-resize-controller")
        self.replace_after = float(ctx.options.get("resize_replace_after", REPLACE_AFTER))
        self.concurrency = asyncio.Semaphore(int(ctx.options.get("resize_concurrency", 64)))
        self.sent: dict[str, str] = {}
        """Pod uid → fingerprint of the resize patch sent (until the informer shows it)."""
        self.refused: dict[str, tuple[str, str]] = {}
        """Pod uid → (fingerprint, message) of a resize the API server refused."""
        self.blocked: dict[str, str] = {}
        """Pod uid → why its replacement's eviction was refused (a budget's 429)."""
        self.rounds: dict[str, _Round] = {}
        self.assessed: dict[str, tuple[str, str, Obj | None, PodState]] = {}
        """Pod uid → (resourceVersion, fingerprint, resize patch, state): see _assess."""
        self.replica_sets.add_handler(
            lambda obj: self._owner_changed("ReplicaSet", obj),
            lambda old, new: self._owner_changed("ReplicaSet", new, old),
        )
        for kind in ("Job", "StatefulSet", "DaemonSet"):
            self._watch_owner(kind)
        self.deployments.add_handler(
            lambda d: None, lambda old, new: None, lambda d: self._forget(f"Deployment/{key_of(d)}")
        )
        self.pods.add_handler(self._pod_added, self._pod_updated, self._pod_deleted)
        self.vpas = ctx.informer(VERTICALPODAUTOSCALERS)
        self.workloads = WorkloadLookup(ctx)
        self.vpas.add_handler(
            self._vpa_changed, lambda _o, n: self._vpa_changed(n), self._vpa_changed
        )

    def _watch_owner(self, kind: str) -> None:
        def added(obj: Obj) -> None:
            self._owner_changed(kind, obj)

        def updated(old: Obj, new: Obj) -> None:
            self._owner_changed(kind, new, old)

        def deleted(obj: Obj) -> None:
            self._forget(f"{kind}/{key_of(obj)}")

        self.owners[kind].add_handler(added, updated, deleted)

    # -- keys ----------------------------------------------------------------------------

    def _vpa_changed(self, vpa: Obj) -> None:
        ref = (vpa.get("spec") or {}).get("targetRef") or {}
        if ref.get("kind") in _KINDS and ref.get("name"):
            namespace = (vpa.get("metadata") or {}).get("namespace")
            self.queue.add(f"{ref['kind']}/{namespace}/{ref['name']}")

    def _outside_vpa(
        self, workload: Obj, groups: list[tuple[Obj, list[Obj]]]
    ) -> list[tuple[Obj, list[Obj]]] | None:
        """``groups`` without the pods a VerticalPodAutoscaler sizes (:func:`sized_by_vpa`);
        None when it sizes every one of them (the workload is left alone, not reported)."""
        namespace = str((workload.get("metadata") or {}).get("namespace") or "")
        vpas = self.vpas.by_index(NAMESPACE_INDEX, namespace)
        if not vpas:
            return groups
        targets = {
            (namespace, str((v.get("metadata") or {}).get("name") or "")): resolve_target(
                v, self.workloads
            )
            for v in vpas
        }
        kept = [
            (owner, [p for p in pods if not sized_by_vpa(p, vpas, self.workloads, targets)])
            for owner, pods in groups
        ]
        if any(pods for _, pods in groups) and not any(pods for _, pods in kept):
            return None
        return kept

    def _top_key(self, kind: str, obj: Mapping[str, Any]) -> str | None:
        """The key of the workload that reports for ``obj`` (one of :data:`_POD_OWNERS`)."""
        if kind == "ReplicaSet":
            ref = controller_of(obj)
            if ref is not None and ref.get("kind") == "Deployment":
                namespace = (obj.get("metadata") or {}).get("namespace")
                return f"Deployment/{namespace}/{ref.get('name')}"
        if kind not in _POD_OWNERS:
            return None
        return f"{kind}/{key_of(dict(obj))}"

    def _pod_top(self, pod: Mapping[str, Any]) -> str | None:
        ref = controller_of(pod)
        if ref is None:
            return None
        namespace = (pod.get("metadata") or {}).get("namespace")
        kind = str(ref.get("kind"))
        if kind == "ReplicaSet":
            rs = self.replica_sets.get(f"{namespace}/{ref.get('name')}")
            if rs is None:
                return None
            return self._top_key("ReplicaSet", rs)
        if kind in _POD_OWNERS:
            return f"{kind}/{namespace}/{ref.get('name')}"
        return None

    # -- handlers ----------------------------------------------------------------------------

    def _owner_changed(self, kind: str, obj: Obj, old: Obj | None = None) -> None:
        if old is not None and _revision_of(kind, old) == _revision_of(kind, obj):
            return
        key = self._top_key(kind, obj)
        if key is not None:
            self.queue.add(key)

    def _pod_added(self, pod: Obj) -> None:
        key = self._pod_top(pod)
        if key is not None:
            # Pod events come in bursts (every pod of a workload resizes at once): one
            # reconcile per batch period looks at all of them.
            self.queue.add_after(key, POD_BATCH_PERIOD)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if is_terminating(new) and not is_terminating(old):
            self._maybe_moved(new)
        self._pod_added(new)

    def _pod_deleted(self, pod: Obj) -> None:
        self._maybe_moved(pod)
        uid = uid_of(pod)
        self.sent.pop(uid, None)
        self.refused.pop(uid, None)
        self.blocked.pop(uid, None)
        self.assessed.pop(uid, None)
        self._pod_added(pod)

    def _maybe_moved(self, pod: Obj) -> None:
        """A pod going away mid-resize under InPlacePreferred was moved (the scheduler's
        arbiter or this controller evicted it so its owner recreates it at the new size)."""
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if resize_policy(annotations) != IN_PLACE_PREFERRED:
            return
        key = self._pod_top(pod)
        if key is None:
            return
        round_ = self.rounds.get(key)
        if round_ is None or not round_.fingerprint:
            return
        want = self._want_for_pod(pod)
        if want is None or pod_state(pod, want).state is State.AT_SIZE:
            return
        uid = uid_of(pod)
        if uid not in round_.counted:
            round_.counted.add(uid)
            round_.moved += 1

    def _forget(self, key: str) -> None:
        self.rounds.pop(key, None)

    def _want_for_pod(self, pod: Mapping[str, Any]) -> dict[str, ContainerWant] | None:
        ref = controller_of(pod)
        if ref is None:
            return None
        namespace = (pod.get("metadata") or {}).get("namespace")
        informer = self.owners.get(str(ref.get("kind")))
        owner = informer.get(f"{namespace}/{ref.get('name')}") if informer is not None else None
        if owner is None:
            return None
        return desired_resources(effective_template(owner))

    # -- reconcile ---------------------------------------------------------------------------

    def _groups(self, kind: str, workload: Obj) -> list[tuple[Obj, list[Obj]]]:
        """(template owner, its active pods) for every ReplicaSet or Job under ``workload``."""
        owners = [workload]
        if kind == "Deployment":
            owners = self.replica_sets.by_index(CONTROLLER_INDEX, uid_of(workload))
        return [
            (
                owner,
                [
                    p
                    for p in self.pods.by_index(CONTROLLER_INDEX, uid_of(owner))
                    if is_active(p) and at_update_revision(kind, owner, p)
                ],
            )
            for owner in owners
        ]

    async def reconcile(self, key: str) -> float | None:
        kind, _, name_key = key.partition("/")
        resource = _KINDS.get(kind)
        if resource is None:
            return None
        informer = self.deployments if kind == "Deployment" else self.owners[kind]
        workload = informer.get(name_key)
        if workload is None:
            self._forget(key)
            return None
        if kind == "Job" and _finished(workload):
            return None  # a finished Job's condition stays as it last was
        outside = self._outside_vpa(workload, self._groups(kind, workload))
        if outside is None:
            return None
        groups = outside
        fingerprints = []
        states: list[tuple[str, PodState]] = []
        patches: list[tuple[Obj, Obj, str]] = []
        replace: list[tuple[Obj, PodState]] = []
        now = self.ctx.now()
        policy = IN_PLACE_ONLY
        for owner, pods in groups:
            template = effective_template(owner)
            want = desired_resources(template)
            fp = fingerprint(want)
            if pods:
                fingerprints.append(fp)
            annotations = (template.get("metadata") or {}).get("annotations") or {}
            if resize_policy(annotations) == IN_PLACE_PREFERRED:
                policy = IN_PLACE_PREFERRED
            for pod in pods:
                uid = uid_of(pod)
                name = str(pod["metadata"]["name"])
                refused = self.refused.get(uid)
                if refused is not None and refused[0] == fp:
                    states.append((name, PodState(State.ERROR, refused[1])))
                    continue
                patch, state = self._assess(pod, want, fp)
                if patch is not None:
                    if self.sent.get(uid) != fp:
                        patches.append((pod, patch, fp))
                    states.append((name, PodState(State.RESIZING)))
                    continue
                self.sent.pop(uid, None)
                blocked = self.blocked.get(uid)
                if blocked and state.state in (State.DEFERRED, State.INFEASIBLE):
                    state = PodState(state.state, f"{state.message}; {blocked}", state.since)
                states.append((name, state))
                # The fit is asked last: it walks every node's pods.
                if should_replace(
                    pod, state, now=now, timeout=self.replace_after, fits_elsewhere=True
                ) and self._fits_elsewhere(pod):
                    replace.append((pod, state))
        round_fp = "+".join(sorted(set(fingerprints)))
        round_ = self._round(key, workload, round_fp)
        typed = with_type(workload, resource)
        if patches:
            await self._send(typed, patches, round_)
        for pod, state in replace:
            await self._replace(typed, pod, state, round_)
        progress = summarize(states, moved=round_.moved)
        existing = _condition(workload, CONDITION)
        if progress.total == 0:
            return None  # no running pod (yet, or any more): nothing to report on
        if not round_.started and existing is None and progress.done:
            return None  # never resized: nothing to report
        round_.started = True
        retry = await self._report(kind, typed, progress, policy, round_)
        waits = [s.since for _, s in states if s.state in (State.DEFERRED, State.INFEASIBLE)]
        if policy == IN_PLACE_PREFERRED and waits:
            soonest = min(s + self.replace_after for s in waits if s) if any(waits) else now + 5
            delay = max(1.0, soonest - now)
            retry = delay if retry is None else min(retry, delay)
        return retry

    def _assess(
        self, pod: Obj, want: dict[str, ContainerWant], fp: str
    ) -> tuple[Obj | None, PodState]:
        """:func:`resize_patch` and :func:`pod_state` of ``pod``, remembered per pod version
        and fingerprint: a workload of hundreds of pods is reconciled many times while they
        resize, and most pods have not changed between two reconciles."""
        uid = uid_of(pod)
        version = str((pod.get("metadata") or {}).get("resourceVersion") or "")
        memo = self.assessed.get(uid)
        if memo is not None and memo[0] == version and memo[1] == fp:
            return memo[2], memo[3]
        patch = resize_patch(pod, want)
        state = PodState(State.RESIZING) if patch is not None else pod_state(pod, want)
        self.assessed[uid] = (version, fp, patch, state)
        return patch, state

    def _round(self, key: str, workload: Obj, fp: str) -> _Round:
        round_ = self.rounds.get(key)
        if round_ is None:
            round_ = self.rounds[key] = _Round()
            saved = _saved_status(workload)
            if saved.get("resources") == fp:
                round_.fingerprint = fp
                round_.moved = int(saved.get("moved") or 0)
                round_.started = True
                round_.reported_done = _condition_status(workload, CONDITION) == "True"
        if fp and round_.fingerprint != fp:
            if round_.fingerprint:
                round_.moved = 0
                round_.counted.clear()
                round_.reported_done = False
                round_.announced_waits.clear()
            round_.fingerprint = fp
        return round_

    def _fits_elsewhere(self, pod: Obj) -> bool:
        nodes = self.nodes.list()
        pods_on = {
            str((n.get("metadata") or {}).get("name")): self.pods.by_index(
                NODE_INDEX, str((n.get("metadata") or {}).get("name"))
            )
            for n in nodes
        }
        return fits_elsewhere(pod, nodes, pods_on)

    async def _send(
        self, workload: Obj, patches: list[tuple[Obj, Obj, str]], round_: _Round
    ) -> None:
        if round_.announced != round_.fingerprint:
            round_.announced = round_.fingerprint
            self.recorder.event(
                workload,
                "Normal",
                "ResizeStarted",
                f"Resizing {len(patches)} pod(s) in place to the template's resources",
            )
        round_.reported_done = False

        async def one(pod: Obj, patch: Obj, fp: str) -> None:
            uid = uid_of(pod)
            meta = pod["metadata"]
            self.sent[uid] = fp
            async with self.concurrency:
                try:
                    await self.client.resize_pod(meta.get("namespace"), meta["name"], patch)
                except APINotFoundError:
                    self.sent.pop(uid, None)
                except APIInvalidError as exc:
                    self.sent.pop(uid, None)
                    self.refused[uid] = (fp, exc.message)
                    self.recorder.event(
                        workload,
                        "Warning",
                        "ResizeRefused",
                        f"Pod {meta['name']} cannot be resized in place: {exc.message}",
                    )
                except (APIError, ConnectionError):
                    self.sent.pop(uid, None)
                    raise
                else:
                    owner = f"{workload.get('kind')} {(workload.get('metadata') or {}).get('name')}"
                    self.recorder.event(
                        with_type(pod, PODS),
                        "Normal",
                        "ResizeRequested",
                        f"Resizing in place to the template of {owner}: {_sizes(patch)}",
                    )

        results = await asyncio.gather(*(one(*p) for p in patches), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise RuntimeError(f"{len(errors)} resize patch(es) failed: {errors[0]}")

    async def _replace(self, workload: Obj, pod: Obj, state: PodState, round_: _Round) -> None:
        meta = pod["metadata"]
        uid = uid_of(pod)
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": meta["name"], "namespace": meta.get("namespace")},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        try:
            await self.client.create(
                PODS, body, namespace=meta.get("namespace"), subresource="eviction"
            )
        except APITooManyRequestsError as exc:
            budget = str((exc.details or {}).get("name") or "")
            self.blocked[uid] = (
                f"not replaced: PodDisruptionBudget {budget or '(unknown)'} allows no "
                f"disruption now ({exc.message})"
            )
            return
        except APINotFoundError:
            return
        self.blocked.pop(uid, None)
        if uid not in round_.counted:
            round_.counted.add(uid)
            round_.moved += 1
        self.recorder.event(
            workload,
            "Normal",
            "ResizeReplacing",
            f"Pod {meta['name']} could not be resized in place ({state.state.value}: "
            f"{state.message}); evicted so that it is recreated with the new resources on a "
            "node where they fit (resize policy InPlacePreferred)",
        )

    async def _report(
        self, kind: str, workload: Obj, progress: Progress, policy: str, round_: _Round
    ) -> float | None:
        now_text = rfc3339(self.ctx.now())
        cond = progress_condition(progress, policy=policy, kind=kind, now=now_text)
        existing = _condition(workload, CONDITION)
        saved = {"resources": round_.fingerprint, "moved": round_.moved}
        same_saved = _saved_status(workload) == saved
        if existing is not None:
            if (
                existing.get("status") == cond["status"]
                and existing.get("reason") == cond["reason"]
                and existing.get("message") == cond["message"]
                and same_saved
            ):
                return None
            if existing.get("status") == cond["status"]:
                cond["lastTransitionTime"] = existing.get("lastTransitionTime")
            elapsed = time.monotonic() - round_.last_write
            if (
                existing.get("status") == cond["status"]
                and existing.get("reason") == cond["reason"]
                and same_saved
                and elapsed < _STATUS_EVERY
            ):
                return _STATUS_EVERY - elapsed  # counts only: coalesce writes
        meta = workload["metadata"]
        patch = {
            "metadata": {"annotations": {RESIZE_STATUS: orjson.dumps(saved).decode()}},
            "status": {"conditions": [cond]},
        }
        try:
            await self.client.patch(
                _KINDS[kind],
                meta["name"],
                patch,
                patch_type="strategic",
                namespace=meta.get("namespace"),
                subresource="status",
            )
        except APINotFoundError:
            return None
        round_.last_write = time.monotonic()
        typed = workload
        if progress.done and not round_.reported_done:
            round_.reported_done = True
            self.recorder.event(
                typed,
                "Normal",
                "PodsResized",
                f"All {progress.total} pod(s) at the template's resources: "
                f"{progress.in_place} resized in place, {progress.moved} moved",
            )
        for name, state in progress.waiting:
            tag = f"{name}:{state.state.value}"
            if tag not in round_.announced_waits:
                round_.announced_waits.add(tag)
                self.recorder.event(
                    typed,
                    "Warning",
                    "ResizePending",
                    f"Pod {name} is waiting to be resized ({state.state.value}): {state.message}",
                )
        return None

    async def run(self) -> None:
        try:
            await run_workers(self.queue, self.reconcile, self.workers)
        finally:
            self.queue.shutdown()


def _sizes(patch: Mapping[str, Any]) -> str:
    """A resize patch's containers and their new requests and limits, for an event."""
    parts = []
    for container in (patch.get("spec") or {}).get("containers") or ():
        resources = container.get("resources") or {}
        wanted = ", ".join(
            f"{kind} {name}={value}"
            for kind in ("requests", "limits")
            for name, value in sorted((resources.get(kind) or {}).items())
        )
        parts.append(f"{container.get('name')} ({wanted})")
    return "; ".join(parts)


def _revision_of(kind: str, owner: Mapping[str, Any]) -> Any:
    """What, when it changes on an owner, may change the size its pods should have: the
    template (with a Job's recorded resources), and for a StatefulSet the update revision
    its pods are moved to."""
    template = effective_template(owner)
    if kind == "StatefulSet":
        return template, (owner.get("status") or {}).get("updateRevision")
    return template


def at_update_revision(kind: str, owner: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """``pod`` is made from, or was moved to, ``owner``'s current template: always for a
    ReplicaSet or Job (one template); for a StatefulSet its revision label names the update
    revision; for a DaemonSet its template generation is the set's (upstream's
    ``IsPodUpdated``, by generation: the revision hash is the controller's to compute)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if kind == "StatefulSet":
        update = (owner.get("status") or {}).get("updateRevision")
        return bool(update) and labels.get(_REVISION_HASH) == update
    if kind == "DaemonSet":
        annotations = (owner.get("metadata") or {}).get("annotations") or {}
        generation = annotations.get(_DAEMONSET_GENERATION)
        return generation is not None and labels.get(_TEMPLATE_GENERATION) == str(generation)
    return True


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return cond  # type: ignore[no-any-return]
    return None


def _condition_status(obj: Mapping[str, Any], kind: str) -> str | None:
    cond = _condition(obj, kind)
    return None if cond is None else str(cond.get("status"))


def _finished(job: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or ()
    )


def _saved_status(obj: Mapping[str, Any]) -> dict[str, Any]:
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(RESIZE_STATUS)
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
