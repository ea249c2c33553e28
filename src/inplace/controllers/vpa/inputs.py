"""What the live recommender reads from API objects: usage samples, OOM kills and pauses.

Pure functions over JSON, so the controller stays thin and the rules are table-tested:

* :func:`usage_samples` — a ``metrics.k8s.io`` PodMetrics object (the node agents' 5 s
  samples, served by the API server) as ``(container, time, millicores, bytes)``;
* :func:`oom_kills` — the containers of a pod whose ``lastState.terminated.reason`` is
  ``OOMKilled``, with the kill's time (one event per kill: the time identifies it);
* :func:`paused_containers` — the containers a ``MemoryPaused=True`` condition names, with
  the time the pause began (the condition's ``lastTransitionTime``);
* :func:`container_memory` — a container's memory request and limit, in bytes, and
  :func:`memory_at_event` — what an OOM kill or a pause says was in use;
* :func:`selects_recommender` — whether a VPA is a named recommender's (``spec.recommenders``).

PodMetrics themselves come from :mod:`inplace.controllers.usage` (shared with the rescuer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inplace.api.memorypause import paused_containers as paused_names
from inplace.api.memorypause import paused_since
from inplace.api.objects import get_path
from inplace.api.quantity import read_quantity
from inplace.api.resources import CPU, MEMORY
from inplace.api.timestamps import parse_rfc3339
from inplace.api.vpa_policy import actual_requests_and_limits

__all__ = [
    "DEFAULT_RECOMMENDER",
    "Sample",
    "container_memory",
    "memory_at_event",
    "oom_kills",
    "paused_containers",
    "selects_recommender",
    "usage_samples",
]

DEFAULT_RECOMMENDER = "default"
"""The name of upstream's recommender, to which a VPA without ``spec.recommenders`` belongs."""


@dataclass(frozen=True)
class Sample:
    container: str
    at: float
    cpu_millicores: int | None
    memory_bytes: int | None


def _time(raw: Any) -> float | None:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return parse_rfc3339(raw).timestamp()
    except ValueError:
        return None


def usage_samples(metrics: Mapping[str, Any]) -> list[Sample]:
    """One sample per container of a PodMetrics object (none without a time stamp)."""
    at = _time(metrics.get("timestamp"))
    if at is None:
        return []
    out = []
    for container in metrics.get("containers") or ():
        if not isinstance(container, Mapping) or not container.get("name"):
            continue
        usage = container.get("usage") or {}
        cpu = read_quantity(usage.get(CPU), milli=True)
        out.append(Sample(str(container["name"]), at, cpu, read_quantity(usage.get(MEMORY))))
    return out


def oom_kills(pod: Mapping[str, Any]) -> list[tuple[str, float]]:
    """``(container, finishedAt)`` of each container whose last termination was an OOM kill."""
    out = []
    for status in get_path(pod, "status", "containerStatuses") or ():
        terminated = get_path(status, "lastState", "terminated")
        if not isinstance(terminated, Mapping) or terminated.get("reason") != "OOMKilled":
            continue
        at = _time(terminated.get("finishedAt"))
        if at is not None:
            out.append((str(status.get("name")), at))
    return out


def paused_containers(pod: Mapping[str, Any]) -> list[tuple[str, float]]:
    """``(container, since)`` for each container the ``MemoryPaused=True`` condition names
    (:mod:`inplace.api.memorypause` defines its format)."""
    since = paused_since(pod)
    if since is None:
        return []
    return [(name, since.timestamp()) for name in paused_names(pod)]


def container_memory(pod: Mapping[str, Any], name: str) -> tuple[int, int | None]:
    """``(request, limit)`` of a container's memory in bytes, as it runs now (0: no
    request; None: no limit)."""
    for container in get_path(pod, "spec", "containers") or ():
        if isinstance(container, Mapping) and container.get("name") == name:
            requests, limits = actual_requests_and_limits(pod, container)
            request, limit = requests.get(MEMORY), limits.get(MEMORY)
            return (
                request.value() if request is not None else 0,
                limit.value() if limit is not None else None,
            )
    return 0, None


def memory_at_event(request: int, limit: int | None, *, kill: bool) -> int:
    """The memory an OOM kill (``kill``) or a pause at the limit says the container was
    using, which the recommender bumps: the request for a kill, as upstream's OOM observer
    takes it; the limit for a pause, which happens there."""
    return request if kill else max(request, limit or 0)


def cpu_request_millicores(pod: Mapping[str, Any], name: str) -> int:
    for container in get_path(pod, "spec", "containers") or ():
        if isinstance(container, Mapping) and container.get("name") == name:
            requests, _ = actual_requests_and_limits(pod, container)
            cpu = requests.get(CPU)
            return cpu.milli_value() if cpu is not None else 0
    return 0


def selects_recommender(vpa: Mapping[str, Any], name: str) -> bool:
    """Whether the recommender called ``name`` acts for ``vpa``: one its ``spec.recommenders``
    names; one without recommenders is the default recommender's alone (upstream's
    ``filterVPAs`` in vertical-pod-autoscaler/pkg/recommender/input/cluster_feeder.go)."""
    selectors = get_path(vpa, "spec", "recommenders") or []
    if not selectors:
        return name == DEFAULT_RECOMMENDER
    return any(isinstance(s, Mapping) and s.get("name") == name for s in selectors)
