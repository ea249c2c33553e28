"""The vertical pod autoscaler, live: upstream's recommender and updater in the controller
manager, thin over the pure code of this package.

* **Inputs.** Every ``metrics_interval`` (5 s, the node agents' sampling period) one LIST of
  ``metrics.k8s.io`` PodMetrics, as upstream's recommender reads metrics-server, feeds each
  matched container's CPU and memory to the :class:`~.recommender.Recommender`. The pod
  informer delivers OOM kills (``lastState.terminated.reason: OOMKilled``) and pauses at the
  memory limit (``MemoryPaused=True``), each recorded once, as upstream records an OOM.
* **Recommender.** Every ``recommender_interval`` each VPA's target is resolved
  (:mod:`inplace.api.vpa_targets`), and its ``status`` (recommendation and conditions,
  :mod:`.status`) written when it changed. Checkpoints are loaded before the first pass and
  written every ``checkpoint_interval``; those of deleted VPAs are garbage-collected.
* **Updater.** Every ``updater_interval`` :func:`~.updater.decide` runs for each VPA over
  the pods it controls (:func:`pods_to_update`: those whose controlling VPA it is, by
  :func:`inplace.api.vpa_targets.controlling_vpa`, the rule the memory-pause responder goes
  by too) and its decisions are carried out: ``pods/resize`` for an in-place resize, the
  Eviction API (disruption budgets apply) for an eviction, with upstream's events on the pod
  and the VPA.
* **Reaction in seconds.** An OOM kill or a pause wakes both at once for that VPA: the
  recommendation is recomputed with the bump, written, and the updater resizes the pod in
  place, its requests capped by what is free on its node (maxAllowed caps the
  recommendation already).
* **One recommender among others.** With ``vpa_recommender_name`` (``inplace operator
  --vpa-recommender-name``) it recommends for, checkpoints and updates only the VPAs whose
  ``spec.recommenders`` name it (:func:`~.inputs.selects_recommender`, upstream's rule), and
  only pods whose controlling VPA is one of those; unset (``inplace up``), every VPA is its.
* **Usage without metrics-server.** Where ``metrics.k8s.io`` is not served (a real cluster
  without metrics-server), each Node's kubelet Summary API is read through the API server's
  node proxy (``/api/v1/nodes/NAME/proxy/stats/summary``) and turned into the PodMetrics
  metrics-server would serve (:mod:`inplace.controllers.usage`, shared with the rescuer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from inplace.api.annotations import ORIGINAL_RESOURCES
from inplace.api.timestamps import rfc3339
from inplace.api.vpa_policy import pod_recommendations
from inplace.api.vpa_targets import Lookup, Target, controlling_vpa, pod_matches, resolve_target
from inplace.client import (
    NODES,
    PODS,
    VERTICALPODAUTOSCALERCHECKPOINTS,
    VERTICALPODAUTOSCALERS,
    APIAlreadyExistsError,
    APIError,
    APINotFoundError,
    APITooManyRequestsError,
    key_of,
)

from ..base import NAMESPACE_INDEX, NODE_INDEX, Context
from ..pods import with_type
from ..usage import PodMetricsSource
from ..workloads import WorkloadLookup
from .checkpoint import checkpoint_objects, checkpoint_patch, load_checkpoints
from .fit import fit_to_node
from .headroom import LIMIT_DECREASE_FORBIDDEN, keeping_memory_limits
from .inputs import (
    container_memory,
    cpu_request_millicores,
    memory_at_event,
    oom_kills,
    paused_containers,
    selects_recommender,
    usage_samples,
)
from .recommend import confidence
from .recommender import ContainerKey, Recommender, VpaKey
from .settings import RecommenderSettings, UpdaterSettings, variant
from .status import same_status, vpa_status
from .updater import Action, Decision, UpdaterMemory, decide, pod_priority

__all__ = ["RECOMMENDER", "UPDATER", "VpaController", "live_settings", "pods_to_update"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

RECOMMENDER = "vpa-recommender"
UPDATER = "vpa-updater"
"""The events' sources (upstream's component names)."""


def live_settings(
    options: Mapping[str, Any],
) -> tuple[RecommenderSettings, UpdaterSettings, float]:
    """The settings the controller manager's ``--vpa-*`` flags select: a named variant
    (:data:`~.settings.VARIANTS`, ``inplace`` by default) with the loop intervals replaced."""
    recommender, updater = variant(str(options.get("vpa_variant") or "inplace"))
    if options.get("vpa_recommender_interval") is not None:
        recommender = replace(
            recommender, recommender_interval=float(options["vpa_recommender_interval"])
        )
    if options.get("vpa_checkpoint_interval") is not None:
        recommender = replace(
            recommender, checkpoint_interval=float(options["vpa_checkpoint_interval"])
        )
    if options.get("vpa_updater_interval") is not None:
        updater = replace(updater, updater_interval=float(options["vpa_updater_interval"]))
    metrics = float(options.get("vpa_metrics_interval") or 5.0)
    return recommender, updater, metrics


class VpaController:
    name = "vertical-pod-autoscaler"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.client = ctx.client
        settings, self.updater_settings, self.metrics_interval = live_settings(ctx.options)
        self.recommender = Recommender(settings)
        self.memory = UpdaterMemory()
        self.pods = ctx.informer(PODS)
        self.vpas = ctx.informer(VERTICALPODAUTOSCALERS)
        self.nodes = ctx.informer(NODES)
        self.lookup = WorkloadLookup(ctx)
        self.owners = self.lookup.informers
        self.recommender_events = ctx.recorder(RECOMMENDER)
        self.updater_events = ctx.recorder(UPDATER)
        self.targets: dict[VpaKey, Target] = {}
        self.written: dict[VpaKey, Obj] = {}
        """The status last written for each VPA (the informer may not show it yet)."""
        self.written_over: dict[VpaKey, str] = {}
        """The resourceVersion each of those writes replaced (the cache lags while it shows
        that one; once it shows another, someone else may have changed the status)."""
        self.seen_events: set[tuple[str, str, float]] = set()
        """(pod uid, container, time) of OOM kills and pauses already recorded."""
        self.urgent: set[VpaKey] = set()
        self.held: dict[VpaKey, str] = {}
        """Why each VPA's pods were last held back by minReplicas (said once per reason)."""
        self.wake = asyncio.Event()
        name = ctx.options.get("vpa_recommender_name")
        self.recommender_name: str | None = str(name) if name else None
        """Whose VPAs these are (None: every VPA's, as in ``inplace up``)."""
        self.usage = PodMetricsSource(self.client, self.nodes, self.name)
        self.pods.add_handler(self._pod_seen, lambda _old, new: self._pod(new), self._pod_gone)
        self.vpas.add_handler(None, None, self._vpa_gone)

    # -- lookups -----------------------------------------------------------------------------

    def chosen(self, vpa: Mapping[str, Any]) -> bool:
        """Whether this recommender acts for ``vpa`` (see ``recommender_name``)."""
        return self.recommender_name is None or selects_recommender(vpa, self.recommender_name)

    def chosen_vpas(self) -> list[Obj]:
        return [v for v in self.vpas.list() if self.chosen(v)]

    def target(self, vpa: Obj) -> Target:
        return resolve_target(vpa, self.lookup)

    def vpa_of(self, pod: Obj) -> tuple[VpaKey, Mapping[str, Any]] | None:
        """The VPA whose history the pod's usage feeds: its controlling VPA (among all of
        them, as upstream's updater picks it), when that VPA is one this recommender acts for."""
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        vpas = self.vpas.by_index(NAMESPACE_INDEX, namespace)
        vpa = controlling_vpa(pod, vpas, self.lookup, self.targets)
        return (_key(vpa), vpa) if vpa is not None and self.chosen(vpa) else None

    def pods_of(self, vpa: Obj, target: Target) -> list[Obj]:
        namespace = str((vpa.get("metadata") or {}).get("namespace") or "")
        return [
            p
            for p in self.pods.by_index(NAMESPACE_INDEX, namespace)
            if pod_matches(p, vpa, target, self.lookup)
        ]

    # -- informer handlers (quick; only record and wake) ---------------------------------------

    def _pod_seen(self, pod: Obj) -> None:
        """A pod as first listed: OOM kills and pauses it already shows happened before this
        process started (its predecessor recorded them, and the checkpoints hold them), so
        they are noted, not recorded again; as upstream's OOM observer, only changes count."""
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        for container, at in [*oom_kills(pod), *paused_containers(pod)]:
            self.seen_events.add((uid, container, at))

    def _pod(self, pod: Obj) -> None:
        events = [(c, at, True) for c, at in oom_kills(pod)]
        events += [(c, at, False) for c, at in paused_containers(pod)]
        if not events:
            return
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        fresh = [(c, at, kill) for c, at, kill in events if (uid, c, at) not in self.seen_events]
        if not fresh:
            return
        found = self.vpa_of(pod)
        if found is None:
            return
        key, _ = found
        for container, at, kill in fresh:
            self.seen_events.add((uid, container, at))
            request, limit = container_memory(pod, container)
            used = memory_at_event(request, limit, kill=kill)
            if self.recommender.record_oom(key, ContainerKey(uid, container), at, used):
                log.info(
                    "%s %s/%s: %s of container %s recorded",
                    self.name,
                    *key,
                    "OOM kill" if kill else "memory pause",
                    container,
                )
                self.urgent.add(key)
        if self.urgent:
            self.wake.set()

    def _pod_gone(self, pod: Obj) -> None:
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        self.recommender.forget_pod(uid)
        self.memory.forget(key_of(pod), uid)
        self.seen_events = {e for e in self.seen_events if e[0] != uid}

    def _vpa_gone(self, vpa: Obj) -> None:
        key = _key(vpa)
        self.recommender.forget_vpa(key)
        self.targets.pop(key, None)
        self.written.pop(key, None)
        self.written_over.pop(key, None)
        self.held.pop(key, None)

    # -- loops ---------------------------------------------------------------------------------

    async def run(self) -> None:
        await self._load_checkpoints()
        loops = [
            self._metrics_loop(),
            self._recommend_loop(),
            self._update_loop(),
            self._checkpoint_loop(),
        ]
        tasks = [asyncio.create_task(c) for c in loops]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _every(self, seconds: float, step: Any, what: str) -> None:
        while True:
            try:
                await step()
            except APIError as exc:
                log.warning("%s: %s failed: %s", self.name, what, exc)
            except Exception:
                # One VPA's bad data must not stop the other controllers of the manager.
                log.exception("%s: %s failed", self.name, what)
            await asyncio.sleep(seconds)

    async def _metrics_loop(self) -> None:
        await self._every(self.metrics_interval, self.read_metrics, "reading PodMetrics")

    async def _update_loop(self) -> None:
        await asyncio.sleep(self.updater_settings.updater_interval)
        await self._every(self.updater_settings.updater_interval, self.update_all, "updating")

    async def _checkpoint_loop(self) -> None:
        interval = self.recommender.settings.checkpoint_interval
        await asyncio.sleep(interval)
        await self._every(interval, self.write_checkpoints, "writing checkpoints")

    async def _recommend_loop(self) -> None:
        interval = self.recommender.settings.recommender_interval
        next_pass = 0.0
        while True:
            now = time.monotonic()
            self.wake.clear()  # before the work: a wake-up during it is not lost
            try:
                if now >= next_pass:
                    next_pass = now + interval
                    await self.recommend_all()
                if self.urgent:
                    await self.react()
            except APIError as exc:
                log.warning("%s: recommendation pass failed: %s", self.name, exc)
            except Exception:
                log.exception("%s: recommendation pass failed", self.name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), max(next_pass - time.monotonic(), 0.01))

    # -- the recommender -----------------------------------------------------------------------

    async def read_metrics(self) -> None:
        for metrics in await self.pod_metrics():
            meta = metrics.get("metadata") or {}
            pod = self.pods.get(f"{meta.get('namespace')}/{meta.get('name')}")
            if pod is None or (pod.get("status") or {}).get("phase") != "Running":
                continue
            found = self.vpa_of(pod)
            if found is None:
                continue
            key, _ = found
            uid = str((pod.get("metadata") or {}).get("uid") or "")
            for sample in usage_samples(metrics):
                _, limit = container_memory(pod, sample.container)
                self.recommender.add_sample(
                    key,
                    ContainerKey(uid, sample.container),
                    sample.at,
                    cpu_millicores=sample.cpu_millicores,
                    memory_bytes=sample.memory_bytes,
                    cpu_request_millicores=cpu_request_millicores(pod, sample.container),
                    memory_limit_bytes=limit,
                )

    async def pod_metrics(self) -> list[Obj]:
        """Every pod's PodMetrics: metrics.k8s.io's, else the nodes' Summary API's."""
        return await self.usage.read()

    def _low_confidence(self, key: VpaKey) -> bool:
        settings = self.recommender.settings
        return any(
            confidence(state, settings.confidence_interval_memory) < 1.0
            or confidence(state, settings.confidence_interval_cpu) < 1.0
            for state in self.recommender.aggregates(key).values()
            if not state.is_empty()
        )

    async def recommend(self, vpa: Obj) -> Obj:
        """Compute and (when changed) write one VPA's status; returns the VPA as written."""
        key = _key(vpa)
        target = self.targets[key] = self.target(vpa)
        pods = self.pods_of(vpa, target) if target.unsupported is None else []
        live = [p for p in pods if (p.get("status") or {}).get("phase") in ("Running", "Pending")]
        recommendation = None
        if target.unsupported is None:
            recommendation = self.recommender.recommendation(key, vpa)
        current = self.written.get(key) or vpa.get("status") or {}
        status = vpa_status(
            current,
            unsupported=target.unsupported,
            pods_matched=bool(live),
            recommendation=recommendation,
            low_confidence=self._low_confidence(key),
            now=rfc3339(),
        )
        version = str((vpa.get("metadata") or {}).get("resourceVersion") or "")
        if same_status(status, vpa.get("status")) or (
            # Written already, and the cache has not seen that write yet.
            same_status(status, self.written.get(key)) and self.written_over.get(key) == version
        ):
            return {**vpa, "status": status}
        meta = vpa.get("metadata") or {}
        try:
            # The recommender is the status' one writer: it replaces the whole of it.
            written = await self.client.patch(
                VERTICALPODAUTOSCALERS,
                str(meta.get("name")),
                {"status": _replace_patch(vpa.get("status") or {}, status)},
                namespace=str(meta.get("namespace")),
                subresource="status",
            )
        except APINotFoundError:
            return vpa
        self.written[key] = status
        self.written_over[key] = version
        if target.unsupported is not None and "ConfigUnsupported" not in _types(vpa):
            self.recommender_events.event(
                with_type(vpa, VERTICALPODAUTOSCALERS),
                "Warning",
                "ConfigUnsupported",
                target.unsupported,
            )
        return written

    async def recommend_all(self) -> None:
        for vpa in self.chosen_vpas():
            await self.recommend(vpa)

    async def react(self) -> None:
        """OOM kills or pauses were recorded: recompute those VPAs and update their pods now."""
        keys, self.urgent = self.urgent, set()
        for key in keys:
            vpa = self.vpas.get(f"{key[0]}/{key[1]}")
            if vpa is None or not self.chosen(vpa):
                continue
            written = await self.recommend(vpa)
            await self.update(written)

    # -- the updater ---------------------------------------------------------------------------

    async def update_all(self) -> None:
        for vpa in self.chosen_vpas():
            key = _key(vpa)
            status = self.written.get(key)
            await self.update({**vpa, "status": status} if status is not None else vpa)

    def _replicas(self, pods: list[Obj]) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for pod in pods:
            for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
                if ref.get("controller") is not True or ref.get("kind") not in self.owners:
                    continue
                namespace = (pod.get("metadata") or {}).get("namespace")
                owner = self.owners[ref["kind"]].get(f"{namespace}/{ref.get('name')}")
                replicas = ((owner or {}).get("spec") or {}).get("replicas")
                if ref["kind"] == "DaemonSet":  # as upstream's updater counts a DaemonSet
                    replicas = ((owner or {}).get("status") or {}).get("desiredNumberScheduled")
                if isinstance(replicas, int):
                    out[(str(ref["kind"]), str(ref.get("name")))] = replicas
        return out

    async def update(self, vpa: Obj) -> list[Decision]:
        target = self.targets.get(_key(vpa)) or self.target(vpa)
        if target.unsupported is not None:
            return []
        namespace = str((vpa.get("metadata") or {}).get("namespace") or "")
        pods = pods_to_update(
            vpa,
            target,
            self.pods.by_index(NAMESPACE_INDEX, namespace),
            self.vpas.by_index(NAMESPACE_INDEX, namespace),
            self.lookup,
            self.targets,
        )
        decisions = decide(
            vpa,
            pods,
            replicas=self._replicas(pods),
            now=time.time(),
            settings=self.updater_settings,
            memory=self.memory,
        )
        self._say_why_held(vpa, decisions)
        by_key = {key_of(p): p for p in pods}
        for decision in decisions:
            pod = by_key.get(decision.pod)
            if pod is None or _lent_to_the_rescuer(pod, vpa):
                continue
            if decision.action == Action.RESIZE:
                await self._resize(vpa, pod, decision)
            elif decision.action == Action.EVICT:
                await self._evict(vpa, pod, decision)
        return decisions

    def _say_why_held(self, vpa: Obj, decisions: list[Decision]) -> None:
        """A VPA whose pods need an update but are held by ``minReplicas`` says so once
        (``kubectl describe vpa``), instead of doing nothing in silence."""
        key = _key(vpa)
        held = next(
            (d for d in decisions if d.action == Action.WAIT and "minReplicas" in d.reason), None
        )
        if held is None:
            self.held.pop(key, None)
            return
        if self.held.get(key) == held.reason:
            return
        self.held[key] = held.reason
        self.updater_events.event(
            with_type(vpa, VERTICALPODAUTOSCALERS),
            "Warning",
            "BelowMinReplicas",
            f"Pod {held.pod} is not updated to the recommendation: {held.reason}",
        )

    async def _resize(self, vpa: Obj, pod: Obj, decision: Decision) -> None:
        node = self.nodes.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        others = [
            p
            for p in self.pods.by_index(NODE_INDEX, str((pod.get("spec") or {}).get("nodeName")))
            if key_of(p) != key_of(pod)
        ]
        meta = pod.get("metadata") or {}
        # First with the headroom; if the API refuses the raised limits (a ResourceQuota on
        # limits.memory, a LimitRange's maximum: 403 or 422), again with the limits as
        # upstream writes them, which the pod then keeps. An API server that forbids lowering
        # a memory limit (1.33) gets the same resize with the limits kept where they are.
        attempts = [decision.resources]
        if decision.without_headroom:
            attempts.append(decision.without_headroom)
        limits_kept = False
        while attempts:
            resources = fit_to_node(attempts.pop(0), pod, node, others)
            body = replace(decision, resources=resources).resize_body()
            try:
                await self.client.resize_pod(
                    str(meta.get("namespace")), str(meta.get("name")), body
                )
                break
            except APINotFoundError:
                return
            except APIError as exc:
                if not limits_kept and exc.status == 422 and LIMIT_DECREASE_FORBIDDEN in str(exc):
                    limits_kept = True
                    attempts.insert(0, keeping_memory_limits(resources, pod))
                    log.info(
                        "%s: %s: lowering a memory limit refused (%s); the limits kept",
                        self.name,
                        decision.pod,
                        exc,
                    )
                    continue
                if attempts and exc.status in (403, 422):
                    self.memory.headroom_refused.add(str(meta.get("uid")))
                    log.info(
                        "%s: %s: the memory limits' headroom refused (%s); upstream's limits",
                        self.name,
                        decision.pod,
                        exc,
                    )
                    continue
                self.updater_events.event(
                    with_type(pod, PODS), "Warning", "InPlaceResizeFailed", f"{exc}"
                )
                return
        log.info("%s: resized %s in place (%s): %s", self.name, decision.pod, decision.reason, body)
        self.updater_events.event(
            with_type(pod, PODS),
            "Normal",
            "InPlaceResizedByVPA",
            f"Pod was resized in place by VPA Updater ({decision.reason}).",
        )
        self.updater_events.event(
            with_type(vpa, VERTICALPODAUTOSCALERS),
            "Normal",
            "InPlaceResizedPod",
            f"VPA Updater resized Pod {meta.get('name')} in place to apply resource "
            "recommendation.",
        )

    async def _evict(self, vpa: Obj, pod: Obj, decision: Decision) -> None:
        meta = pod.get("metadata") or {}
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
            "deleteOptions": {"preconditions": {"uid": meta.get("uid")}},
        }
        try:
            await self.client.create(
                PODS, body, namespace=str(meta.get("namespace")), subresource="eviction"
            )
        except APITooManyRequestsError as exc:
            log.info("%s: eviction of %s refused: %s", self.name, decision.pod, exc)
            return
        except APINotFoundError:
            return
        self.updater_events.event(
            with_type(pod, PODS),
            "Normal",
            "EvictedByVPA",
            "Pod was evicted by VPA Updater to apply resource recommendation.",
        )
        self.updater_events.event(
            with_type(vpa, VERTICALPODAUTOSCALERS),
            "Normal",
            "EvictedPod",
            f"VPA Updater evicted Pod {meta.get('name')} to apply resource recommendation.",
        )

    # -- checkpoints ---------------------------------------------------------------------------

    async def _load_checkpoints(self) -> None:
        try:
            listing = await self.client.list_all(VERTICALPODAUTOSCALERCHECKPOINTS)
        except APIError as exc:
            log.warning("%s: cannot list checkpoints: %s", self.name, exc)
            return
        vpas = [_key(v) for v in self.chosen_vpas()]
        skipped = load_checkpoints(self.recommender, listing.get("items") or [], vpas)
        for name, reason in skipped:
            log.info("%s: checkpoint %s not loaded: %s", self.name, name, reason)

    async def write_checkpoints(self) -> None:
        # Checkpoints of any existing VPA are kept: another recommender may own them.
        known = {_key(vpa) for vpa in self.vpas.list()}
        listing = await self.client.list_all(VERTICALPODAUTOSCALERCHECKPOINTS)
        items: list[Obj] = listing.get("items") or []
        stored = {_checkpoint_key(obj): obj for obj in items}
        for vpa in self.chosen_vpas():
            for obj in checkpoint_objects(self.recommender, _key(vpa)):
                await self._write_checkpoint(obj, stored.get(_checkpoint_key(obj)))
        for obj in items:
            meta = obj.get("metadata") or {}
            owner = (str(meta.get("namespace")), str((obj.get("spec") or {}).get("vpaObjectName")))
            if owner not in known and self.vpas.has_synced:
                with contextlib.suppress(APINotFoundError):
                    await self.client.delete(
                        VERTICALPODAUTOSCALERCHECKPOINTS,
                        str(meta.get("name")),
                        namespace=str(meta.get("namespace")),
                    )

    async def _write_checkpoint(self, obj: Obj, stored: Mapping[str, Any] | None) -> None:
        """Replace the status and our annotations of the checkpoint ``stored`` (as listed) in
        one JSON patch, as upstream's writer replaces the status; create it, with both, when
        it is not there."""
        meta = obj["metadata"]
        if stored is not None:
            try:
                await self.client.patch(
                    VERTICALPODAUTOSCALERCHECKPOINTS,
                    meta["name"],
                    checkpoint_patch(obj, stored),
                    patch_type="json",
                    namespace=meta["namespace"],
                )
                return
            except APINotFoundError:
                pass  # deleted since it was listed
        with contextlib.suppress(APIAlreadyExistsError):  # created since: the next pass patches
            await self.client.create(
                VERTICALPODAUTOSCALERCHECKPOINTS, obj, namespace=meta["namespace"]
            )


def pods_to_update(
    vpa: Mapping[str, Any],
    target: Target,
    pods: Iterable[Obj],
    vpas: Iterable[Mapping[str, Any]],
    lookup: Lookup,
    targets: Mapping[VpaKey, Target] | None = None,
) -> list[Obj]:
    """The pods ``vpa``'s updater decides for: those it controls (``target`` is its resolved
    target), as upstream's updater groups live pods by ``GetControllingVPAForPod``. A pod that
    an older VPA controls is that one's, whatever its mode: a pod is updated by one VPA at
    most, and one whose controlling VPA is ``Off`` is the memory-pause responder's."""
    if target.unsupported is not None:
        return []
    mine = _key(vpa)
    namespace_vpas = list(vpas)
    out = []
    for pod in pods:
        if not pod_matches(pod, vpa, target, lookup):
            continue
        controlling = controlling_vpa(pod, namespace_vpas, lookup, targets)
        if controlling is not None and _key(controlling) == mine:
            out.append(pod)
    return out


def _lent_to_the_rescuer(pod: Mapping[str, Any], vpa: Mapping[str, Any]) -> bool:
    """A donor the rescuer shrank (``inplace.dev/original-resources``) whose requests are
    still within [lowerBound, upperBound] is left where it is: the rescuer grows it back to
    the target when its node has room. Below the lower bound (an OOM kill or a pause raised
    it) the updater acts as for any pod."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if ORIGINAL_RESOURCES not in annotations:
        return False
    return not pod_priority(pod_recommendations(pod, vpa)).outside_range


def _key(vpa: Mapping[str, Any]) -> VpaKey:
    meta = vpa.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _checkpoint_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _types(vpa: Mapping[str, Any]) -> set[str]:
    return {
        str(c.get("type"))
        for c in (vpa.get("status") or {}).get("conditions") or ()
        if isinstance(c, Mapping)
    }


def _replace_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch that turns status ``old`` into ``new`` (keys ``new`` lacks are nulled;
    lists are replaced whole by a merge patch)."""
    patch: dict[str, Any] = {k: None for k in old if k not in new}
    patch.update(new)
    return patch
