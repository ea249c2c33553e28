"""What each page receives: plain JSON-ready dicts built from summaries and histories.

Pure functions (no I/O, no clock): the server (:mod:`inplace.dashboard.server`) calls them
with the state it keeps and streams the result. CPU is in millicores and memory in bytes;
``NaN`` (not set) becomes ``null`` on the wire (orjson writes it so).

* :func:`pod_row` — one row of the pods table, with sparklines of the last minutes;
* :func:`cluster_view` — every node's allocatable, requested and used CPU and memory, and the
  pods waiting for placement or for a resize, with their reasons;
* :func:`pod_detail` — one pod's containers over the window, aligned on one time axis for the
  charts: usage, request, limit, allocated and the VPA's bounds, plus markers and pauses;
* :func:`workloads_view` — Deployments, ReplicaSets that no Deployment owns, and Jobs, with
  their pods' resize progress.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from inplace.api.quantity import QuantityError
from inplace.api.resources import container_limits, container_requests

from .history import SIZE_FIELDS, VPA_FIELDS, ContainerHistory, FloatArray, Marker, PodHistory
from .model import (
    ContainerSummary,
    Owner,
    PodSummary,
    byte_count,
    millicores,
    quantities,
    timestamp,
    workload_of,
)

__all__ = [
    "SPARK_POINTS",
    "SPARK_SECONDS",
    "cluster_view",
    "node_row",
    "pod_detail",
    "pod_row",
    "progress_of",
    "workloads_view",
]

SPARK_SECONDS: Final = 600.0
"""How far back a pods-table sparkline reaches."""
SPARK_POINTS: Final = 40
"""At most this many points per sparkline (the newest always among them)."""


def _num(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value


def _owner_text(owner: Owner | None) -> str:
    return f"{owner.kind}/{owner.name}" if owner is not None else ""


def _sum(values: Iterable[float]) -> float:
    """Sum of the set values; NaN when none is set."""
    total, seen = 0.0, False
    for v in values:
        if not math.isnan(v):
            total += v
            seen = True
    return total if seen else math.nan


def _pick(count: int, limit: int) -> npt.NDArray[np.intp]:
    """At most ``limit`` indexes spread evenly over ``count``, the first and the last among
    them."""
    if count <= limit:
        return np.arange(count)
    return (np.arange(limit) * (count - 1) // (limit - 1)).astype(np.intp)


def pod_row(summary: PodSummary, history: PodHistory | None, *, now: float) -> dict[str, Any]:
    """One row of the pods table (see the module docstring)."""
    usage_cpu = usage_memory = math.nan
    spark_t: list[float] = []
    spark_cpu: list[float] = []
    spark_memory: list[float] = []
    if history is not None:
        latest = [h.usage.last() for h in history.containers.values()]
        if any(latest):
            usage_cpu = _sum(s[1] for s in latest if s)
            usage_memory = _sum(s[2] for s in latest if s)
        times, cpu, memory = _pod_usage(history, now - SPARK_SECONDS)
        keep = _pick(len(times), SPARK_POINTS)
        spark_t = np.round(times[keep], 1).tolist()
        spark_cpu = np.round(cpu[keep], 1).tolist()
        spark_memory = np.round(memory[keep]).tolist()
    c = summary.containers
    return {
        "key": summary.key,
        "namespace": summary.namespace,
        "name": summary.name,
        "owner": _owner_text(summary.owner),
        "node": summary.node,
        "status": summary.status,
        "ready": summary.ready,
        "qos": summary.qos,
        "policy": summary.policy,
        "labels": ",".join(f"{k}={v}" for k, v in sorted(summary.labels.items())),
        "restarts": summary.restarts,
        "resize": summary.resize.state,
        "resizeMessage": summary.resize.message,
        "paused": bool(summary.paused),
        "cpu": {
            "request": _num(_sum(x.request_cpu for x in c)),
            "limit": _num(_sum(x.limit_cpu for x in c))
            if all_set(x.limit_cpu for x in c)
            else None,
            "usage": _num(usage_cpu),
        },
        "memory": {
            "request": _num(_sum(x.request_memory for x in c)),
            "limit": (
                _num(_sum(x.limit_memory for x in c))
                if all_set(x.limit_memory for x in c)
                else None
            ),
            "usage": _num(usage_memory),
        },
        "spark": {"t": spark_t, "cpu": spark_cpu, "memory": spark_memory},
    }


def all_set(values: Iterable[float]) -> bool:
    """A pod's limit is the sum of its containers' only when every container has one."""
    return all(not math.isnan(v) for v in values)


def _pod_usage(history: PodHistory, start: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The pod's usage (its containers' summed) at the times of its first container's samples
    (the node agent samples every container of a pod together)."""
    parts = [h.usage.since(start) for h in history.containers.values() if len(h.usage)]
    if not parts:
        empty = np.empty(0)
        return empty, empty, empty
    if len(parts) == 1:
        return parts[0]
    times = parts[0][0]
    cpu = np.zeros(len(times))
    memory = np.zeros(len(times))
    for t, c, m in parts:
        if len(t) == 0:
            continue
        index = np.clip(np.searchsorted(t, times, side="right") - 1, 0, len(t) - 1)
        cpu += c[index]
        memory += m[index]
    return times, cpu, memory


# -- cluster ---------------------------------------------------------------------------------


def _quantity(raw: Any, *, cpu: bool) -> float:
    parsed = quantities({"v": raw}) if raw is not None else {}
    return millicores(parsed, "v") if cpu else byte_count(parsed, "v")


def node_row(
    node: Mapping[str, Any],
    pods: Sequence[PodSummary],
    usage: tuple[float, float, float] | None,
) -> dict[str, Any]:
    """One node: allocatable, requested (what its pods hold) and used (metrics)."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    allocatable = status.get("allocatable") or {}
    ready = next(
        (c.get("status") for c in status.get("conditions") or () if c.get("type") == "Ready"),
        "Unknown",
    )
    return {
        "name": meta.get("name") or "",
        "ready": ready,
        "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
        "simulated": (meta.get("labels") or {}).get("inplace.dev/simulated") == "true",
        "pods": len(pods),
        "cpu": {
            "allocatable": _num(_quantity(allocatable.get("cpu"), cpu=True)),
            "requested": sum(p.requests_cpu for p in pods),
            "used": _num(usage[1]) if usage else None,
        },
        "memory": {
            "allocatable": _num(_quantity(allocatable.get("memory"), cpu=False)),
            "requested": sum(p.requests_memory for p in pods),
            "used": _num(usage[2]) if usage else None,
        },
    }


def cluster_view(
    nodes: Sequence[Mapping[str, Any]],
    summaries: Iterable[PodSummary],
    node_usage: Mapping[str, tuple[float, float, float]],
) -> dict[str, Any]:
    by_node: dict[str, list[PodSummary]] = {}
    waiting: list[dict[str, Any]] = []
    for s in summaries:
        if s.holds_node_resources:
            by_node.setdefault(s.node, []).append(s)
        if s.waiting is not None:
            reason, message = s.waiting
            waiting.append(
                {
                    "key": s.key,
                    "namespace": s.namespace,
                    "name": s.name,
                    "for": "placement",
                    "reason": reason,
                    "message": message,
                    "since": s.created,
                }
            )
        elif s.resize.state in ("Deferred", "Infeasible", "Error", "Proposed"):
            waiting.append(
                {
                    "key": s.key,
                    "namespace": s.namespace,
                    "name": s.name,
                    "for": "resize",
                    "reason": s.resize.state,
                    "message": s.resize.message,
                    "since": s.resize.since,
                }
            )
    rows = [
        node_row(
            n,
            by_node.get((n.get("metadata") or {}).get("name") or "", []),
            node_usage.get((n.get("metadata") or {}).get("name") or ""),
        )
        for n in nodes
    ]
    rows.sort(key=lambda r: _natural(r["name"]))
    waiting.sort(key=lambda w: (w["for"], w["key"]))
    return {"nodes": rows, "waiting": waiting}


def _natural(name: str) -> tuple[Any, ...]:
    """``node-2`` before ``node-10``."""
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return (head, int(tail) if tail else -1, name)


# -- one pod ---------------------------------------------------------------------------------


def pod_detail(
    summary: PodSummary,
    history: PodHistory | None,
    *,
    now: float,
    window: float,
    chain: Sequence[Owner],
    vpa: str | None,
) -> dict[str, Any]:
    """The pod page (see the module docstring): for each container one time axis ``t`` and,
    for ``cpu`` and ``memory``, ``usage`` (null where no sample), ``request``, ``limit``,
    ``allocated`` and the VPA's ``lower``, ``target``, ``upper`` (null where unset)."""
    start = now - window
    containers = [
        _container_detail(
            c,
            history.containers.get(c.name) if history is not None else None,
            start=start,
            now=now,
            with_vpa=vpa is not None,
        )
        for c in summary.containers
    ]
    markers, pauses = _markers(history, start)
    return {
        "key": summary.key,
        "namespace": summary.namespace,
        "name": summary.name,
        "uid": summary.uid,
        "node": summary.node,
        "status": summary.status,
        "ready": summary.ready,
        "qos": summary.qos,
        "policy": summary.policy,
        "owners": [_owner_text(o) for o in chain],
        "vpa": vpa,
        "restarts": summary.restarts,
        "resize": {
            "state": summary.resize.state,
            "message": summary.resize.message,
            "since": summary.resize.since,
        },
        "paused": summary.paused,
        "oomKillDisabled": summary.oom_kill_disabled,
        "waiting": list(summary.waiting) if summary.waiting else None,
        "window": [start, now],
        "containers": containers,
        "markers": markers,
        "pauses": pauses,
    }


def _container_detail(
    c: ContainerSummary,
    ch: ContainerHistory | None,
    *,
    start: float,
    now: float,
    with_vpa: bool,
) -> dict[str, Any]:
    """One container of the pod page: its figures now and its series on one time axis."""
    axis, cpu_usage, memory_usage = _usage_on_axis(ch, start, now)
    sizes = ch.sizes.at(axis) if ch is not None else np.full((len(SIZE_FIELDS), len(axis)), np.nan)
    rec = (
        ch.recommendation.at(axis)
        if ch is not None and with_vpa
        else np.full((len(VPA_FIELDS), len(axis)), np.nan)
    )
    return {
        "name": c.name,
        "state": c.state,
        "restarts": c.restarts,
        "spec": c.spec,
        "current": _current(c, ch, with_vpa),
        "t": [round(float(t), 3) for t in axis],
        "cpu": {
            "usage": _list(cpu_usage),
            "request": _list(sizes[0]),
            "limit": _list(sizes[1]),
            "allocated": _list(sizes[2]),
            "lower": _list(rec[0]),
            "target": _list(rec[1]),
            "upper": _list(rec[2]),
        },
        "memory": {
            "usage": _list(memory_usage),
            "request": _list(sizes[3]),
            "limit": _list(sizes[4]),
            "allocated": _list(sizes[5]),
            "lower": _list(rec[3]),
            "target": _list(rec[4]),
            "upper": _list(rec[5]),
        },
    }


def _usage_on_axis(
    ch: ContainerHistory | None, start: float, now: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The time axis of a container's charts (every usage sample and every size or
    recommendation change in the window, and ``now``) with its CPU and memory usage on it
    (NaN where no sample was taken at that time)."""
    if ch is not None:
        times, cpu, memory = ch.usage.since(start)
        changes = ch.sizes.change_times(start) + ch.recommendation.change_times(start)
        if ch.sizes.starts_before(start) or ch.recommendation.starts_before(start):
            changes.append(start)  # a size in force since before the window
    else:
        times, cpu, memory = np.empty(0), np.empty(0), np.empty(0)
        changes = []
    axis = np.unique(np.concatenate([times, np.array([*changes, now], dtype=float)]))
    # a node whose clock runs ahead may date its samples after our "now": keep them
    axis = axis[(axis >= start) & (axis <= max(now, float(times[-1]) if len(times) else now))]
    usage_at = np.searchsorted(times, axis)
    hit = (usage_at < len(times)) & (
        times[np.minimum(usage_at, max(len(times) - 1, 0))] == axis
        if len(times)
        else np.zeros(len(axis), dtype=bool)
    )
    cpu_usage = np.full(len(axis), np.nan)
    memory_usage = np.full(len(axis), np.nan)
    cpu_usage[hit] = cpu[usage_at[hit]]
    memory_usage[hit] = memory[usage_at[hit]]
    return axis, cpu_usage, memory_usage


def _current(c: ContainerSummary, ch: ContainerHistory | None, with_vpa: bool) -> dict[str, Any]:
    """A container's figures now: spec, allocated, actual (the cgroup), the last usage sample
    and the VPA's latest recommendation."""
    last = ch.usage.last() if ch is not None else None
    rec = ch.recommendation.last() if ch is not None and with_vpa else None
    return {
        "cpu": {
            "request": _num(c.request_cpu),
            "limit": _num(c.limit_cpu),
            "allocated": _num(c.allocated_cpu),
            "actualRequest": _num(c.actual[0]) if c.actual else None,
            "actualLimit": _num(c.actual[1]) if c.actual else None,
            "usage": _num(last[1]) if last else None,
            "target": _num(rec[1]) if rec else None,
            "lower": _num(rec[0]) if rec else None,
            "upper": _num(rec[2]) if rec else None,
        },
        "memory": {
            "request": _num(c.request_memory),
            "limit": _num(c.limit_memory),
            "allocated": _num(c.allocated_memory),
            "actualRequest": _num(c.actual[2]) if c.actual else None,
            "actualLimit": _num(c.actual[3]) if c.actual else None,
            "usage": _num(last[2]) if last else None,
            "target": _num(rec[4]) if rec else None,
            "lower": _num(rec[3]) if rec else None,
            "upper": _num(rec[5]) if rec else None,
        },
    }


def _markers(
    history: PodHistory | None, start: float
) -> tuple[list[dict[str, Any]], list[list[float | None]]]:
    """The events (resizes, pauses, OOM kills) and pause intervals inside the window."""
    if history is None:
        return [], []
    markers = [
        {
            "at": m.at,
            "kind": m.kind,
            "reason": m.reason,
            "message": m.message,
            "container": m.container,
        }
        for m in history.markers
        if m.at >= start
    ]
    pauses: list[list[float | None]] = [
        [max(p[0] or start, start), p[1]] for p in history.pauses if p[1] is None or p[1] >= start
    ]
    return markers, pauses


def _list(values: FloatArray) -> list[float | None]:
    return [None if math.isnan(v) else float(v) for v in values.tolist()]


# -- workloads -------------------------------------------------------------------------------


def _template_sizes(template: Mapping[str, Any]) -> dict[str, tuple[float, float, float, float]]:
    out: dict[str, tuple[float, float, float, float]] = {}
    spec = template.get("spec") or {}
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        try:
            requests, limits = container_requests(container), container_limits(container)
        except QuantityError:
            continue
        out[str(container.get("name") or "")] = (
            millicores(requests),
            millicores(limits),
            byte_count(requests),
            byte_count(limits),
        )
    return out


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def progress_of(pod: PodSummary, template: Mapping[str, tuple[float, float, float, float]]) -> str:
    """Where one pod of a workload stands against the workload's template:

    ``current`` (its spec is the template's size and the node applied it), ``outdated`` (its
    spec still has another size: not yet resized), ``resizing`` (asked, not applied yet),
    or its resize state when that is ``Deferred``, ``Infeasible`` or ``Error``."""
    if pod.resize.state in ("Deferred", "Infeasible", "Error"):
        return pod.resize.state.lower()
    for c in pod.containers:
        want = template.get(c.name)
        if want is None:
            continue
        asked = (c.request_cpu, c.limit_cpu, c.request_memory, c.limit_memory)
        if not all(_same(a, b) for a, b in zip(asked, want, strict=True)):
            return "outdated"
    if pod.resize.state in ("Proposed", "InProgress"):
        return "resizing"
    return "current"


PROGRESS_STATES: Final = ("current", "resizing", "outdated", "deferred", "infeasible", "error")


def workloads_view(
    deployments: Iterable[Mapping[str, Any]],
    replicasets: Iterable[Mapping[str, Any]],
    jobs: Iterable[Mapping[str, Any]],
    summaries: Iterable[PodSummary],
    owner_of: Callable[[str, str, str], Owner | None],
    departed: Iterable[tuple[tuple[str, str, str], str, Marker]] = (),
    stateful_sets: Iterable[Mapping[str, Any]] = (),
    daemon_sets: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Each Deployment (its pods through its ReplicaSets), each ReplicaSet no Deployment owns,
    each StatefulSet, DaemonSet and Job, with counts per :func:`progress_of` state, the pods
    that wait and why, and the pods it lost lately to a move or a preemption (``departed``:
    workload, pod, marker).
    A workload's own status is shown as it is: empty while no controller writes it."""
    pods_of: dict[tuple[str, str, str], list[PodSummary]] = {}
    for s in summaries:
        workload = workload_of(s, owner_of)
        if workload is not None:
            pods_of.setdefault(workload, []).append(s)
    gone: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for workload, pod_name, marker in departed:
        gone.setdefault(workload, []).append(
            {"pod": pod_name, "kind": marker.kind, "message": marker.message, "at": marker.at}
        )

    rows: list[dict[str, Any]] = []

    def add(kind: str, obj: Mapping[str, Any], counts: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        template = ((obj.get("spec") or {}).get("template")) or {}
        sizes = _template_sizes(template)
        pods = sorted(pods_of.get((kind, namespace, name), []), key=lambda p: p.name)
        progress = dict.fromkeys(PROGRESS_STATES, 0)
        waiting = []
        for p in pods:
            state = progress_of(p, sizes)
            progress[state] += 1
            if state in ("deferred", "infeasible", "error", "resizing"):
                waiting.append({"key": p.key, "state": state, "message": p.resize.message})
        status = obj.get("status") or {}
        rows.append(
            {
                "kind": kind,
                "namespace": namespace,
                "name": name,
                "key": f"{kind}/{namespace}/{name}",
                "counts": counts,
                "conditions": [
                    {
                        "type": c.get("type"),
                        "status": c.get("status"),
                        "reason": c.get("reason") or "",
                        "message": c.get("message") or "",
                    }
                    for c in status.get("conditions") or ()
                    if isinstance(c, Mapping)
                ],
                "statusReported": bool(status),
                "pods": len(pods),
                "progress": progress,
                "waiting": waiting,
                "departed": sorted(
                    gone.get((kind, namespace, name), []), key=lambda d: -float(d["at"])
                ),
                "template": {
                    n: {"cpu": [_num(v[0]), _num(v[1])], "memory": [_num(v[2]), _num(v[3])]}
                    for n, v in sizes.items()
                },
            }
        )

    for d in deployments:
        status, spec = d.get("status") or {}, d.get("spec") or {}
        add(
            "Deployment",
            d,
            {
                "desired": spec.get("replicas", 1),
                "ready": status.get("readyReplicas"),
                "updated": status.get("updatedReplicas"),
                "available": status.get("availableReplicas"),
            },
        )
    for rs in replicasets:
        meta = rs.get("metadata") or {}
        if any(r.get("kind") == "Deployment" for r in meta.get("ownerReferences") or ()):
            continue
        status, spec = rs.get("status") or {}, rs.get("spec") or {}
        add(
            "ReplicaSet",
            rs,
            {
                "desired": spec.get("replicas", 1),
                "ready": status.get("readyReplicas"),
                "available": status.get("availableReplicas"),
            },
        )
    for job in jobs:
        status, spec = job.get("status") or {}, job.get("spec") or {}
        add(
            "Job",
            job,
            {
                "completions": spec.get("completions"),
                "parallelism": spec.get("parallelism", 1),
                "active": status.get("active"),
                "succeeded": status.get("succeeded"),
                "failed": status.get("failed"),
                "started": timestamp(status.get("startTime")),
            },
        )
    for sts in stateful_sets:
        status, spec = sts.get("status") or {}, sts.get("spec") or {}
        add(
            "StatefulSet",
            sts,
            {
                "desired": spec.get("replicas", 1),
                "ready": status.get("readyReplicas"),
                "updated": status.get("updatedReplicas"),
                "available": status.get("availableReplicas"),
            },
        )
    for ds in daemon_sets:
        status = ds.get("status") or {}
        add(
            "DaemonSet",
            ds,
            {
                "desired": status.get("desiredNumberScheduled"),
                "ready": status.get("numberReady"),
                "updated": status.get("updatedNumberScheduled"),
                "available": status.get("numberAvailable"),
            },
        )
    rows.sort(key=lambda r: (r["namespace"], r["kind"], r["name"]))
    return {"workloads": rows}
