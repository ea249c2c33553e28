"""API objects read as the rescuer's model values, and its decisions written as API bodies.

Pure, like :mod:`.model`: pods, nodes and VerticalPodAutoscalers in (plain JSON dicts, never
mutated), :class:`~.model.Pending`, :class:`~.model.NodeRoom` and :class:`~.model.Donor`
out; and back, a :class:`~.model.Shrink` or :class:`~.model.Growth` as a ``pods/resize``
strategic merge patch. The controller and ``inplace rescue --dry-run`` share all of it.

What the scheduler knows is read from what it writes: a pod is pending for room when its
``PodScheduled`` condition is ``False``/``Unschedulable`` and the message counts
``Insufficient cpu`` or ``Insufficient memory`` (and no preemption is under way for it:
``status.nominatedNodeName`` unset). A pod's charge on its node is the scheduler's:
``max(desired unless Infeasible, allocated, actual)`` per container.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.annotations import ORIGINAL_RESOURCES, SHRINKABLE
from inplace.api.conditions import find_condition
from inplace.api.original_resources import OriginalResources, parse_original_resources
from inplace.api.placement import (
    UNSCHEDULABLE_TAINT,
    affinity_matches,
    format_cpu,
    format_memory,
    insufficient_resources,
    tolerates,
    untolerated_taint,
)
from inplace.api.quantity import Quantity, QuantityError
from inplace.api.resources import (
    CPU,
    MEMORY,
    ResourceList,
    container_limits,
    container_requests,
    parse_resource_list,
    pod_requests,
    requests_milli_bytes,
    resize_accounting_requests,
)
from inplace.api.timestamps import parse_rfc3339
from inplace.api.vpa_policy import (
    IN_PLACE,
    IN_PLACE_OR_RECREATE,
    container_policy,
    controlled_resources,
    is_scaling_off,
    pod_container_resources,
    pod_recommendations,
    update_mode,
)
from inplace.api.vpa_targets import Lookup, controlling_vpa

from .model import (
    DEFAULT_MARGIN,
    ContainerShare,
    Donor,
    Growth,
    NodeRoom,
    Pending,
    Shrink,
    Size,
    container_floor,
)
from .usage import UsagePeaks

__all__ = [
    "RescueSettings",
    "allows_shrinking",
    "donor_of",
    "goal_of",
    "is_shrunk",
    "lacking",
    "node_accepts",
    "node_rooms",
    "original_resources",
    "pending_of",
    "pod_key",
    "resize_patch",
    "size_of",
    "unsettled",
    "vpa_of",
]

Obj = Mapping[str, Any]

DEFAULT_MAX_PODS: Final = 110
MIB: Final = 1024 * 1024


@dataclass(frozen=True)
class RescueSettings:
    """The rescuer's knobs (``inplace controller-manager --rescue-*``)."""

    margin: float = DEFAULT_MARGIN
    """Room kept above a container's recent peak usage."""
    min_cpu: int = 10
    """No container is shrunk below this many millicores."""
    min_memory: int = 16 * MIB
    """No container is shrunk below this many bytes."""


# -- small readers ------------------------------------------------------------------------------


def pod_key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _annotations(pod: Obj) -> Mapping[str, Any]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def _priority(pod: Obj) -> int:
    value = (pod.get("spec") or {}).get("priority")
    return value if isinstance(value, int) else 0


def _containers(pod: Obj) -> list[Obj]:
    return [c for c in (pod.get("spec") or {}).get("containers") or () if isinstance(c, Mapping)]


def size_of(resources: Mapping[str, Quantity]) -> Size:
    cpu, memory = requests_milli_bytes(resources)
    return Size(cpu, memory)


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _created(pod: Obj) -> float:
    text = (pod.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_rfc3339(text).timestamp() if isinstance(text, str) else 0.0
    except ValueError:
        return 0.0


# -- pending pods -------------------------------------------------------------------------------


def lacking(pod: Obj) -> frozenset[str]:
    """The resources (``cpu``, ``memory``) the scheduler last said ``pod`` could not get; empty
    unless the pod is pending for room with no preemption under way for it."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    if (pod.get("spec") or {}).get("nodeName") or meta.get("deletionTimestamp"):
        return frozenset()
    if _terminal(pod) or status.get("nominatedNodeName"):
        return frozenset()
    cond = find_condition(pod, "PodScheduled")
    if cond is None or cond.get("status") != "False" or cond.get("reason") != "Unschedulable":
        return frozenset()
    message = str(cond.get("message") or "")
    if "preempting" in message:
        return frozenset()  # the scheduler is evicting lower-priority pods for it
    return insufficient_resources(message)


def node_ready(node: Obj) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def node_accepts(node: Obj, pod: Obj) -> bool:
    """Every rule the scheduler applies but room: the node is Ready and schedulable, its
    taints are tolerated, ``nodeSelector`` and required node affinity match."""
    meta = node.get("metadata") or {}
    name = str(meta.get("name") or "")
    spec = pod.get("spec") or {}
    tolerations = [t for t in spec.get("tolerations") or () if isinstance(t, Mapping)]
    if not node_ready(node):
        return False
    node_spec = node.get("spec") or {}
    if node_spec.get("unschedulable"):
        taint = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
        if not any(tolerates(t, taint) for t in tolerations):
            return False
    taints = [t for t in node_spec.get("taints") or () if isinstance(t, Mapping)]
    if untolerated_taint(taints, tolerations) is not None:
        return False
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    terms = affinity.get("nodeSelectorTerms") or () if isinstance(affinity, Mapping) else None
    return affinity_matches(spec.get("nodeSelector") or {}, terms, meta.get("labels") or {}, name)


def pending_of(pod: Obj, nodes: Iterable[Obj]) -> Pending | None:
    """The pod as a :class:`Pending`, if it is pending for lack of CPU or memory."""
    if not lacking(pod):
        return None
    try:
        request = size_of(pod_requests(pod))
    except (QuantityError, ValueError, TypeError):
        return None
    eligible = frozenset(
        str((n.get("metadata") or {}).get("name") or "") for n in nodes if node_accepts(n, pod)
    )
    return Pending(pod_key(pod), _priority(pod), request, eligible, _created(pod))


# -- nodes --------------------------------------------------------------------------------------


def _allocatable(node: Obj) -> tuple[Size, int]:
    status = node.get("status") or {}
    raw = status.get("allocatable") or status.get("capacity") or {}
    try:
        res = parse_resource_list(raw)
    except QuantityError:
        return Size(), 0
    pods = res.get("pods")
    return size_of(res), DEFAULT_MAX_PODS if pods is None else pods.value()


def node_rooms(nodes: Iterable[Obj], pods: Iterable[Obj]) -> list[NodeRoom]:
    """Each node's free room: allocatable minus the charge of every pod bound to it that has
    not finished, and minus pods nominated to it (the scheduler holds room for them)."""
    used: dict[str, Size] = {}
    count: dict[str, int] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        node = spec.get("nodeName") or (pod.get("status") or {}).get("nominatedNodeName")
        if not node or _terminal(pod):
            continue
        try:
            charge = size_of(resize_accounting_requests(pod))
        except (QuantityError, ValueError, TypeError):
            continue
        used[node] = used.get(node, Size()) + charge
        count[node] = count.get(node, 0) + 1
    out = []
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name") or "")
        allocatable, max_pods = _allocatable(node)
        out.append(
            NodeRoom(name, allocatable - used.get(name, Size()), max_pods - count.get(name, 0))
        )
    return out


# -- donors -------------------------------------------------------------------------------------


def vpa_of(pod: Obj, vpas: Iterable[Obj], lookup: Lookup) -> Obj | None:
    """The VerticalPodAutoscaler that controls the pod, whatever its mode:
    :func:`inplace.api.vpa_targets.controlling_vpa`, the rule the VPA updater, its admission
    and the memory-pause responder use (the oldest VPA whose readable target is the pod's
    top-most controller and selects it), so the rescuer never shrinks by another VPA's bounds."""
    return controlling_vpa(pod, vpas, lookup)


def _allowed_by_vpa(vpa: Obj | None) -> bool:
    return vpa is not None and update_mode(vpa) in (IN_PLACE, IN_PLACE_OR_RECREATE)


def allows_shrinking(pod: Obj, vpa: Obj | None) -> bool:
    """``inplace.dev/shrinkable: "true"``, or a VPA in ``InPlace``/``InPlaceOrRecreate`` and
    not ``inplace.dev/shrinkable: "false"``."""
    annotation = _annotations(pod).get(SHRINKABLE)
    return annotation == "true" or (annotation != "false" and _allowed_by_vpa(vpa))


def unsettled(pod: Obj) -> str:
    """Why the pod's size is not settled ("" when desired, allocated and actual agree)."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return "not running"
    for ctype in ("PodResizePending", "PodResizeInProgress"):
        if find_condition(pod, ctype) is not None:
            return "resizing"
    statuses = {
        cs.get("name"): cs
        for cs in status.get("containerStatuses") or ()
        if isinstance(cs, Mapping)
    }
    for container in _containers(pod):
        cs = statuses.get(container.get("name"))
        if cs is None or cs.get("allocatedResources") is None:
            return "not running"
        desired = size_of(container_requests(container))
        allocated = size_of(parse_resource_list(cs.get("allocatedResources")))
        actual = size_of(parse_resource_list((cs.get("resources") or {}).get("requests")))
        if desired != allocated or (cs.get("resources") is not None and desired != actual):
            return "resizing"
    return ""


def _fixed(pod: Obj) -> Size:
    """The pod's charge with every regular container requesting nothing."""
    shadow = copy.deepcopy(dict(pod))
    for container in (shadow.get("spec") or {}).get("containers") or ():
        container["resources"] = {"requests": {CPU: "0", MEMORY: "0"}}
    return size_of(pod_requests(shadow))


def _bound(values: Mapping[str, Quantity] | None) -> Size | None:
    return None if not values else size_of(values)


def donor_of(
    pod: Obj,
    *,
    vpa: Obj | None,
    peaks: UsagePeaks,
    now: float,
    settings: RescueSettings = RescueSettings(),
) -> Donor | str:
    """The pod as a :class:`Donor`, or why it is not one."""
    meta = pod.get("metadata") or {}
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or meta.get("deletionTimestamp") or _terminal(pod):
        return "not running"
    annotation = _annotations(pod).get(SHRINKABLE)
    if annotation == "false":
        return f"{SHRINKABLE} is false"
    if annotation != "true" and not _allowed_by_vpa(vpa):
        return f"not {SHRINKABLE} and no VPA in InPlace or InPlaceOrRecreate"
    if ((pod.get("spec") or {}).get("resources") or {}).get("requests") or (
        (pod.get("spec") or {}).get("resources") or {}
    ).get("limits"):
        return "pod-level resources cannot be resized"
    why = unsettled(pod)
    if why:
        return why
    key = pod_key(pod)
    lower_bounds: dict[str, ResourceList] = {}
    if vpa is not None:
        lower_bounds = {r.name: r.lower_bound for r in pod_recommendations(pod, vpa)}
    shares: list[ContainerShare] = []
    minimum = Size(settings.min_cpu, settings.min_memory)
    try:
        for container in _containers(pod):
            name = str(container.get("name") or "")
            request = size_of(container_requests(container))
            peak = peaks.peak(key, name, now)
            if peak is None:
                return "usage not known yet"
            policy = container_policy(vpa, name) if vpa is not None else None
            min_allowed = _bound(parse_resource_list(policy.get("minAllowed"))) if policy else None
            floor = container_floor(
                peak,
                margin=settings.margin,
                lower_bound=_bound(lower_bounds.get(name)),
                min_allowed=min_allowed,
                minimum=minimum,
            )
            if annotation != "true":  # only what the VPA controls may move
                controlled = () if is_scaling_off(policy) else controlled_resources(policy)
                floor = Size(
                    floor.cpu if CPU in controlled else request.cpu,
                    floor.memory if MEMORY in controlled else request.memory,
                )
            shares.append(ContainerShare(name, request, floor))
        charge = size_of(resize_accounting_requests(pod))
        fixed = _fixed(pod)
    except (QuantityError, ValueError, TypeError):
        return "resources cannot be read"
    return Donor(key, str(node), _priority(pod), tuple(shares), charge, fixed, _created(pod))


# -- shrunk pods and their goal ------------------------------------------------------------------


def original_resources(pod: Obj) -> dict[str, dict[str, dict[str, str]]]:
    """Each container's cpu/memory requests and limits now (the annotation's value)."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for container in _containers(pod):
        requests = {
            k: str(v) for k, v in container_requests(container).items() if k in (CPU, MEMORY)
        }
        limits = {k: str(v) for k, v in container_limits(container).items() if k in (CPU, MEMORY)}
        out[str(container.get("name") or "")] = {"requests": requests, "limits": limits}
    return out


def remembered(pod: Obj) -> OriginalResources | None:
    """The :data:`~inplace.api.annotations.ORIGINAL_RESOURCES` annotation, parsed."""
    text = _annotations(pod).get(ORIGINAL_RESOURCES)
    if not isinstance(text, str):
        return None
    try:
        return parse_original_resources(text)
    except ValueError:
        return None


def is_shrunk(pod: Obj) -> bool:
    return ORIGINAL_RESOURCES in _annotations(pod)


def current_sizes(pod: Obj) -> dict[str, Size]:
    return {str(c.get("name") or ""): size_of(container_requests(c)) for c in _containers(pod)}


def goal_of(pod: Obj, vpa: Obj | None) -> dict[str, Size] | None:
    """What a shrunk pod grows back to: its VPA's target where the VPA allows in-place
    changes and has one, else its remembered original requests."""
    if _allowed_by_vpa(vpa):
        assert vpa is not None
        targets = {r.name: size_of(r.requests) for r in pod_container_resources(pod, vpa)}
        if targets:
            current = current_sizes(pod)
            return {name: targets.get(name, size) for name, size in current.items()}
    original = remembered(pod)
    if original is None:
        return None
    return {name: size_of(sections.get("requests") or {}) for name, sections in original.items()}


# -- bodies ----------------------------------------------------------------------------------------


def _amount(resource: str, quantity: Quantity) -> int:
    return quantity.milli_value() if resource == CPU else quantity.value()


def _quantity(resource: str, value: int) -> str:
    return format_cpu(value) if resource == CPU else format_memory(value)


def resize_patch(
    pod: Obj,
    changes: Sequence[tuple[str, Size, Size]],
    *,
    exact: Mapping[str, Mapping[str, Mapping[str, Quantity]]] | None = None,
) -> dict[str, Any]:
    """The ``pods/resize`` strategic merge patch giving each container in ``changes`` its new
    requests. A limit equal to the request moves with it (a Guaranteed pod stays Guaranteed);
    another limit stays, raised to the request if it would be below it. ``exact`` (per
    container requests and limits, e.g. the remembered originals) is written as it is for
    the containers it names."""
    by_name = {str(c.get("name") or ""): c for c in _containers(pod)}
    containers: list[dict[str, Any]] = []
    for name, _before, after in changes:
        container = by_name.get(name)
        if container is None:
            continue
        if exact is not None and name in exact:
            sections = exact[name]
            exact_resources: dict[str, Any] = {}
            for section in ("requests", "limits"):
                values = sections.get(section) or {}
                if values:
                    exact_resources[section] = {k: str(v) for k, v in sorted(values.items())}
            containers.append({"name": name, "resources": exact_resources})
            continue
        requests_now = container_requests(container)
        limits_now = container_limits(container)
        requests: dict[str, str] = {}
        limits: dict[str, str] = {}
        for resource, value in ((CPU, after.cpu), (MEMORY, after.memory)):
            now = requests_now.get(resource)
            if now is not None and _amount(resource, now) == value:
                continue
            text = _quantity(resource, value)
            requests[resource] = text
            limit = limits_now.get(resource)
            if limit is None:
                continue
            if (now is not None and limit.cmp(now) == 0) or Quantity.parse(text).cmp(limit) > 0:
                limits[resource] = text
        resources: dict[str, Any] = {"requests": requests}
        if limits:
            resources["limits"] = limits
        containers.append({"name": name, "resources": resources})
    return {"spec": {"containers": containers}}


def shrink_patch(pod: Obj, shrink: Shrink) -> dict[str, Any]:
    return resize_patch(pod, shrink.containers)


def growth_patch(pod: Obj, growth: Growth, vpa: Obj | None) -> dict[str, Any]:
    """A growth's patch; once complete, the remembered originals (or the VPA's requests and
    limits) are written exactly, so nothing is left of the shrink."""
    if growth.complete:
        if _allowed_by_vpa(vpa):
            assert vpa is not None
            exact: dict[str, dict[str, dict[str, Quantity]]] = {
                r.name: {"requests": dict(r.requests), "limits": dict(r.limits)}
                for r in pod_container_resources(pod, vpa)
            }
            if exact:
                return resize_patch(pod, growth.containers, exact=exact)
        original = remembered(pod)
        if original is not None:
            return resize_patch(pod, growth.containers, exact=original)
    return resize_patch(pod, growth.containers)
