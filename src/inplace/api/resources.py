"""Resource math on plain pod dicts: what a pod requests, its limits, its QoS class.

The rules are upstream's, so the scheduler, the node agent and quota charge a pod exactly what
Kubernetes would (``k8s.io/component-helpers/resource/helpers.go`` and
``pkg/apis/core/v1/helper/qos``):

* A container's requests default to its limits where a limit is set and the request is not,
  as API defaulting does; applying it here makes un-defaulted pods (e.g. in admission) count
  the same as stored ones.
* Pod requests are the sum of the regular containers and the sidecars (``restartPolicy:
  Always`` init containers), raised to the peak of any regular init container plus the
  sidecars started before it, replaced by pod-level ``spec.resources`` for the resources it
  names, plus ``spec.overhead``.
* While a resize is in flight, a container is charged ``max(desired, allocated, actual)``
  per resource; ``desired`` (the spec) drops out once the resize is ``Infeasible``. This is
  what a scheduler must reserve so that neither the old nor the new size can overcommit.

Resource lists are ``dict[str, Quantity]``; every function returns a new dict and never
mutates its inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from inplace.api.quantity import Format, Quantity, QuantityError

__all__ = [
    "BEST_EFFORT",
    "BURSTABLE",
    "CPU",
    "EPHEMERAL_STORAGE",
    "GUARANTEED",
    "MEMORY",
    "ResourceList",
    "add",
    "container_limits",
    "container_requests",
    "get_pod_qos",
    "is_resize_infeasible",
    "is_sidecar",
    "max_each",
    "parse_resource_list",
    "pod_level_requests",
    "pod_limits",
    "pod_requests",
    "qos_class",
    "requests_milli_bytes",
    "resize_accounting_requests",
    "sub",
]

ResourceList = dict[str, Quantity]

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
HUGEPAGES_PREFIX: Final = "hugepages-"

GUARANTEED: Final = "Guaranteed"
BURSTABLE: Final = "Burstable"
BEST_EFFORT: Final = "BestEffort"

_QOS_RESOURCES: Final = (CPU, MEMORY)
_ZERO: Final = Quantity(0, Format.DECIMAL_SI)

# -- resource lists --------------------------------------------------------------------------


def parse_resource_list(raw: Mapping[str, Any] | None) -> ResourceList:
    """A JSON resource list (``{"cpu": "500m"}``) as quantities.

    Values decode as upstream's JSON decoding does (whitespace around a string ignored, null
    is zero). A bad value raises :class:`QuantityError` naming the resource.
    """
    if not raw:
        return {}
    if not isinstance(raw, Mapping):
        raise QuantityError(raw, "a resource list must be an object")
    out: ResourceList = {}
    from_json = Quantity.from_json
    for name, value in raw.items():
        try:
            out[name] = from_json(value)
        except QuantityError as err:
            raise err.for_resource(name) from None
    return out


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """Per-resource sum over the union of names."""
    out = dict(a)
    _add_into(out, b)
    return out


def sub(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """Per-resource ``a - b`` over the union of names (a missing name counts as zero), e.g.
    the extra room a resize needs: ``sub(desired, allocated)``."""
    out = dict(a)
    for name, q in b.items():
        have = out.get(name)
        out[name] = -q if have is None else have - q
    return out


def max_each(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """Per-resource maximum over the union of names."""
    out = dict(a)
    _max_into(out, b)
    return out


def _add_into(acc: ResourceList, other: Mapping[str, Quantity]) -> None:
    for name, q in other.items():
        have = acc.get(name)
        acc[name] = q if have is None else have + q


def _max_into(acc: ResourceList, other: Mapping[str, Quantity]) -> None:
    for name, q in other.items():
        have = acc.get(name)
        if have is None or q.nanos > have.nanos:
            acc[name] = q


def requests_milli_bytes(reqs: Mapping[str, Quantity]) -> tuple[int, int]:
    """``(cpu millicores, memory bytes)``, each rounded up; the scheduler's fast path."""
    cpu = reqs.get(CPU)
    mem = reqs.get(MEMORY)
    return (
        0 if cpu is None else cpu.milli_value(),
        0 if mem is None else mem.value(),
    )


# -- containers ------------------------------------------------------------------------------


def _resources(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    res = obj.get("resources")
    return res if isinstance(res, Mapping) else {}


def container_requests(container: Mapping[str, Any]) -> ResourceList:
    """The container's requests, each missing one defaulted to its limit (API defaulting)."""
    res = _resources(container)
    requests = parse_resource_list(res.get("requests"))
    limits = res.get("limits")
    if limits:
        for name, q in parse_resource_list(limits).items():
            requests.setdefault(name, q)
    return requests


def container_limits(container: Mapping[str, Any]) -> ResourceList:
    """The container's limits as given (no limit means unlimited, and is absent)."""
    return parse_resource_list(_resources(container).get("limits"))


def is_sidecar(container: Mapping[str, Any]) -> bool:
    """A restartable init container (``restartPolicy: Always``): runs alongside the pod."""
    return container.get("restartPolicy") == "Always"


def is_resize_infeasible(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's ``PodResizePending`` condition says ``Infeasible``."""
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodResizePending":
            return bool(cond.get("reason") == "Infeasible")
    return False


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _aggregate(
    spec: Mapping[str, Any],
    per_container: Callable[[Mapping[str, Any], bool], ResourceList],
) -> ResourceList:
    """Upstream's container aggregation (KEP-753): regular containers and sidecars add up;
    a regular init container runs alone with the sidecars started before it, and the pod
    must fit the largest such moment."""
    result: ResourceList = {}
    for c in spec.get("containers") or ():
        _add_into(result, per_container(c, False))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for c in spec.get("initContainers") or ():
        reqs = per_container(c, True)
        if is_sidecar(c):
            _add_into(result, reqs)
            _add_into(sidecars, reqs)
            _max_into(init_peak, sidecars)
        else:
            _max_into(init_peak, add(reqs, sidecars))
    _max_into(result, init_peak)
    return result


def _spec_requests(container: Mapping[str, Any], _is_init: bool) -> ResourceList:
    return container_requests(container)


def _statuses_by_name(pod: Mapping[str, Any], key: str) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for cs in (pod.get("status") or {}).get(key) or ():
        name = cs.get("name")
        if isinstance(name, str):
            out[name] = cs
    return out


def _resize_accounting(
    pod: Mapping[str, Any],
) -> Callable[[Mapping[str, Any], bool], ResourceList]:
    """Per container: ``max(desired unless Infeasible, allocated, actual)``."""
    infeasible = is_resize_infeasible(pod)
    statuses = _statuses_by_name(pod, "containerStatuses")
    init_statuses = _statuses_by_name(pod, "initContainerStatuses")

    def charge(container: Mapping[str, Any], is_init: bool) -> ResourceList:
        desired = container_requests(container)
        if is_init and not is_sidecar(container):
            return desired  # regular init containers cannot be resized
        cs = (init_statuses if is_init else statuses).get(container.get("name", ""))
        if cs is None:
            return desired
        allocated = cs.get("allocatedResources")
        actual = _resources(cs).get("requests")
        if allocated is None and actual is None:
            return desired
        out: ResourceList = {} if infeasible else desired
        _max_into(out, parse_resource_list(allocated))
        _max_into(out, parse_resource_list(actual))
        return out

    return charge


def _is_pod_level_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def _pod_level(pod: Mapping[str, Any]) -> tuple[ResourceList, ResourceList] | None:
    """Pod-level ``(requests, limits)`` as given, cpu/memory/hugepages only; ``None`` when
    the pod names none of those (upstream ``IsPodLevelResourcesSet``)."""
    res = _spec(pod).get("resources")
    if not isinstance(res, Mapping):
        return None
    requests = {
        k: v
        for k, v in parse_resource_list(res.get("requests")).items()
        if _is_pod_level_resource(k)
    }
    limits = {
        k: v for k, v in parse_resource_list(res.get("limits")).items() if _is_pod_level_resource(k)
    }
    if not requests and not limits:
        return None
    return requests, limits


def _default_pod_level_requests(
    requests: ResourceList, limits: Mapping[str, Quantity], containers: Mapping[str, Quantity]
) -> None:
    """API defaulting of pod-level requests (KEP-2837): a resource with a pod-level limit
    and no pod-level request gets the containers' aggregate request when they request it
    (never for hugepages), else the limit."""
    for name, limit in limits.items():
        if name in requests:
            continue
        from_containers = containers.get(name)
        if from_containers is not None and not name.startswith(HUGEPAGES_PREFIX):
            requests[name] = from_containers
        else:
            requests[name] = limit


def pod_level_requests(pod: Mapping[str, Any]) -> ResourceList | None:
    """The pod-level ``spec.resources.requests`` (cpu, memory, hugepages only), defaulted as
    the API defaults them, or ``None`` when the pod sets no pod-level resources."""
    pod_level = _pod_level(pod)
    if pod_level is None:
        return None
    requests, limits = pod_level
    if any(name not in requests for name in limits):
        _default_pod_level_requests(requests, limits, _aggregate(_spec(pod), _spec_requests))
    return requests


# -- pods ------------------------------------------------------------------------------------


def pod_requests(
    pod: Mapping[str, Any], *, use_status: bool = False, exclude_overhead: bool = False
) -> ResourceList:
    """What the pod requests (upstream ``PodRequests``).

    ``use_status`` charges each resizing container ``max(desired, allocated, actual)`` (see
    :func:`resize_accounting_requests`); ``exclude_overhead`` leaves ``spec.overhead`` out.
    """
    spec = _spec(pod)
    per_container = _resize_accounting(pod) if use_status else _spec_requests
    reqs = _aggregate(spec, per_container)
    pod_level = _pod_level(pod)
    if pod_level is not None:
        requests, limits = pod_level
        # Defaulting from the aggregate just computed: with use_status that is the resize
        # charge, which is what the pod may really hold.
        _default_pod_level_requests(requests, limits, reqs)
        reqs.update(requests)
    if not exclude_overhead:
        overhead = spec.get("overhead")
        if overhead:
            _add_into(reqs, parse_resource_list(overhead))
    return reqs


def resize_accounting_requests(pod: Mapping[str, Any]) -> ResourceList:
    """What a scheduler or quota charges a pod whose resize may be in flight: per container
    and resource ``max(desired (unless Infeasible), allocated, actual)``, aggregated as
    :func:`pod_requests` does. Never less than either the old or the new size, so admitting
    the resize can never overcommit the node, whichever way it ends."""
    return pod_requests(pod, use_status=True)


def pod_limits(pod: Mapping[str, Any]) -> ResourceList:
    """The pod's limits (upstream ``PodLimits``): aggregated like requests, pod-level limits
    where given, overhead added to the resources that have a limit. A resource no container
    limits is absent, i.e. unlimited for the containers that do not set it."""
    spec = _spec(pod)
    limits = _aggregate(spec, lambda c, _init: container_limits(c))
    pod_level = _pod_level(pod)
    if pod_level is not None:
        limits.update(pod_level[1])
    overhead = spec.get("overhead")
    if overhead:
        for name, q in parse_resource_list(overhead).items():
            have = limits.get(name)
            if have is not None:
                limits[name] = have + q
    return limits


def _positive_qos(resources: Iterable[tuple[str, Quantity]]) -> ResourceList:
    """cpu and memory only, zero values dropped, summed."""
    out: ResourceList = {}
    for name, q in resources:
        if name in _QOS_RESOURCES and q.nanos > 0:
            have = out.get(name)
            out[name] = q if have is None else have + q
    return out


def _has_cpu_and_memory(limits: Mapping[str, Quantity]) -> bool:
    return all(name in limits for name in _QOS_RESOURCES)


def qos_class(pod: Mapping[str, Any], *, requests_from_limits: bool = True) -> str:
    """The QoS class the pod's spec gives it (upstream ``ComputePodQOS``).

    Only cpu and memory count. ``BestEffort``: no non-zero request or limit anywhere.
    ``Guaranteed``: every container (init ones too) limits both cpu and memory, and requests
    equal limits. Otherwise ``Burstable``. Pod-level ``spec.resources``, when set, decide
    alone. ``status.qosClass`` is ignored; see :func:`get_pod_qos`. A container's missing
    request counts as its limit (what defaulting stores) unless `requests_from_limits` is
    False, for a pod exactly as given (upstream's function applied to an undefaulted pod).
    """
    requests: ResourceList = {}
    limits: ResourceList = {}
    guaranteed = True
    pod_level = _pod_level(pod)
    if pod_level is not None:
        pod_reqs, pod_lims = pod_level
        if any(name not in pod_reqs for name in pod_lims):
            _default_pod_level_requests(pod_reqs, pod_lims, _aggregate(_spec(pod), _spec_requests))
        requests = _positive_qos(pod_reqs.items())
        limits = _positive_qos(pod_lims.items())
        if limits and not _has_cpu_and_memory(limits):
            guaranteed = False
    else:
        spec = _spec(pod)
        for c in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ())):
            c_limits = _positive_qos(container_limits(c).items())
            c_requests = (
                container_requests(c)
                if requests_from_limits
                else parse_resource_list(_resources(c).get("requests"))
            )
            _add_into(requests, _positive_qos(c_requests.items()))
            _add_into(limits, c_limits)
            if not _has_cpu_and_memory(c_limits):
                guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and requests == limits:
        return GUARANTEED
    return BURSTABLE


def get_pod_qos(pod: Mapping[str, Any]) -> str:
    """``status.qosClass`` when set (it never changes after creation), else :func:`qos_class`."""
    stored = (pod.get("status") or {}).get("qosClass")
    if isinstance(stored, str) and stored:
        return stored
    return qos_class(pod)
