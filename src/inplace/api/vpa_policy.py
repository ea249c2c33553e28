"""A VPA's policy read from its JSON, and the capping and limit scaling upstream applies.

Transcribed from upstream's ``utils/vpa`` (``api.go``, ``capping.go``,
``limit_and_request_scaling.go``) and the admission controller's
``recommendation_provider.go``:

* ``updatePolicy.updateMode`` defaults to ``Recreate``; ``Auto`` (deprecated) means the same;
* a container's policy is the entry with its name, else the ``*`` entry;
* the recommender caps target, lowerBound and upperBound to ``minAllowed``/``maxAllowed``
  (zero values ignored) and keeps the uncapped target beside them;
* for a pod, ``RequestsOnly`` additionally caps the recommendation to the container's current
  limit, and ``RequestsAndLimits`` scales each limit so it keeps its ratio to the request.

Everything is pure, on plain dicts and :class:`~inplace.api.quantity.Quantity`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.objects import get_path
from inplace.api.quantity import Format, Quantity, QuantityError
from inplace.api.resources import CPU, MEMORY, ResourceList, parse_resource_list

__all__ = [
    "AUTO",
    "DEFAULT_CONTROLLED_RESOURCES",
    "INITIAL",
    "IN_PLACE",
    "IN_PLACE_OR_RECREATE",
    "OFF",
    "RECREATE",
    "REQUESTS_AND_LIMITS",
    "REQUESTS_ONLY",
    "ContainerResources",
    "PodRecommendation",
    "cap_recommendation",
    "container_policy",
    "container_resources",
    "controlled_resources",
    "controlled_values",
    "is_scaling_off",
    "min_replicas",
    "pod_container_resources",
    "pod_recommendations",
    "proportional_limit",
    "recommendation_for",
    "resize_body",
    "update_mode",
    "updates_running_pods",
]

OFF: Final = "Off"
INITIAL: Final = "Initial"
RECREATE: Final = "Recreate"
IN_PLACE_OR_RECREATE: Final = "InPlaceOrRecreate"
IN_PLACE: Final = "InPlace"
AUTO: Final = "Auto"
"""Deprecated upstream; means ``Recreate`` (kubernetes/autoscaler#8424)."""

REQUESTS_AND_LIMITS: Final = "RequestsAndLimits"
REQUESTS_ONLY: Final = "RequestsOnly"
DEFAULT_CONTROLLED_RESOURCES: Final = (CPU, MEMORY)
WILDCARD: Final = "*"


def update_mode(vpa: Mapping[str, Any]) -> str:
    """``spec.updatePolicy.updateMode``, ``Recreate`` when unset (upstream's ``GetUpdateMode``)."""
    mode = get_path(vpa, "spec", "updatePolicy", "updateMode")
    return mode if isinstance(mode, str) and mode else RECREATE


def updates_running_pods(vpa: Mapping[str, Any]) -> bool:
    """The VPA's updater acts on running pods: its mode is neither ``Off`` nor ``Initial``
    (those only recommend, or apply at admission)."""
    return update_mode(vpa) not in (OFF, INITIAL)


def min_replicas(vpa: Mapping[str, Any], default: int) -> int:
    """``spec.updatePolicy.minReplicas``, else the updater's global setting."""
    value = get_path(vpa, "spec", "updatePolicy", "minReplicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def container_policy(vpa: Mapping[str, Any], container: str) -> Mapping[str, Any] | None:
    """The ``resourcePolicy.containerPolicies`` entry for ``container``, else the ``*`` one."""
    default: Mapping[str, Any] | None = None
    policies = get_path(vpa, "spec", "resourcePolicy", "containerPolicies")
    for entry in policies if isinstance(policies, list) else ():
        if not isinstance(entry, Mapping):
            continue
        if entry.get("containerName") == container:
            return entry
        if entry.get("containerName") == WILDCARD:
            default = entry
    return default


def is_scaling_off(policy: Mapping[str, Any] | None) -> bool:
    """``mode: Off``: the container gets no recommendation and is never changed."""
    return policy is not None and policy.get("mode") == OFF


def controlled_resources(policy: Mapping[str, Any] | None) -> tuple[str, ...]:
    """``controlledResources``, default ``[cpu, memory]``."""
    raw = None if policy is None else policy.get("controlledResources")
    if raw is None:
        return DEFAULT_CONTROLLED_RESOURCES
    return tuple(r for r in raw if r in DEFAULT_CONTROLLED_RESOURCES)


def controlled_values(policy: Mapping[str, Any] | None) -> str:
    """``controlledValues``, default ``RequestsAndLimits``."""
    raw = None if policy is None else policy.get("controlledValues")
    return raw if raw in (REQUESTS_AND_LIMITS, REQUESTS_ONLY) else REQUESTS_AND_LIMITS


def _bounds(policy: Mapping[str, Any] | None, key: str) -> ResourceList:
    if policy is None:
        return {}
    try:
        return parse_resource_list(policy.get(key))
    except QuantityError:
        return {}  # validation refuses these; a stored bad value caps nothing


def _cap(
    recommendation: Mapping[str, Quantity],
    minimum: Mapping[str, Quantity],
    maximum: Mapping[str, Quantity],
) -> ResourceList:
    out: ResourceList = {}
    for name, value in recommendation.items():
        low = minimum.get(name)
        if low is not None and not low.is_zero() and value < low:
            value = low
        high = maximum.get(name)
        if high is not None and not high.is_zero() and value > high:
            value = high
        out[name] = value
    return out


def cap_recommendation(
    recommendation: Mapping[str, Any],
    policy: Mapping[str, Any] | None,
    global_max_allowed: Mapping[str, Quantity] | None = None,
) -> dict[str, Any]:
    """One ``containerRecommendations[]`` entry capped to the container's min/maxAllowed
    (target, lowerBound and upperBound; ``uncappedTarget`` is left as it was)."""
    minimum = _bounds(policy, "minAllowed")
    maximum = dict(_bounds(policy, "maxAllowed"))
    for name, value in (global_max_allowed or {}).items():
        maximum.setdefault(name, value)
    out = dict(recommendation)
    for key in ("target", "lowerBound", "upperBound"):
        if key in recommendation:
            capped = _cap(_resource_list(recommendation[key]), minimum, maximum)
            out[key] = {name: str(q) for name, q in capped.items()}
    return out


def _resource_list(raw: Any) -> ResourceList:
    try:
        return parse_resource_list(raw)
    except QuantityError:
        return {}


def recommendation_for(vpa: Mapping[str, Any], container: str) -> Mapping[str, Any] | None:
    """``status.recommendation.containerRecommendations[]`` for ``container``."""
    entries = get_path(vpa, "status", "recommendation", "containerRecommendations")
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and entry.get("containerName") == container:
            return entry
    return None


# -- limits in proportion ------------------------------------------------------------------


def proportional_limit(
    resource: str,
    original_limit: Quantity | None,
    original_request: Quantity | None,
    recommended_request: Quantity | None,
) -> Quantity | None:
    """The limit that keeps the original limit:request ratio at the recommended request
    (upstream's ``getProportionalResourceLimit``); None when no limit should be set."""
    if original_limit is None or original_limit.value() == 0:
        return None
    if recommended_request is None or recommended_request.value() == 0:
        return None
    if original_request is None or original_request.value() == 0:
        return recommended_request
    if original_request.milli_value() == original_limit.milli_value():
        return recommended_request
    if resource == CPU:
        # (limit * recommended) / request in millicores, remainder dropped.
        milli = original_limit.milli_value() * recommended_request.milli_value()
        return Quantity.from_milli(milli // original_request.milli_value(), original_limit.format)
    value = original_limit.value() * recommended_request.value() // original_request.value()
    return Quantity.from_int(value, original_limit.format)


@dataclass(frozen=True)
class ContainerResources:
    """What a container should run with: the requests and limits to write."""

    name: str
    requests: ResourceList
    limits: ResourceList

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "resources": {}}
        if self.requests:
            out["resources"]["requests"] = {k: str(v) for k, v in sorted(self.requests.items())}
        if self.limits:
            out["resources"]["limits"] = {k: str(v) for k, v in sorted(self.limits.items())}
        return out


def actual_requests_and_limits(
    pod: Mapping[str, Any], container: Mapping[str, Any]
) -> tuple[ResourceList, ResourceList]:
    """What the container runs with: ``status.containerStatuses[].resources`` when the node
    reports it (in-place resize), else the spec (upstream's ``ContainerRequestsAndLimits``)."""
    for status in get_path(pod, "status", "containerStatuses") or ():
        if isinstance(status, Mapping) and status.get("name") == container.get("name"):
            resources = status.get("resources")
            if isinstance(resources, Mapping):
                return (
                    _resource_list(resources.get("requests")),
                    _resource_list(resources.get("limits")),
                )
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}, {}
    return _resource_list(resources.get("requests")), _resource_list(resources.get("limits"))


def _cap_to_limit(
    recommendation: Mapping[str, Quantity], limits: Mapping[str, Quantity]
) -> ResourceList:
    out = dict(recommendation)
    for name, limit in limits.items():
        value = out.get(name)
        if value is not None and value.milli_value() > limit.milli_value():
            out[name] = limit
    return out


@dataclass(frozen=True)
class PodRecommendation:
    """A container's recommendation processed for one pod (upstream's capping processor):
    capped to min/maxAllowed and, under ``RequestsOnly``, to the container's limit."""

    name: str
    target: ResourceList
    lower_bound: ResourceList
    upper_bound: ResourceList
    requests: ResourceList
    """What the container runs with now (status resources, else spec)."""
    limits: ResourceList
    controlled_values: str


def pod_recommendations(pod: Mapping[str, Any], vpa: Mapping[str, Any]) -> list[PodRecommendation]:
    """The processed recommendation of every container of ``pod`` that has one and whose
    policy is not ``mode: Off``, in the pod's container order."""
    out: list[PodRecommendation] = []
    for container in get_path(pod, "spec", "containers") or ():
        if not isinstance(container, Mapping):
            continue
        name = str(container.get("name", ""))
        policy = container_policy(vpa, name)
        recommendation = recommendation_for(vpa, name)
        if recommendation is None or is_scaling_off(policy):
            continue
        requests, limits = actual_requests_and_limits(pod, container)
        minimum, maximum = _bounds(policy, "minAllowed"), _bounds(policy, "maxAllowed")
        values = controlled_values(policy)
        processed = []
        for key in ("target", "lowerBound", "upperBound"):
            capped = _cap(_resource_list(recommendation.get(key)), minimum, maximum)
            if values == REQUESTS_ONLY:
                capped = _cap_to_limit(capped, limits)
            processed.append(capped)
        target, lower, upper = processed
        out.append(PodRecommendation(name, target, lower, upper, requests, limits, values))
    return out


def container_resources(recommendation: PodRecommendation) -> ContainerResources:
    """Requests = the processed target; limits scaled to keep their ratio to the request
    under ``RequestsAndLimits`` (upstream's ``GetContainersResources``)."""
    new_limits: ResourceList = {}
    if recommendation.controlled_values == REQUESTS_AND_LIMITS:
        for resource in (CPU, MEMORY):
            limit = proportional_limit(
                resource,
                recommendation.limits.get(resource),
                recommendation.requests.get(resource),
                recommendation.target.get(resource),
            )
            if limit is not None:
                new_limits[resource] = limit
    return ContainerResources(recommendation.name, dict(recommendation.target), new_limits)


def pod_container_resources(
    pod: Mapping[str, Any], vpa: Mapping[str, Any]
) -> list[ContainerResources]:
    """For each container of ``pod`` with a recommendation: the requests and limits it
    should run with (what the updater resizes to and admission writes at creation)."""
    return [container_resources(r) for r in pod_recommendations(pod, vpa)]


def resize_body(resources: Sequence[ContainerResources]) -> dict[str, Any]:
    """A strategic merge patch for ``pods/NAME/resize`` that writes these requests/limits."""
    return {"spec": {"containers": [c.as_json() for c in resources]}}


def canonical_cpu(millicores: int) -> Quantity:
    """Upstream's ``QuantityFromCPUAmount``."""
    return Quantity.from_milli(millicores, Format.DECIMAL_SI)


def canonical_memory(bytes_: int) -> Quantity:
    """Upstream's ``QuantityFromMemoryAmount``."""
    return Quantity.from_int(bytes_, Format.BINARY_SI)
