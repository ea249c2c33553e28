"""Memory limits above the request: room for a burst that the request does not reserve.

Upstream's updater keeps each limit at its template's ratio to the request, so a pod
written with ``limit = request`` is killed by the first burst past its recommendation.
In place, a rise can be answered within one updater pass, so the request only has to
follow usage; the limit is the line where the kernel kills. With
``memory_limit_headroom`` (the ``inplace`` preset: 2) the updater writes each memory
limit at that multiple of the new request, and :func:`~.fit.fit_to_node` caps it at the
node's allocatable memory (a limit past the node protects nothing). The burst then uses
memory the node has and nobody reserved, and the next pass grows the request to cover it.

What it costs is the risk every Burstable pod carries: when the node itself runs out,
the kernel kills first the containers furthest above their requests (``inplace replay``
counts those kills too). It is applied only where Kubernetes allows it and the template
asked for a memory limit:

* the VPA controls the container's memory with ``RequestsAndLimits`` (upstream's
  default); under ``RequestsOnly`` the limit is the person's and stays;
* the container has a memory limit (one without stays unlimited);
* the pod is not ``Guaranteed``: a resize may not change a pod's QoS class, and a
  Guaranteed pod's limits must equal its requests.

Where the API refuses the raised limit anyway (a ResourceQuota on ``limits.memory``, a
LimitRange's maximum), the controller sends the resize again with upstream's limits
(:attr:`~.updater.Decision.without_headroom`) and that pod keeps them.

Kubernetes 1.33 forbids lowering a memory limit in place (under ``resizePolicy:
NotRequired``; 1.34 allows it). There a shrink is refused with
:data:`LIMIT_DECREASE_FORBIDDEN`, and the controller sends it again with each memory limit
kept where it is (:func:`keeping_memory_limits`): the request falls, the pod keeps its PID,
and its headroom is only wider.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inplace.api.quantity import Format, Quantity, read_quantity
from inplace.api.resources import GUARANTEED, MEMORY, get_pod_qos
from inplace.api.vpa_policy import REQUESTS_AND_LIMITS, ContainerResources, PodRecommendation

__all__ = [
    "LIMIT_DECREASE_FORBIDDEN",
    "keeping_memory_limits",
    "lacks_headroom",
    "with_headroom",
]

LIMIT_DECREASE_FORBIDDEN = "memory limits cannot be decreased"
"""What kube-apiserver 1.33 answers (422, on ``spec.containers[i].resources.limits[memory]``)
to a resize that lowers a memory limit."""


def _eligible(pod: Mapping[str, Any], recommendation: PodRecommendation) -> bool:
    return (
        recommendation.controlled_values == REQUESTS_AND_LIMITS
        and MEMORY in recommendation.target
        and MEMORY in recommendation.limits
        and get_pod_qos(pod) != GUARANTEED
    )


def with_headroom(
    resources: Sequence[ContainerResources],
    recommendations: Sequence[PodRecommendation],
    pod: Mapping[str, Any],
    factor: float,
) -> tuple[ContainerResources, ...]:
    """``resources`` with each eligible memory limit raised to ``factor`` times its
    request (never lowered below what the template's ratio gives)."""
    eligible = {r.name for r in recommendations if _eligible(pod, r)}
    out = []
    for res in resources:
        request, limit = res.requests.get(MEMORY), res.limits.get(MEMORY)
        if res.name in eligible and request is not None and limit is not None:
            wanted = int(request.value() * factor)
            if wanted > limit.value():
                limits = dict(res.limits)
                limits[MEMORY] = Quantity.from_int(wanted, Format.BINARY_SI)
                res = ContainerResources(res.name, dict(res.requests), limits)
        out.append(res)
    return tuple(out)


def lacks_headroom(
    pod: Mapping[str, Any], recommendations: Sequence[PodRecommendation], factor: float
) -> bool:
    """An eligible container still runs with its memory limit equal to its request (as
    its template wrote it): one resize gives it the headroom, even when its request is
    on target."""
    if factor <= 1.0:
        return False
    for rec in recommendations:
        request, limit = rec.requests.get(MEMORY), rec.limits.get(MEMORY)
        if _eligible(pod, rec) and request is not None and limit is not None and limit <= request:
            return True
    return False


def keeping_memory_limits(
    resources: Sequence[ContainerResources], pod: Mapping[str, Any]
) -> tuple[ContainerResources, ...]:
    """``resources`` with no memory limit below the one its container runs with: the
    resize a 1.33 API server accepts. A request never exceeds its new limit, so it stays
    below the kept one."""
    current: dict[str, int] = {}
    for container in (pod.get("spec") or {}).get("containers") or ():
        running = read_quantity(
            ((container.get("resources") or {}).get("limits") or {}).get(MEMORY)
        )
        if running is not None:
            current[str(container.get("name"))] = running
    out = []
    for res in resources:
        limit = res.limits.get(MEMORY)
        kept = current.get(res.name)
        if limit is not None and kept is not None and limit.value() < kept:
            limits = dict(res.limits)
            limits[MEMORY] = Quantity.from_int(kept, Format.BINARY_SI)
            res = ContainerResources(res.name, dict(res.requests), limits)
        out.append(res)
    return tuple(out)
