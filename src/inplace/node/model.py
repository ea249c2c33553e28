"""The node agent's pure decisions: sizes, admission fit, resize planning, back-off, status.

Nothing here performs I/O or reads a clock; every function takes the time it needs. The agent
(:mod:`inplace.node.agent`) feeds them the pod dicts it got from its informer and the state it
keeps in memory, and acts on what they return. That keeps the rules upstream's kubelet follows
(admission messages, CrashLoopBackOff timing, condition shapes, the order of cgroup writes)
testable with tables.

Vocabulary:

* *desired* — a container's ``spec.resources`` (what the user asked for, possibly resized);
* *allocated* — what the agent admitted for it (checkpointed; reported as
  ``status.containerStatuses[].allocatedResources``);
* *actual* — what the cgroups hold (reported as ``status.containerStatuses[].resources``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from inplace.api.backoff import Backoff
from inplace.api.quantity import Quantity, QuantityError, read_quantity
from inplace.api.resources import container_limits, container_requests, pod_requests
from inplace.api.timestamps import rfc3339

from .cgroups.base import CgroupResources
from .cgroups.mapping import (
    ContainerSizing,
    container_resources,
    pod_resources,
)

__all__ = [
    "APPROVAL_HOLD",
    "BACKOFF_INITIAL",
    "BACKOFF_MAX",
    "BACKOFF_RESET_AFTER",
    "NO_ALLOC",
    "Alloc",
    "CgroupWrite",
    "FitResult",
    "PendingResize",
    "admission_check",
    "allocs_from_json",
    "allocs_to_json",
    "approval_hold",
    "arbiter_decided",
    "canonical_quantity",
    "crash_backoff",
    "desired_allocs",
    "fits_allocatable",
    "memory_decrease_error",
    "plan_resize",
    "pod_allocated_requests",
    "requirements_json",
    "resize_message",
    "restart_needed",
    "retry_order",
    "rfc3339",
]

BACKOFF_INITIAL: Final = 10.0
"""Upstream's first CrashLoopBackOff delay (seconds)."""
BACKOFF_MAX: Final = 300.0
"""Upstream's ceiling on the CrashLoopBackOff delay (5 minutes)."""
CRASH_LOOP: Final = Backoff(BACKOFF_INITIAL, BACKOFF_MAX)
BACKOFF_RESET_AFTER: Final = 600.0
"""A container that ran this long (10 minutes) starts over at :data:`BACKOFF_INITIAL`."""

RESOURCE_NAMES: Final = ("cpu", "memory")


@dataclass(frozen=True)
class Alloc:
    """One container's cpu and memory, parsed once where it enters the agent (the pod's
    spec, a checkpoint): the quantities as the API wrote them (``requests`` and ``limits``,
    what the status and checkpoints carry, byte for byte) and the same as numbers
    (``sizing``: milli-CPU, bytes), which every comparison, fit and cgroup value reads."""

    requests: Mapping[str, str] = field(default_factory=dict)
    limits: Mapping[str, str] = field(default_factory=dict)
    sizing: ContainerSizing = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sizing = ContainerSizing(
            requests_cpu_milli=read_quantity(self.requests.get("cpu"), milli=True),
            limits_cpu_milli=read_quantity(self.limits.get("cpu"), milli=True),
            requests_memory=read_quantity(self.requests.get("memory")),
            limits_memory=read_quantity(self.limits.get("memory")),
        )
        object.__setattr__(self, "sizing", sizing)

    def __bool__(self) -> bool:
        return bool(self.requests or self.limits)

    @classmethod
    def of(cls, container: Mapping[str, Any]) -> Alloc:
        """A container's cpu/memory requests (defaulted to limits, as API defaulting does)
        and limits."""
        requests = container_requests(container)
        limits = container_limits(container)
        return cls(
            {k: str(v) for k, v in requests.items() if k in RESOURCE_NAMES},
            {k: str(v) for k, v in limits.items() if k in RESOURCE_NAMES},
        )

    @classmethod
    def from_json(cls, raw: Mapping[str, Any] | None) -> Alloc:
        """From the API's shape (``{"requests": {"cpu": "250m"}, "limits": {...}}``)."""
        raw = raw or {}
        return cls(dict(raw.get("requests") or {}), dict(raw.get("limits") or {}))

    def to_json(self) -> dict[str, dict[str, str]]:
        """The API's shape, empty parts left out."""
        out: dict[str, dict[str, str]] = {}
        if self.requests:
            out["requests"] = dict(self.requests)
        if self.limits:
            out["limits"] = dict(self.limits)
        return out


NO_ALLOC: Final = Alloc()
"""A container with no cpu or memory set."""


def allocs_from_json(raw: Mapping[str, Any] | None) -> dict[str, Alloc]:
    """Container name → :class:`Alloc`, from a checkpoint's JSON."""
    return {name: Alloc.from_json(value) for name, value in (raw or {}).items()}


def allocs_to_json(allocs: Mapping[str, Alloc]) -> dict[str, dict[str, dict[str, str]]]:
    return {name: alloc.to_json() for name, alloc in allocs.items()}


# -- sizes -----------------------------------------------------------------------------------


def requests_grow(allocated: Mapping[str, Alloc], desired: Mapping[str, Alloc]) -> bool:
    """Whether any container's effective CPU or memory request would increase."""
    for name, want in desired.items():
        have = allocated.get(name, NO_ALLOC).sizing
        new = want.sizing
        if (
            new.effective_requests_cpu > have.effective_requests_cpu
            or new.effective_requests_memory > have.effective_requests_memory
        ):
            return True
    return False


def desired_allocs(pod: Mapping[str, Any]) -> dict[str, Alloc]:
    """Per container name (app and init containers), the resources the spec asks for."""
    spec = pod.get("spec") or {}
    out: dict[str, Alloc] = {}
    for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        out[c["name"]] = Alloc.of(c)
    return out


def _with_allocs(pod: Mapping[str, Any], allocs: Mapping[str, Alloc]) -> dict[str, Any]:
    """A shallow pod copy whose containers carry ``allocs`` as their resources."""
    spec = dict(pod.get("spec") or {})
    for key in ("containers", "initContainers"):
        items = []
        for c in spec.get(key) or ():
            c2 = dict(c)
            if c["name"] in allocs:
                c2["resources"] = allocs[c["name"]].to_json()
            items.append(c2)
        spec[key] = items
    return {"metadata": pod.get("metadata") or {}, "spec": spec}


def pod_allocated_requests(pod: Mapping[str, Any], allocs: Mapping[str, Alloc]) -> tuple[int, int]:
    """What the pod holds on the node's ledger: upstream's pod requests (sidecars and init
    containers aggregated, overhead added) computed over the allocated resources, as
    ``(milli-CPU, bytes)``."""
    reqs = pod_requests(_with_allocs(pod, allocs))
    cpu, mem = reqs.get("cpu"), reqs.get("memory")
    return (cpu.milli_value() if cpu else 0, mem.value() if mem else 0)


@dataclass(frozen=True)
class FitResult:
    """Outcome of an admission or resize check; ``reason`` is upstream's (``OutOfcpu``)."""

    fits: bool
    reason: str = ""
    message: str = ""
    never_fits: bool = False
    """True when the request exceeds the node's allocatable on its own (``Infeasible``)."""


def fits_allocatable(
    request: tuple[int, int], used: tuple[int, int], allocatable: tuple[int, int]
) -> FitResult:
    """Kubelet's resource fit (``pkg/kubelet/lifecycle/predicate.go``): each resource's request
    plus what admitted pods use must not exceed allocatable. Messages are upstream's, with
    milli-CPU and bytes."""
    names = ("cpu", "memory")
    for name, req, use, cap in zip(names, request, used, allocatable, strict=True):
        if req and req + use > cap:
            return FitResult(
                False,
                reason=f"OutOf{name}",
                message=(
                    f"Node didn't have enough resource: {name}, requested: {req}, "
                    f"used: {use}, capacity: {cap}"
                ),
                never_fits=req > cap,
            )
    return FitResult(True)


def admission_check(
    request: tuple[int, int],
    used: tuple[int, int],
    allocatable: tuple[int, int],
    *,
    pods_running: int,
    max_pods: int,
) -> FitResult:
    """Admission of a new pod: the pod count first (reason ``OutOfpods``), then resources."""
    if pods_running + 1 > max_pods:
        return FitResult(
            False,
            reason="OutOfpods",
            message=(
                f"Node didn't have enough resource: pods, requested: 1, used: {pods_running}, "
                f"capacity: {max_pods}"
            ),
        )
    return fits_allocatable(request, used, allocatable)


# -- resize ----------------------------------------------------------------------------------


def restart_needed(
    container: Mapping[str, Any], old: ContainerSizing, new: ContainerSizing, *, restart_all: bool
) -> bool:
    """Whether applying ``old → new`` restarts the container: its ``resizePolicy`` says
    ``RestartContainer`` for a resource that changes (or the pod annotation
    ``inplace.dev/resize-policy: Restart`` restarts every container that changes)."""
    changed = set()
    if (old.requests_cpu_milli, old.limits_cpu_milli) != (
        new.requests_cpu_milli,
        new.limits_cpu_milli,
    ):
        changed.add("cpu")
    if (old.requests_memory, old.limits_memory) != (new.requests_memory, new.limits_memory):
        changed.add("memory")
    if not changed:
        return False
    if restart_all:
        return True
    for rule in container.get("resizePolicy") or ():
        if rule.get("resourceName") in changed and rule.get("restartPolicy") == "RestartContainer":
            return True
    return False


@dataclass(frozen=True)
class CgroupWrite:
    """One step of a resize: make cgroup ``path`` hold ``resources``."""

    path: str
    resources: CgroupResources
    phase: Literal["grow-pod", "shrink-containers", "shrink-pod", "grow-containers"]


def _lim_max(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)


def _lim_min(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def bigger_of(a: CgroupResources, b: CgroupResources) -> CgroupResources:
    """Each limit the larger of the two (``b``'s period): the resize path's first step up,
    and what a pod cgroup needs before a container starts at an allocation the pod cgroup
    has not caught up with (v1's quota and memory limit are hierarchical: a child above its
    parent is ``EINVAL``)."""
    return CgroupResources(
        cpu_shares=max(a.cpu_shares or 0, b.cpu_shares or 0) or None,
        cpu_quota_us=_lim_max(
            None if a.cpu_quota_unlimited else a.cpu_quota_us,
            None if b.cpu_quota_unlimited else b.cpu_quota_us,
        ),
        cpu_period_us=b.cpu_period_us,
        memory_limit_bytes=_lim_max(a.memory_limit_bytes, b.memory_limit_bytes),
        pids_max=b.pids_max,
    )


def _smaller(a: CgroupResources, b: CgroupResources) -> CgroupResources:
    return CgroupResources(
        cpu_shares=min(a.cpu_shares or 1024, b.cpu_shares or 1024),
        cpu_quota_us=_lim_min(
            None if a.cpu_quota_unlimited else a.cpu_quota_us,
            None if b.cpu_quota_unlimited else b.cpu_quota_us,
        ),
        cpu_period_us=b.cpu_period_us,
        memory_limit_bytes=_lim_min(a.memory_limit_bytes, b.memory_limit_bytes),
        pids_max=b.pids_max,
    )


def plan_resize(
    pod_path: str,
    pod_old: CgroupResources,
    pod_new: CgroupResources,
    containers: Sequence[tuple[str, CgroupResources, CgroupResources]],
) -> list[CgroupWrite]:
    """The cgroup writes that take a pod from old to new sizes without ever letting a child
    exceed its parent or the node: grow the pod (to the larger of old and new per value),
    shrink the containers (to the smaller), shrink the pod (to new), grow the containers (to
    new). ``containers`` is ``(path, old, new)``. Writes that would change nothing are left
    out, so a pure cpu resize never touches memory files and vice versa."""
    writes: list[CgroupWrite] = []
    current: dict[str, CgroupResources] = {pod_path: pod_old}
    for path, old, _ in containers:
        current[path] = old

    def step(path: str, value: CgroupResources, phase: Any) -> None:
        if current[path] != value:
            writes.append(CgroupWrite(path, value, phase))
            current[path] = value

    step(pod_path, bigger_of(pod_old, pod_new), "grow-pod")
    for path, old, new in containers:
        step(path, _smaller(old, new), "shrink-containers")
    step(pod_path, pod_new, "shrink-pod")
    for path, _, new in containers:
        step(path, new, "grow-containers")
    return writes


def container_cgroup(alloc: Alloc) -> CgroupResources:
    """A container cgroup's values for an allocation (kubelet's mapping)."""
    s = alloc.sizing
    return container_resources(s.requests_cpu_milli, s.limits_cpu_milli, s.limits_memory)


def pod_cgroup(pod: Mapping[str, Any], allocs: Mapping[str, Alloc]) -> CgroupResources:
    """The pod cgroup's values for the allocations of its containers."""
    spec = pod.get("spec") or {}
    app = [allocs.get(c["name"], NO_ALLOC).sizing for c in spec.get("containers") or ()]
    init = [allocs.get(c["name"], NO_ALLOC).sizing for c in spec.get("initContainers") or ()]
    return pod_resources(app, init_containers=init)


def canonical_quantity(value: Any) -> Any:
    """A quantity as Go's ``resource.Quantity`` marshals it (canonical form)."""
    try:
        return str(Quantity.parse(value))
    except (QuantityError, TypeError, ValueError):
        return value


def _resource_list(values: Any) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        return {}
    return {name: canonical_quantity(values[name]) for name in sorted(values)}


def requirements_json(resources: Mapping[str, Any] | None, alloc: Alloc | None) -> dict[str, Any]:
    """A container's ``resources`` as Go marshals ``v1.ResourceRequirements`` (``limits``,
    ``requests``, ``claims``, empty ones left out); with ``alloc``, its cpu and memory are
    the allocated ones (upstream's allocated pod: the spec with the checkpointed resources)."""
    resources = resources or {}
    out: dict[str, Any] = {}
    for key in ("limits", "requests"):
        values = dict(resources.get(key) or {})
        if alloc is not None:
            for name in RESOURCE_NAMES:
                values.pop(name, None)
            values.update((alloc.requests if key == "requests" else alloc.limits).items())
        listed = _resource_list(values)
        if listed:
            out[key] = listed
    claims = resources.get("claims")
    if claims:
        out["claims"] = claims
    return out


def _go_json(value: Any) -> str:
    """``encoding/json.Marshal``'s text: compact, UTF-8, with ``<``, ``>``, ``&``, U+2028 and
    U+2029 escaped (Go escapes them for HTML by default)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def resize_message(
    prefix: str,
    pod: Mapping[str, Any],
    generation: int | None,
    *,
    allocated: Mapping[str, Alloc] | None = None,
    error: str = "",
) -> str:
    """The message of a resize event, as the kubelet writes it (``podResizeMessage`` in
    ``pkg/kubelet/events/resize.go``): ``PREFIX: {"initContainers":[…],"containers":[{"name":
    …,"resources":{…}}],"generation":G,"error":"…"}``, every container of the pod with its
    resources, as the spec asks (``allocated`` None: ``ResizeStarted``, ``ResizeDeferred``,
    ``ResizeInfeasible``) or as allocated (``ResizeCompleted``, ``ResizeError``)."""
    spec = pod.get("spec") or {}
    summary: dict[str, Any] = {}
    for key in ("initContainers", "containers"):
        items = []
        for c in spec.get(key) or ():
            alloc = None if allocated is None else allocated.get(c["name"])
            items.append(
                {"name": c["name"], "resources": requirements_json(c.get("resources"), alloc)}
            )
        if items:
            summary[key] = items
    summary["generation"] = generation or 0
    if error:
        summary["error"] = error
    return f"{prefix}: {_go_json(summary)}"


@dataclass(frozen=True)
class MemoryShrink:
    """One cgroup's memory limit in a resize and what it holds now (bytes, None unknown)."""

    name: str
    """The container's name, or ``""`` for the pod's cgroup."""
    desired: int | None
    """The limit the resize asks for, as asked (not page-rounded); None: no limit."""
    current: int | None
    """The limit the cgroup holds now; None: no limit."""
    usage: int | None
    """``memory.usage_in_bytes`` now."""

    @property
    def decreasing(self) -> bool:
        """A limit that is set and is lower than the current one, or is added."""
        if not self.desired:
            return False
        return not self.current or self.desired < self.current


def memory_decrease_error(pod: MemoryShrink, containers: Sequence[MemoryShrink]) -> str | None:
    """Why a resize must not lower a memory limit now, in the kubelet's words, or None.

    The kubelet's check before it writes any cgroup (``validateMemoryResizeAction`` in
    ``pkg/kubelet/kuberuntime/kuberuntime_manager.go``): the pod's cgroup and each container
    whose limit decreases (or is added) must use less than its new limit, else the resize is
    refused with ``cannot decrease memory limits: E`` (E one error, or ``[E1, E2]``, duplicates
    dropped, as ``utilerrors.NewAggregate`` prints them). The pod comes first, then the
    containers (``containers`` in the spec's order; the kubelet's is its stats'). A container's
    error names the *pod's* usage, as upstream's message does (it prints
    ``podUsageStats.Memory.UsageBytes``)."""
    decreasing = [c for c in containers if c.decreasing]
    if not pod.decreasing and not decreasing:
        return None
    errors: list[str] = []
    if pod.decreasing:
        if pod.usage is None:
            errors.append("missing pod memory usage")
        elif pod.usage >= (pod.desired or 0):
            errors.append(
                f"attempting to set pod memory limit ({pod.desired}) below current usage "
                f"({pod.usage})"
            )
    for c in decreasing:
        if c.usage is None:
            errors.append(f'missing container "{c.name}" memory usage')
        elif c.usage >= (c.desired or 0):
            shown = pod.usage if pod.usage is not None else c.usage
            errors.append(
                f'attempting to set container "{c.name}" memory limit ({c.desired}) below '
                f"current usage ({shown})"
            )
    if not errors:
        return None
    unique = list(dict.fromkeys(errors))
    text = unique[0] if len(unique) == 1 else f"[{', '.join(unique)}]"
    return f"cannot decrease memory limits: {text}"


@dataclass(frozen=True)
class PendingResize:
    """What orders deferred resizes when room appears on the node."""

    key: str
    increases: bool
    """Whether the resize raises the pod's CPU or memory request (upstream's
    ``isResizeIncreasingRequests``: the pod's requests, not each container's)."""
    priority: int
    guaranteed: bool
    pending_since: str
    """``lastTransitionTime`` of its ``PodResizePending`` condition (RFC 3339 sorts)."""


def retry_order(pending: Iterable[PendingResize]) -> list[str]:
    """DESIGN.md's order, which is the kubelet's (``sortPendingResizes`` in
    ``pkg/kubelet/allocation/allocation_manager.go``): resizes that do not increase requests
    first, then higher priority, then Guaranteed before Burstable, then the longest pending
    (one with no ``PodResizePending`` time last)."""
    ordered = sorted(
        pending,
        key=lambda p: (
            p.increases,
            -p.priority,
            not p.guaranteed,
            not p.pending_since,
            p.pending_since,
        ),
    )
    return [p.key for p in ordered]


APPROVAL_HOLD: Final = 5.0
"""Seconds the agent may hold back a status write that would only report a new generation
while that generation's growth waits for the scheduler's approval (see :func:`approval_hold`)."""


def approval_hold(
    *,
    awaiting_approval: bool,
    arbiter_decided: bool,
    only_generation: Callable[[], bool],
    waited: float,
    hold: float = APPROVAL_HOLD,
) -> float | None:
    """Seconds to hold the pod's status write back, or None to write it now.

    A resize that grows requests reaches the agent and the scheduler's arbiter by the same
    watch event. The agent's only news until the arbiter decides is the generation it saw
    (``status.observedGeneration`` and its conditions' stamps); the approval usually follows
    within a round trip, and then one write reports the generation, the allocation and the
    resources together instead of two writes (a 500-pod resize is 500 writes fewer through
    the one API server). It is held only while all of these hold: the growth of this
    generation waits for approval, the arbiter has not decided it (a ``PodResizeScheduled``
    or ``PodResizePending`` stamped with it: a deferral is reported at once), nothing else in
    the status changed, and for at most ``hold`` seconds since the agent saw the generation
    (upstream's kubelet also reports status asynchronously). ``only_generation`` computes the
    status twice, so it is asked last."""
    remaining = hold - waited
    if not awaiting_approval or arbiter_decided or remaining <= 0 or not only_generation():
        return None
    return remaining


def arbiter_decided(pod: Mapping[str, Any], generation: int | None) -> bool:
    """Whether the pod carries a resize decision (``PodResizeScheduled`` or
    ``PodResizePending``) stamped with ``generation``."""
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if (
            cond.get("type") in ("PodResizeScheduled", "PodResizePending")
            and cond.get("observedGeneration") == generation
        ):
            return True
    return False


# -- back-off --------------------------------------------------------------------------------


def crash_backoff(previous: float | None, ran_for: float) -> float:
    """The delay before the next restart, as kubelet's back-off behaves: the first restart is
    immediate (``previous`` None), then 10 s, doubling to 5 min; a container that ran for 10
    minutes or more starts over (immediate restart)."""
    if previous is None or ran_for >= BACKOFF_RESET_AFTER:
        return 0.0
    return CRASH_LOOP.next(previous)
