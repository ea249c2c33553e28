"""The dashboard's pure reading of API objects: no I/O, no clock (every function takes ``now``).

* :func:`summarize` turns a Pod into the few numbers and words the pages show (a
  :class:`PodSummary`), once per change of the pod, so rendering 1,000 rows never parses a
  quantity;
* :func:`resize_state` says where a pod's resize stands, from upstream's conditions
  (``PodResizePending`` with reason ``Deferred`` / ``Infeasible``, ``PodResizeInProgress``,
  with reason ``Error`` when it failed) or the older ``status.resize`` field;
* :func:`event_marker` and :func:`status_markers` find the moments worth a line on a pod's
  chart: resize events, ``MemoryPaused``, OOM kills and restarts;
* :func:`owner_chain` lists a pod's controllers for display; which VerticalPodAutoscaler
  covers a pod is not decided here but by :func:`inplace.api.vpa_targets.controlling_vpa`,
  the one rule the VPA and the memory-pause responder go by.

Units everywhere: CPU in millicores, memory in bytes, both floats; ``NaN`` is "not set".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from inplace.api.annotations import OOM_KILL_DISABLE, resize_policy
from inplace.api.quantity import Quantity, QuantityError
from inplace.api.resources import (
    container_limits,
    container_requests,
    qos_class,
    resize_accounting_requests,
)
from inplace.api.tables import POD_TABLE
from inplace.api.timestamps import parse_rfc3339

from .history import Marker

__all__ = [
    "EVENT_MARKERS",
    "ContainerSummary",
    "Owner",
    "PodSummary",
    "ResizeState",
    "byte_count",
    "event_marker",
    "event_time",
    "millicores",
    "owner_chain",
    "paused_since",
    "quantities",
    "recommendations",
    "resize_state",
    "status_markers",
    "summarize",
    "timestamp",
    "with_decision",
    "workload_of",
]

NAN: Final = math.nan

EVENT_MARKERS: Final = {
    "ResizeStarted": "resize-started",
    "ResizeCompleted": "resize-completed",
    "ResizeDeferred": "resize-deferred",
    "ResizeInfeasible": "resize-infeasible",
    "ResizeError": "resize-error",
    "MemoryPaused": "paused",
    "Preempted": "preempted",
    "ResizeEvicted": "moved",
}
"""Event reason → marker kind (the node agent's and the scheduler's resize events)."""

_TERMINAL: Final = ("Succeeded", "Failed")


def timestamp(value: Any) -> float | None:
    """An RFC 3339 string as Unix time (None when absent or malformed)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_rfc3339(value).timestamp()
    except ValueError:
        return None


def millicores(raw: Mapping[str, Quantity], name: str = "cpu") -> float:
    """``raw[name]`` in millicores (NaN when absent)."""
    q = raw.get(name)
    return NAN if q is None else float(q.to_fraction() * 1000)


def byte_count(raw: Mapping[str, Quantity], name: str = "memory") -> float:
    """``raw[name]`` in bytes (NaN when absent)."""
    q = raw.get(name)
    return NAN if q is None else float(q.to_fraction())


def quantities(raw: Any) -> dict[str, Quantity]:
    """A JSON resource list as quantities, leaving out values that do not parse."""
    out: dict[str, Quantity] = {}
    if not isinstance(raw, Mapping):
        return out
    for name, value in raw.items():
        try:
            out[name] = Quantity.from_json(value)
        except QuantityError:
            continue
    return out


@dataclass(frozen=True, slots=True)
class ContainerSummary:
    name: str
    request_cpu: float
    limit_cpu: float
    request_memory: float
    limit_memory: float
    allocated_cpu: float
    """``allocatedResources`` (what the node admitted); NaN before the node reports it."""
    allocated_memory: float
    actual: tuple[float, float, float, float] | None
    """``status.containerStatuses[].resources`` (what the cgroups hold): request/limit cpu,
    request/limit memory; None before the node reports it."""
    restarts: int
    state: str
    """``running``, ``waiting: REASON``, ``terminated: REASON`` or ``""``."""
    spec: Mapping[str, Mapping[str, str]]
    """The spec's cpu/memory ``requests`` and ``limits`` as written (the resize form's
    starting values)."""

    @property
    def sizes(self) -> tuple[float, float, float, float, float, float]:
        """The values of :data:`inplace.dashboard.history.SIZE_FIELDS`, in order."""
        return (
            self.request_cpu,
            self.limit_cpu,
            self.allocated_cpu,
            self.request_memory,
            self.limit_memory,
            self.allocated_memory,
        )


@dataclass(frozen=True, slots=True)
class ResizeState:
    state: str
    """``""`` (nothing to do), ``Proposed``, ``InProgress``, ``Deferred``, ``Infeasible``,
    ``Error``."""
    message: str = ""
    since: float | None = None


@dataclass(frozen=True, slots=True)
class Owner:
    kind: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class PodSummary:
    key: str
    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    owner: Owner | None
    node: str
    phase: str
    status: str
    """kubectl's STATUS column (``Running``, ``CrashLoopBackOff``, ``Terminating``...)."""
    ready: str
    qos: str
    policy: str
    containers: tuple[ContainerSummary, ...]
    requests_cpu: float
    """What the pod holds on its node (upstream's charge while a resize is in flight)."""
    requests_memory: float
    restarts: int
    resize: ResizeState
    paused: str
    """The ``MemoryPaused`` condition's message while the pod is paused, else ``""``."""
    oom_kill_disabled: bool
    waiting: tuple[str, str] | None
    """``(reason, message)`` while the pod waits to be placed on a node."""
    created: float | None

    @property
    def terminal(self) -> bool:
        return self.phase in _TERMINAL

    @property
    def holds_node_resources(self) -> bool:
        return bool(self.node) and not self.terminal


def _conditions(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in (pod.get("status") or {}).get("conditions") or () if isinstance(c, Mapping)]


def _condition(pod: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for cond in _conditions(pod):
        if cond.get("type") == type_:
            return cond
    return None


def _container_state(status: Mapping[str, Any] | None) -> str:
    state = (status or {}).get("state") or {}
    if "running" in state:
        return "running"
    for name in ("waiting", "terminated"):
        if name in state:
            reason = (state.get(name) or {}).get("reason") or ""
            return f"{name}: {reason}" if reason else name
    return ""


def _actual(status: Mapping[str, Any] | None) -> tuple[float, float, float, float] | None:
    resources = (status or {}).get("resources")
    if not isinstance(resources, Mapping):
        return None
    requests = quantities(resources.get("requests"))
    limits = quantities(resources.get("limits"))
    return (millicores(requests), millicores(limits), byte_count(requests), byte_count(limits))


def _written(container: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    resources = container.get("resources") or {}
    return {
        kind: {
            name: str(value)
            for name, value in (resources.get(kind) or {}).items()
            if name in ("cpu", "memory")
        }
        for kind in ("requests", "limits")
    }


def _containers(pod: Mapping[str, Any]) -> tuple[ContainerSummary, ...]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = {
        s.get("name"): s
        for s in [
            *(status.get("containerStatuses") or ()),
            *(status.get("initContainerStatuses") or ()),
        ]
        if isinstance(s, Mapping)
    }
    sidecars = [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    out: list[ContainerSummary] = []
    for container in [*sidecars, *(spec.get("containers") or ())]:
        name = str(container.get("name") or "")
        try:
            requests, limits = container_requests(container), container_limits(container)
        except QuantityError:
            requests, limits = {}, {}
        cs = statuses.get(name)
        allocated = quantities((cs or {}).get("allocatedResources"))
        out.append(
            ContainerSummary(
                name=name,
                request_cpu=millicores(requests),
                limit_cpu=millicores(limits),
                request_memory=byte_count(requests),
                limit_memory=byte_count(limits),
                allocated_cpu=millicores(allocated),
                allocated_memory=byte_count(allocated),
                actual=_actual(cs),
                restarts=int((cs or {}).get("restartCount") or 0),
                state=_container_state(cs),
                spec=_written(container),
            )
        )
    return tuple(out)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def resize_state(pod: Mapping[str, Any], containers: Sequence[ContainerSummary]) -> ResizeState:
    """Where the pod's resize stands (see the module docstring)."""
    pending = _condition(pod, "PodResizePending")
    if pending is not None and pending.get("status", "True") == "True":
        reason = str(pending.get("reason") or "Deferred")
        return ResizeState(
            reason, str(pending.get("message") or ""), timestamp(pending.get("lastTransitionTime"))
        )
    progress = _condition(pod, "PodResizeInProgress")
    if progress is not None and progress.get("status", "True") == "True":
        since = timestamp(progress.get("lastTransitionTime"))
        if progress.get("reason") == "Error":
            return ResizeState("Error", str(progress.get("message") or ""), since)
        return ResizeState("InProgress", str(progress.get("message") or ""), since)
    legacy = (pod.get("status") or {}).get("resize")
    if isinstance(legacy, str) and legacy:
        return ResizeState(legacy)
    if (pod.get("status") or {}).get("phase") in _TERMINAL:
        return ResizeState("")
    for c in containers:
        if c.actual is None:
            continue  # not running yet: its size is applied when it starts
        asked = (c.request_cpu, c.limit_cpu, c.request_memory, c.limit_memory)
        if not all(_same(a, b) for a, b in zip(asked, c.actual, strict=True)):
            return ResizeState("Proposed", "waiting for a decision or for the node")
        if not math.isnan(c.allocated_cpu) and not _same(c.allocated_cpu, c.request_cpu):
            return ResizeState("Proposed", "waiting for a decision or for the node")
    return ResizeState("")


_DECISIONS: Final = {
    "resize-deferred": "Deferred",
    "resize-infeasible": "Infeasible",
    "resize-error": "Error",
}
_RESIZE_MARKERS: Final = ("resize-started", "resize-completed", *_DECISIONS)


def with_decision(
    state: ResizeState, markers: Sequence[Marker], asked_at: float | None
) -> ResizeState:
    """A ``Proposed`` resize told by the latest resize event when that event is a decision
    (``ResizeDeferred``, ``ResizeInfeasible``, ``ResizeError``) taken since the size was asked
    (``asked_at``, as the dashboard saw it; event times are whole seconds, hence 2 s of
    slack). Some status writers drop the ``PodResizePending`` condition while the event
    stays; the page should still say why the pod waits."""
    if state.state != "Proposed":
        return state
    last = next((m for m in reversed(markers) if m.kind in _RESIZE_MARKERS), None)
    if last is None or last.kind not in _DECISIONS:
        return state
    if asked_at is not None and last.at < asked_at - 2.0:  # an older resize's decision
        return state
    return ResizeState(_DECISIONS[last.kind], last.message, last.at)


def _owner(meta: Mapping[str, Any]) -> Owner | None:
    refs = [r for r in meta.get("ownerReferences") or () if isinstance(r, Mapping)]
    if not refs:
        return None
    ref = next((r for r in refs if r.get("controller")), refs[0])
    return Owner(str(ref.get("kind") or ""), str(ref.get("name") or ""), str(ref.get("uid") or ""))


def _waiting(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("nodeName") or status.get("phase") not in (None, "", "Pending"):
        return None
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    scheduled = _condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        return (
            str(scheduled.get("reason") or "Unschedulable"),
            str(scheduled.get("message") or ""),
        )
    if spec.get("schedulingGates"):
        return ("SchedulingGated", "waiting for its scheduling gates to be removed")
    return ("Pending", "waiting for the scheduler")


def summarize(pod: Mapping[str, Any], *, now: datetime | None = None) -> PodSummary:
    """The pod as the pages show it (see the module docstring)."""
    meta = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    status = pod.get("status") or {}
    containers = _containers(pod)
    annotations = meta.get("annotations") or {}
    try:
        held = resize_accounting_requests(pod)
        requests_cpu, requests_memory = millicores(held), byte_count(held)
    except QuantityError:
        requests_cpu = requests_memory = NAN
    try:
        qos = qos_class(pod)
    except QuantityError:
        qos = ""
    cells, _ = POD_TABLE.row(pod, now or datetime.now(UTC))  # kubectl's READY and STATUS
    paused = _condition(pod, "MemoryPaused")
    return PodSummary(
        key=f"{namespace}/{name}",
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or ""),
        labels=dict(meta.get("labels") or {}),
        owner=_owner(meta),
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        phase=str(status.get("phase") or ""),
        status=str(cells[2]),
        ready=str(cells[1]),
        qos=qos,
        policy=resize_policy(annotations),
        containers=containers,
        requests_cpu=0.0 if math.isnan(requests_cpu) else requests_cpu,
        requests_memory=0.0 if math.isnan(requests_memory) else requests_memory,
        restarts=sum(c.restarts for c in containers),
        resize=resize_state(pod, containers),
        paused=(
            str(paused.get("message") or "paused at the memory limit")
            if paused is not None and paused.get("status") == "True"
            else ""
        ),
        oom_kill_disabled=annotations.get(OOM_KILL_DISABLE) == "true",
        waiting=_waiting(pod),
        created=timestamp(meta.get("creationTimestamp")),
    )


# -- markers -----------------------------------------------------------------------------------


def event_time(event: Mapping[str, Any]) -> float | None:
    """When an Event happened: its latest occurrence (``series.lastObservedTime``,
    ``lastTimestamp``), else ``eventTime``, ``firstTimestamp``, its creation."""
    series = event.get("series") or {}
    for value in (
        series.get("lastObservedTime") if isinstance(series, Mapping) else None,
        event.get("lastTimestamp"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        (event.get("metadata") or {}).get("creationTimestamp"),
    ):
        at = timestamp(value)
        if at is not None:
            return at
    return None


def event_marker(event: Mapping[str, Any]) -> tuple[str, Marker, str] | None:
    """``(pod uid or namespace/name, marker, dedup key)`` for an Event about a pod whose reason
    is a marker (:data:`EVENT_MARKERS`); None for any other event."""
    involved = event.get("involvedObject") or {}
    if involved.get("kind") != "Pod":
        return None
    reason = str(event.get("reason") or "")
    kind = EVENT_MARKERS.get(reason)
    at = event_time(event)
    if kind is None or at is None:
        return None
    target = str(involved.get("uid") or "") or (
        f"{involved.get('namespace') or ''}/{involved.get('name') or ''}"
    )
    meta = event.get("metadata") or {}
    count = event.get("count") or ((event.get("series") or {}).get("count") or 1)
    key = f"event/{meta.get('uid') or meta.get('name')}/{count}"
    rv = str(meta.get("resourceVersion") or "")
    seq = int(rv) if rv.isdigit() else 0
    return target, Marker(at, kind, reason, str(event.get("message") or ""), seq=seq), key


def _last_terminated(status: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    terminated = ((status or {}).get("lastState") or {}).get("terminated")
    return terminated if isinstance(terminated, Mapping) else None


def status_markers(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], *, now: float
) -> list[tuple[Marker, str]]:
    """Restarts and OOM kills (of a container restarted after it, or of one that ends there)
    that ``new`` shows and ``old`` did not, with dedup keys.

    A pod seen for the first time (``old`` None) contributes its last restart, if any, so a
    dashboard started later still marks it."""

    def statuses(pod: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
        status = (pod or {}).get("status") or {}
        return {
            str(s.get("name")): s
            for s in [
                *(status.get("containerStatuses") or ()),
                *(status.get("initContainerStatuses") or ()),
            ]
            if isinstance(s, Mapping)
        }

    before, after = statuses(old), statuses(new)
    out: list[tuple[Marker, str]] = []
    for name, cs in after.items():
        ended = (cs.get("state") or {}).get("terminated") or {}
        if ended.get("reason") == "OOMKilled":  # killed for good (restartPolicy Never...)
            was = ((before.get(name) or {}).get("state") or {}).get("terminated") or {}
            finished = timestamp(ended.get("finishedAt"))
            if was.get("finishedAt") != ended.get("finishedAt") or old is None:
                detail = f"exit code {ended.get('exitCode')}; not restarted"
                out.append(
                    (
                        Marker(finished or now, "oom-killed", "OOMKilled", detail, name),
                        f"oom/{name}/ended/{ended.get('finishedAt')}",
                    )
                )
        count = int(cs.get("restartCount") or 0)
        previous = int((before.get(name) or {}).get("restartCount") or 0) if old else 0
        if count <= previous:
            continue
        last = _last_terminated(cs)
        finished = timestamp((last or {}).get("finishedAt"))
        started = timestamp(((cs.get("state") or {}).get("running") or {}).get("startedAt"))
        at = started or finished or now
        why = str((last or {}).get("reason") or "")
        detail = f"exit code {(last or {}).get('exitCode')}" if last else ""
        if why == "OOMKilled":
            out.append(
                (
                    Marker(finished or at, "oom-killed", "OOMKilled", detail, name),
                    f"oom/{name}/{count}",
                )
            )
        message = (
            f"restart {count}"
            + (f" after {why}" if why else "")
            + (f" ({detail})" if detail else "")
        )
        out.append((Marker(at, "restarted", "Restarted", message, name), f"restart/{name}/{count}"))
    return out


def paused_since(pod: Mapping[str, Any]) -> float | None:
    """When the pod's ``MemoryPaused`` condition turned True (None when it is not paused)."""
    cond = _condition(pod, "MemoryPaused")
    if cond is None or cond.get("status") != "True":
        return None
    return timestamp(cond.get("lastTransitionTime")) or 0.0


# -- owners and autoscalers -----------------------------------------------------------------


def owner_chain(
    summary: PodSummary, owner_of: Callable[[str, str, str], Owner | None]
) -> list[Owner]:
    """The pod's controllers, nearest first: ``[ReplicaSet, Deployment]``, ``[Job]``...
    ``owner_of(kind, namespace, name)`` gives an owner's own controller, if known."""
    chain: list[Owner] = []
    current = summary.owner
    while current is not None and len(chain) < 8 and current not in chain:
        chain.append(current)
        current = owner_of(current.kind, summary.namespace, current.name)
    return chain


def workload_of(
    summary: PodSummary, owner_of: Callable[[str, str, str], Owner | None]
) -> tuple[str, str, str] | None:
    """``(kind, namespace, name)`` of the workload a pod belongs to on the workloads page: its
    controller, or the Deployment above its ReplicaSet."""
    top = summary.owner
    if top is None:
        return None
    above = owner_of(top.kind, summary.namespace, top.name)
    if top.kind == "ReplicaSet" and above is not None and above.kind == "Deployment":
        top = above
    return (top.kind, summary.namespace, top.name)


def recommendations(vpa: Mapping[str, Any]) -> dict[str, tuple[float, ...]]:
    """Per container: lower, target, upper CPU, then lower, target, upper memory
    (:data:`inplace.dashboard.history.VPA_FIELDS`), from ``status.recommendation``."""
    rec = ((vpa.get("status") or {}).get("recommendation") or {}).get(
        "containerRecommendations"
    ) or ()
    out: dict[str, tuple[float, ...]] = {}
    for item in rec:
        if not isinstance(item, Mapping) or not item.get("containerName"):
            continue
        lower, target, upper = (
            quantities(item.get("lowerBound")),
            quantities(item.get("target")),
            quantities(item.get("upperBound")),
        )
        out[str(item["containerName"])] = (
            millicores(lower),
            millicores(target),
            millicores(upper),
            byte_count(lower),
            byte_count(target),
            byte_count(upper),
        )
    return out
