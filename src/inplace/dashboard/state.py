"""The dashboard's one view of the cluster, shared by every browser tab.

Through the Kubernetes API only (so it works against any cluster the kubeconfig reaches):

* one :class:`~inplace.client.Informer` per kind — pods, nodes, events about pods,
  Deployments, ReplicaSets, Jobs and VerticalPodAutoscalers — however many tabs are open;
* one poller of ``metrics.k8s.io`` (PodMetrics and NodeMetrics, every ``metrics_interval``):
  each answer is the node agents' latest sample, kept per container in a bounded
  :class:`~inplace.dashboard.history.UsageRing` (a repeat of the last sample is dropped).

Informer handlers do the bookkeeping at once (they only touch memory): a pod's
:class:`~inplace.dashboard.model.PodSummary` is computed once per change, its sizes and its
VPA's recommendation are recorded as steps, markers come from events and from its status.
Every change bumps ``revision`` (and the pod's own ``versions[key]``) and wakes the streams
(:meth:`DashboardState.wait_changed`), which render and send what changed.

A kind the cluster does not serve (no VPA CRD, no metrics API) is simply absent: its
informer keeps retrying with back-off, and the pages say what is missing.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from inplace.api.backoff import Backoff
from inplace.api.quantity import Quantity, QuantityError
from inplace.api.vpa_targets import controlling_vpa
from inplace.client import (
    EVENTS,
    NODEMETRICS,
    NODES,
    PODMETRICS,
    PODS,
    VERTICALPODAUTOSCALERS,
    WORKLOAD_RESOURCES,
    APIConnectionError,
    APIError,
    Client,
    Informer,
    key_of,
)

from .history import VPA_FIELDS, Marker, PodHistory
from .model import (
    Owner,
    PodSummary,
    event_marker,
    owner_chain,
    paused_since,
    recommendations,
    status_markers,
    summarize,
    timestamp,
    with_decision,
    workload_of,
)

__all__ = ["DashboardState"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]

_METRICS_RETRY = Backoff(5.0, 60.0)
_NO_RECOMMENDATION = (math.nan,) * len(VPA_FIELDS)
_DEPARTURES = ("moved", "preempted")


def _namespace(obj: Obj) -> list[str]:
    return [str((obj.get("metadata") or {}).get("namespace") or "")]


class DashboardState:
    """See the module docstring. ``clock`` is wall time (seconds since the epoch)."""

    def __init__(
        self,
        client: Client,
        *,
        window: float = 3600.0,
        metrics_interval: float = 2.5,
        clock: Callable[[], float] = time.time,
        parked_events: int = 2000,
        departures: int = 500,
    ) -> None:
        self.client = client
        self.window = window
        self.metrics_interval = metrics_interval
        self.clock = clock
        self.usage_capacity = max(16, math.ceil(window / max(metrics_interval, 0.5)) + 8)

        self.pods = Informer(client, PODS)
        self.nodes = Informer(client, NODES)
        self.events = Informer(client, EVENTS, field_selector="involvedObject.kind=Pod")
        self._owners: dict[str, Informer] = {
            kind: Informer(client, res) for kind, res in WORKLOAD_RESOURCES.items()
        }
        self.vpas = Informer(client, VERTICALPODAUTOSCALERS)
        self.vpas.add_index("namespace", _namespace)
        self.pods.add_index("namespace", _namespace)
        self.informers: dict[str, Informer] = {
            "pods": self.pods,
            "nodes": self.nodes,
            "events": self.events,
            **{WORKLOAD_RESOURCES[kind].plural: inf for kind, inf in self._owners.items()},
            "verticalpodautoscalers": self.vpas,
        }

        self.summaries: dict[str, PodSummary] = {}
        self.histories: dict[str, PodHistory] = {}
        """By pod uid."""
        self.versions: dict[str, int] = {}
        """By pod key: bumped whenever anything shown about the pod changes."""
        self.key_of_uid: dict[str, str] = {}
        self.vpa_of: dict[str, str] = {}
        """Pod key → name of the VPA that covers it."""
        self.node_usage: dict[str, tuple[float, float, float]] = {}
        """Node name → (time, cpu millicores, memory bytes) from NodeMetrics."""
        self.departed: collections.deque[tuple[tuple[str, str, str], str, Marker]] = (
            collections.deque(maxlen=departures)
        )
        """Pods that left their workload with a move or a preemption: (workload, pod,
        marker), newest last, for the workloads page."""
        self.metrics_polls = 0
        """Completed reads of metrics.k8s.io."""
        self.metrics_available: bool | None = None
        self.metrics_error = ""
        self.revision = 0
        self._changed = asyncio.Event()
        self._parked: collections.deque[tuple[str, Any, str]] = collections.deque(
            maxlen=parked_events
        )
        self._tasks: list[asyncio.Task[None]] = []

        self.pods.add_handler(self._pod_added, self._pod_updated, self._pod_deleted)
        self.events.add_handler(self._event, lambda _old, new: self._event(new), None)
        # A VPA or a workload changing may change which VPA controls a namespace's pods.
        for informer in (self.vpas, *self._owners.values()):
            informer.add_handler(*self._namespace_handlers())
        self.nodes.add_handler(*self._plain_handlers())

    # -- running ---------------------------------------------------------------------------

    def start(self) -> None:
        for name, informer in self.informers.items():
            self._tasks.append(asyncio.create_task(informer.run(), name=f"dashboard-{name}"))
        self._tasks.append(asyncio.create_task(self._poll_metrics(), name="dashboard-metrics"))
        self._tasks.append(asyncio.create_task(self._trim_loop(), name="dashboard-trim"))

    async def stop(self) -> None:
        for informer in self.informers.values():
            informer.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()

    def synced(self) -> dict[str, bool]:
        return {name: informer.has_synced for name, informer in self.informers.items()}

    async def wait_changed(self, since: int, timeout: float) -> int:
        """The revision once it is past ``since`` (or as it is after ``timeout``)."""
        if self.revision != since:
            return self.revision
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)
        return self.revision

    def _notify(self, *keys: str | None) -> None:
        """A new revision; ``keys`` are the pods whose rows it changes."""
        self.revision += 1
        for key in keys:
            if key is not None:
                self.versions[key] = self.revision
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # -- owners and autoscalers ------------------------------------------------------------

    def workload_informer(self, kind: str) -> Informer:
        """The informer of a workload kind (a key of ``WORKLOAD_RESOURCES``)."""
        return self._owners[kind]

    def owner_of(self, kind: str, namespace: str, name: str) -> Owner | None:
        """The controller of the object ``kind``/``name``, if the dashboard watches that kind."""
        informer = self._owners.get(kind)
        obj = informer.get(f"{namespace}/{name}") if informer is not None else None
        if obj is None:
            return None
        refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
        ref = next((r for r in refs if r.get("controller")), None)
        if ref is None:
            return None
        return Owner(
            str(ref.get("kind") or ""), str(ref.get("name") or ""), str(ref.get("uid") or "")
        )

    def chain(self, summary: PodSummary) -> list[Owner]:
        return owner_chain(summary, self.owner_of)

    def workload(self, group: str, kind: str, name: str, namespace: str) -> Obj | None:
        """A VPA target or pod owner from the cache (an :data:`~inplace.api.vpa_targets.Lookup`)."""
        informer = self._owners.get(kind)
        if informer is None or WORKLOAD_RESOURCES[kind].group != group:
            return None
        return informer.get(f"{namespace}/{name}")

    def covering_vpa(self, summary: PodSummary) -> Mapping[str, Any] | None:
        """The pod's controlling VPA, by the rule the VPA and the memory-pause responder use."""
        vpas = self.vpas.by_index("namespace", summary.namespace)
        pod = self.pods.get(summary.key) if vpas else None
        return controlling_vpa(pod, vpas, self.workload) if pod is not None else None

    def _record_recommendation(self, summary: PodSummary, now: float) -> bool:
        vpa = self.covering_vpa(summary)
        history = self.histories.get(summary.uid)
        if history is None:
            return False
        changed = False
        name = (vpa.get("metadata") or {}).get("name") if vpa is not None else None
        if self.vpa_of.get(summary.key) != name:
            changed = True
            if name is None:
                self.vpa_of.pop(summary.key, None)
            else:
                self.vpa_of[summary.key] = str(name)
        recs = recommendations(vpa) if vpa is not None else {}
        for c in summary.containers:
            values = recs.get(c.name, _NO_RECOMMENDATION)
            container = history.container(c.name)
            if container.recommendation.last() is None and values is _NO_RECOMMENDATION:
                continue
            changed |= container.recommendation.record(now, values)
        return changed

    def _refresh_namespace(self, namespace: str) -> None:
        """A VPA or a ReplicaSet changed: which VPA covers each pod of the namespace may have
        changed too (nothing to do where no VPA is, or was)."""
        changed: list[str] = []
        covered = any(key.startswith(f"{namespace}/") for key in self.vpa_of)
        if covered or self.vpas.by_index("namespace", namespace):
            now = self.clock()
            for pod in self.pods.by_index("namespace", namespace):
                summary = self.summaries.get(key_of(pod))
                if summary is not None and self._record_recommendation(summary, now):
                    changed.append(summary.key)
        self._notify(*changed)

    def _namespace_handlers(
        self,
    ) -> tuple[Callable[[Obj], None], Callable[[Obj, Obj], None], Callable[[Obj], None]]:
        def changed(obj: Obj) -> None:
            self._refresh_namespace(_namespace(obj)[0])

        return changed, lambda _old, new: changed(new), changed

    def _plain_handlers(
        self,
    ) -> tuple[Callable[[Obj], None], Callable[[Obj, Obj], None], Callable[[Obj], None]]:
        def changed(_obj: Obj) -> None:
            self._notify()

        return changed, lambda _old, _new: self._notify(), changed

    # -- pods ------------------------------------------------------------------------------

    def history_of(self, summary: PodSummary) -> PodHistory:
        history = self.histories.get(summary.uid)
        if history is None:
            history = self.histories[summary.uid] = PodHistory(usage_capacity=self.usage_capacity)
        return history

    def _pod_added(self, pod: Obj) -> None:
        self._pod_changed(None, pod)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        self._pod_changed(old, new)

    def _pod_changed(self, old: Obj | None, pod: Obj) -> None:
        now = self.clock()
        summary = summarize(pod)
        previous = self.summaries.get(summary.key)
        if previous is not None and previous.uid != summary.uid:
            self.histories.pop(previous.uid, None)  # a new pod of the same name
            self.key_of_uid.pop(previous.uid, None)
            old = None
        self.summaries[summary.key] = summary
        self.key_of_uid[summary.uid] = summary.key
        history = self.history_of(summary)
        for c in summary.containers:
            history.container(c.name).sizes.record(now, c.sizes)
        for marker, key in status_markers(old, pod, now=now):
            history.add_marker(marker, key=key)
        since = paused_since(pod)
        if since is not None:
            history.pause_started(since or now)
        else:
            history.pause_ended(now)
        self._record_recommendation(summary, now)
        self._unpark(summary)
        self._decide(summary.key)
        self._notify(summary.key)

    def _pod_deleted(self, pod: Obj) -> None:
        key = key_of(pod)
        summary = self.summaries.pop(key, None)
        self.versions.pop(key, None)
        self.vpa_of.pop(key, None)
        if summary is not None:
            history = self.histories.pop(summary.uid, None)
            self.key_of_uid.pop(summary.uid, None)
            workload = workload_of(summary, self.owner_of)
            last = (
                next((m for m in reversed(history.markers) if m.kind in _DEPARTURES), None)
                if history is not None
                else None
            )
            if workload is not None and last is not None:
                self.departed.append((workload, summary.name, last))
        self._notify()

    # -- events ----------------------------------------------------------------------------

    def _event(self, event: Obj) -> None:
        found = event_marker(event)
        if found is None:
            return
        target, marker, key = found
        if not self._place(target, marker, key):
            self._parked.append((target, marker, key))

    def _place(self, target: str, marker: Any, key: str) -> bool:
        """Add an event's marker to its pod's history; False while the pod is unknown."""
        summary = self.summaries.get(target) if "/" in target else None
        uid = summary.uid if summary is not None else target
        history = self.histories.get(uid)
        if history is None:
            return False
        if history.add_marker(marker, key=key):
            key_ = self.key_of_uid.get(uid)
            if key_ is not None:
                self._decide(key_)
            self._notify(key_)
        return True

    def _decide(self, key: str) -> None:
        """Tell a ``Proposed`` resize by its latest decision event (see
        :func:`~inplace.dashboard.model.with_decision`)."""
        summary = self.summaries.get(key)
        history = self.histories.get(summary.uid) if summary is not None else None
        if summary is None or history is None:
            return
        # when the size last changed; unknown (None) when it has not changed since the
        # dashboard first saw the pod
        asked = [c.sizes.points[-1][0] for c in history.containers.values() if len(c.sizes) > 1]
        told = with_decision(summary.resize, history.markers, max(asked) if asked else None)
        if told is not summary.resize:
            self.summaries[key] = dataclasses.replace(summary, resize=told)

    def _unpark(self, summary: PodSummary) -> None:
        if not self._parked:
            return
        keep: collections.deque[tuple[str, Any, str]] = collections.deque(
            maxlen=self._parked.maxlen
        )
        for target, marker, key in self._parked:
            if target in (summary.uid, summary.key):
                self.history_of(summary).add_marker(marker, key=key)
            else:
                keep.append((target, marker, key))
        self._parked = keep

    # -- metrics ---------------------------------------------------------------------------

    async def _poll_metrics(self) -> None:
        delay: float | None = None
        while True:
            try:
                await self.poll_metrics_once()
            except (APIError, APIConnectionError) as exc:
                if self.metrics_available is not False or self.metrics_error != str(exc):
                    log.warning("metrics.k8s.io not available: %s", exc)
                self.metrics_available = False
                self.metrics_error = str(exc)
                delay = _METRICS_RETRY.next(delay)
                self._notify()
                await asyncio.sleep(delay)
                continue
            delay = None
            await asyncio.sleep(self.metrics_interval)

    async def poll_metrics_once(self) -> None:
        """One LIST of PodMetrics and NodeMetrics, folded into the histories."""
        pods = await self.client.list(PODMETRICS)
        nodes = await self.client.list(NODEMETRICS)
        self.metrics_available = True
        self.metrics_error = ""
        self.metrics_polls += 1
        keys = self.fold_pod_metrics(pods.get("items") or ())
        changed = bool(keys)
        now = self.clock()
        usage: dict[str, tuple[float, float, float]] = {}
        for item in nodes.get("items") or ():
            name = (item.get("metadata") or {}).get("name")
            sample = _usage(item.get("usage") or {})
            if name and sample is not None:
                usage[str(name)] = (timestamp(item.get("timestamp")) or now, *sample)
        if usage != self.node_usage:
            self.node_usage = usage
            changed = True
        if changed:
            self._notify(*keys)

    def fold_pod_metrics(self, items: Any) -> list[str]:
        """Add PodMetrics items to the histories; returns the keys of pods with a new sample."""
        changed: list[str] = []
        now = self.clock()
        for item in items:
            meta = item.get("metadata") or {}
            key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
            summary = self.summaries.get(key)
            if summary is None:
                continue
            at = timestamp(item.get("timestamp")) or now
            history = self.history_of(summary)
            added = False
            for container in item.get("containers") or ():
                sample = _usage(container.get("usage") or {})
                if sample is None or not container.get("name"):
                    continue
                added |= history.container(str(container["name"])).usage.append(at, *sample)
            if added:
                changed.append(key)
        return changed

    async def _trim_loop(self, every: float = 60.0) -> None:
        while True:
            await asyncio.sleep(every)
            self.trim()

    def trim(self) -> None:
        before = self.clock() - self.window
        for history in self.histories.values():
            history.trim(before)
        while self.departed and self.departed[0][2].at < before:
            self.departed.popleft()


def _usage(usage: Any) -> tuple[float, float] | None:
    try:
        cpu = Quantity.from_json(usage.get("cpu", "0"))
        memory = Quantity.from_json(usage.get("memory", "0"))
    except (QuantityError, AttributeError):
        return None
    return float(cpu.to_fraction() * 1000), float(memory.to_fraction())
