"""The scheduling framework: typed views, statuses, extension points, and the runner.

Shaped after the Kubernetes scheduler framework, adapted to arrays:

* **Results are values.** Every extension point returns a :class:`Status` with a
  :class:`Code` (``SUCCESS``, ``UNSCHEDULABLE``, ``UNSCHEDULABLE_AND_UNRESOLVABLE``,
  ``ERROR``) and human-readable reasons; "unschedulable" (another node, or preemption, may
  help) is kept apart from "unresolvable" (no amount of preemption helps) and from errors.
* **One small interface per extension point** (:class:`PreFilterPlugin`,
  :class:`FilterPlugin`, :class:`ScorePlugin`, :class:`ReservePlugin`, :class:`BindPlugin`);
  a plugin implements the ones it needs and the :class:`Framework` finds them with
  ``isinstance``.
* **Filter and score are vector operations.** The node cache keeps every node's totals in
  numpy arrays, so a filter answers for *all* nodes at once (``filter_nodes`` → boolean mask)
  and a score plugin scores a whole sample (``score_nodes`` → float array). The per-node
  ``filter`` (returning a Status with structured reasons such as
  ``Insufficient memory: requested 2Gi, free 1Gi``) is the specification the vector form
  must agree with; it is used to explain failures and in tests.
* **Per-cycle state is computed once** (:class:`CycleState`) and shared by the plugins.

:class:`PodInfo` is the typed view of a pod that the scheduler computes with; the raw dict
stays available as ``PodInfo.obj`` (shared with the informer cache: never mutate it).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from inplace.api.annotations import IN_PLACE_ONLY, resize_policy
from inplace.api.quantity import QuantityError
from inplace.api.resources import (
    EPHEMERAL_STORAGE,
    GUARANTEED,
    container_requests,
    get_pod_qos,
    is_resize_infeasible,
    pod_requests,
    requests_milli_bytes,
    resize_accounting_requests,
)
from inplace.api.storage import claim_names
from inplace.api.timestamps import parse_rfc3339

if TYPE_CHECKING:
    from .cache import NodeCache

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "BindPlugin",
    "Code",
    "CycleState",
    "Diagnosis",
    "FilterPlugin",
    "Framework",
    "Mask",
    "PodInfo",
    "PreBindPlugin",
    "PreFilterPlugin",
    "RequestsMemo",
    "ReservePlugin",
    "ScorePlugin",
    "Status",
    "pod_info",
]

DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"

Mask = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]
Indices = npt.NDArray[np.intp]


class Code(enum.IntEnum):
    """Upstream's status codes (the subset a scheduler without volumes needs)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    SKIP = 4


@dataclass(frozen=True, slots=True)
class Status:
    """The result of one plugin at one extension point."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def success(cls) -> Status:
        return _SUCCESS

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, reasons, plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)

    @classmethod
    def error(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, reasons, plugin)

    @property
    def ok(self) -> bool:
        return self.code in (Code.SUCCESS, Code.SKIP)

    @property
    def is_unschedulable(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def message(self) -> str:
        return ", ".join(self.reasons)


_SUCCESS: Final = Status()


# -- the typed view of a pod -----------------------------------------------------------------


def _parse_time(text: Any) -> float:
    if not isinstance(text, str) or not text:
        return 0.0
    try:
        return parse_rfc3339(text).timestamp()
    except ValueError:
        return 0.0


def _committed_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """What the pod holds on its node now, ignoring a resize not yet approved: per container
    ``max(allocated, actual)`` (desired only where the agent reported neither)."""
    status = pod.get("status") or {}
    shadow = {
        **pod,
        "status": {
            **status,
            "conditions": [{"type": "PodResizePending", "reason": "Infeasible"}],
        },
    }
    return requests_milli_bytes(pod_requests(shadow, use_status=True))


def _has_status_resources(status: Mapping[str, Any]) -> bool:
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            if cs.get("allocatedResources") or (cs.get("resources") or {}).get("requests"):
                return True
    return False


def _target_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """The resize accounting charge with any ``Infeasible`` verdict ignored."""
    if not is_resize_infeasible(pod):
        return requests_milli_bytes(resize_accounting_requests(pod))
    status = pod.get("status") or {}
    conditions = [c for c in status.get("conditions") or () if c.get("type") != "PodResizePending"]
    shadow = {**pod, "status": {**status, "conditions": conditions}}
    return requests_milli_bytes(resize_accounting_requests(shadow))


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return dict(cond)
    return None


def _is_resizing(pod: Mapping[str, Any]) -> bool:
    """Desired differs from allocated for some container that has allocatedResources."""
    statuses = {
        cs.get("name"): cs
        for cs in (pod.get("status") or {}).get("containerStatuses") or ()
        if isinstance(cs, Mapping)
    }
    for container in (pod.get("spec") or {}).get("containers") or ():
        cs = statuses.get(container.get("name"))
        if cs is None:
            continue
        allocated = cs.get("allocatedResources")
        if not allocated:
            continue
        desired = requests_milli_bytes(container_requests(container))
        have = requests_milli_bytes(
            {k: v for k, v in _parse_list(allocated).items() if k in ("cpu", "memory")}
        )
        if desired != have:
            return True
    return False


def _parse_list(raw: Any) -> dict[str, Any]:
    from inplace.api.resources import parse_resource_list

    return parse_resource_list(raw)


@dataclass(frozen=True, slots=True, eq=False)
class PodInfo:
    """What the scheduler computes with, taken once from a pod dict (see :func:`pod_info`)."""

    key: str
    namespace: str
    name: str
    uid: str
    obj: Mapping[str, Any]
    priority: int = 0
    cpu: int = 0
    """Placement charge: millicores, ``max(desired unless Infeasible, allocated, actual)``."""
    memory: int = 0
    """Placement charge: bytes, as ``cpu``."""
    committed_cpu: int = 0
    """What the pod holds ignoring an unapproved resize (``max(allocated, actual)``)."""
    committed_memory: int = 0
    desired_cpu: int = 0
    """The pod's desired (spec) requests, whatever the status says."""
    desired_memory: int = 0
    target_cpu: int = 0
    """What the pod needs once its resize is applied: ``max(desired, allocated, actual)``
    per container even when the resize was marked Infeasible."""
    target_memory: int = 0
    ephemeral_storage: int = 0
    """Bytes of ephemeral storage requested (upstream's ``PodRequests``; never resized)."""
    node_name: str = ""
    nominated_node_name: str = ""
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    phase: str = "Pending"
    deleting: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_affinity: tuple[Mapping[str, Any], ...] | None = None
    tolerations: tuple[Mapping[str, Any], ...] = ()
    qos: str = "BestEffort"
    created: float = 0.0
    generation: int = 0
    resizing: bool = False
    """Desired differs from allocated (and the agent has reported allocatedResources)."""
    resize_approved_generation: int | None = None
    """``observedGeneration`` of a ``PodResizeScheduled=True`` condition, if any."""
    resize_infeasible: bool = False
    resize_policy: str = IN_PLACE_ONLY
    has_owner: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    claims: tuple[str, ...] = ()
    """The PersistentVolumeClaims the pod's volumes name (in its namespace)."""
    error: str = ""
    """Non-empty when the pod's resources could not be parsed (it is then unschedulable)."""

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def bound(self) -> bool:
        return bool(self.node_name)

    @property
    def guaranteed(self) -> bool:
        return self.qos == GUARANTEED

    @property
    def resize_pending(self) -> bool:
        """A resize the scheduler has not approved for the current generation."""
        return self.resizing and self.resize_approved_generation != self.generation

    @property
    def selector_signature(self) -> tuple[Any, ...]:
        """Hashable summary of what NodeAffinity looks at (for mask caching)."""
        return (tuple(sorted(self.node_selector.items())), _freeze(self.required_affinity))

    @property
    def toleration_signature(self) -> Any:
        return _freeze(self.tolerations)


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


RequestsMemo = dict[str, tuple[int, tuple[int, int, int]]]
"""uid → (generation, desired cpu, memory and ephemeral storage): a pod's spec resources
change only with its generation, so the scheduler parses them once per generation, not once
per watch event."""


def _desired(pod: Mapping[str, Any]) -> tuple[int, int, int]:
    """The spec's requests: ``(milli-CPU, memory bytes, ephemeral storage bytes)``."""
    requests = pod_requests(pod)
    cpu, memory = requests_milli_bytes(requests)
    storage = requests.get(EPHEMERAL_STORAGE)
    return cpu, memory, 0 if storage is None else storage.value()


def pod_info(pod: Mapping[str, Any], *, memo: RequestsMemo | None = None) -> PodInfo:
    """The :class:`PodInfo` of a pod dict. Unparseable resources give ``error``, not a raise."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    namespace = meta.get("namespace") or ""
    name = meta.get("name") or ""
    error = ""
    try:
        uid = meta.get("uid")
        generation = meta.get("generation")
        cached = memo.get(uid) if memo is not None and uid else None
        if cached is not None and cached[0] == generation:
            desired_cpu, desired_memory, storage = cached[1]
        else:
            desired_cpu, desired_memory, storage = _desired(pod)
            if memo is not None and uid and isinstance(generation, int):
                memo[uid] = (generation, (desired_cpu, desired_memory, storage))
        if _has_status_resources(status):
            cpu, memory = requests_milli_bytes(resize_accounting_requests(pod))
            resizing = _is_resizing(pod)
        else:  # fast path: nothing reported yet, the charge is the spec
            cpu, memory = desired_cpu, desired_memory
            resizing = False
        committed = _committed_requests(pod) if resizing else (cpu, memory)
        target = _target_requests(pod) if resizing else (cpu, memory)
    except (QuantityError, ValueError, TypeError, AttributeError) as exc:
        cpu = memory = desired_cpu = desired_memory = storage = 0
        committed = target = (0, 0)
        resizing = False
        error = f"invalid resources: {exc}"
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    required: tuple[Mapping[str, Any], ...] | None = None
    if isinstance(affinity, Mapping):
        required = tuple(affinity.get("nodeSelectorTerms") or ())
    scheduled = _condition(pod, "PodResizeScheduled")
    approved: int | None = None
    if scheduled is not None and scheduled.get("status") == "True":
        og = scheduled.get("observedGeneration")
        approved = int(og) if isinstance(og, int) else None
    annotations = meta.get("annotations") or {}
    try:
        qos = get_pod_qos(pod)
    except (QuantityError, ValueError):
        qos = "BestEffort"
    return PodInfo(
        key=f"{namespace}/{name}" if namespace else name,
        namespace=namespace,
        name=name,
        uid=meta.get("uid") or "",
        obj=pod,
        priority=int(spec.get("priority") or 0),
        cpu=cpu,
        memory=memory,
        committed_cpu=committed[0],
        committed_memory=committed[1],
        desired_cpu=desired_cpu,
        desired_memory=desired_memory,
        target_cpu=target[0],
        target_memory=target[1],
        ephemeral_storage=storage,
        node_name=spec.get("nodeName") or "",
        nominated_node_name=status.get("nominatedNodeName") or "",
        scheduler_name=spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
        phase=status.get("phase") or "Pending",
        deleting=bool(meta.get("deletionTimestamp")),
        labels=meta.get("labels") or {},
        node_selector=spec.get("nodeSelector") or {},
        required_affinity=required,
        tolerations=tuple(spec.get("tolerations") or ()),
        qos=qos,
        created=_parse_time(meta.get("creationTimestamp")),
        generation=int(meta.get("generation") or 0),
        resizing=resizing,
        resize_approved_generation=approved,
        resize_infeasible=is_resize_infeasible(pod),
        resize_policy=resize_policy(annotations),
        has_owner=bool(meta.get("ownerReferences")),
        preemption_policy=spec.get("preemptionPolicy") or "PreemptLowerPriority",
        claims=tuple(claim_names(pod)),
        error=error,
    )


# -- cycle state and plugin interfaces -------------------------------------------------------


class CycleState(dict[str, Any]):
    """Per-cycle scratch space shared by the plugins (computed once per pod attempt)."""


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    """``filter_nodes`` answers for every node slot (None: all pass); ``filter`` for one
    node, with reasons. ``resolvable`` says whether removing pods can cure a failure (only
    then is preemption worth trying on that node)."""

    name: str
    resolvable: bool

    def filter_nodes(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Mask | None: ...

    def filter(self, state: CycleState, pod: PodInfo, cache: NodeCache, node: int) -> Status: ...

    def explain(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Counter[str]:
        """Short reasons (``Insufficient cpu``) counted over failing ``nodes``."""
        ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str
    weight: int

    def score_nodes(
        self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
    ) -> Floats: ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None: ...


@runtime_checkable
class PreBindPlugin(Protocol):
    """Runs before binding, once a node is chosen (VolumeBinding annotates the claims)."""

    name: str

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    name: str

    async def bind(self, pod: PodInfo, node: str) -> Status: ...


def explain_per_node(
    plugin: FilterPlugin, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices
) -> Counter[str]:
    """Default ``explain``: the per-node filter's reasons, counted."""
    counts: Counter[str] = Counter()
    for i in nodes:
        status = plugin.filter(state, pod, cache, int(i))
        for reason in status.reasons:
            counts[reason] += 1
    return counts


@dataclass(slots=True)
class Diagnosis:
    """Why a pod fits nowhere: reason counts, and which nodes no preemption can help."""

    total_nodes: int
    counts: Counter[str] = field(default_factory=Counter)
    unresolvable: Mask | None = None
    """Nodes rejected by a filter that removing pods cannot cure."""
    pre_filter: Status | None = None

    def message(self) -> str:
        """Upstream's ``0/N nodes are available: 1 Insufficient cpu, 2 ....``"""
        if self.pre_filter is not None and not self.pre_filter.ok:
            return f"0/{self.total_nodes} nodes are available: {self.pre_filter.message()}."
        if self.total_nodes == 0:
            return "no nodes available to schedule pods"
        parts = sorted(f"{n} {reason}" for reason, n in self.counts.items())
        return f"0/{self.total_nodes} nodes are available: {', '.join(parts)}."


class Framework:
    """A profile: plugins in order for each extension point, and how to run them."""

    def __init__(self, plugins: Iterable[object], *, name: str = DEFAULT_SCHEDULER_NAME) -> None:
        self.profile_name = name
        plugin_list = list(plugins)
        self.pre_filters: list[PreFilterPlugin] = [
            p for p in plugin_list if isinstance(p, PreFilterPlugin)
        ]
        self.filters: list[FilterPlugin] = [p for p in plugin_list if isinstance(p, FilterPlugin)]
        self.scores: list[ScorePlugin] = [p for p in plugin_list if isinstance(p, ScorePlugin)]
        self.reserves: list[ReservePlugin] = [
            p for p in plugin_list if isinstance(p, ReservePlugin)
        ]
        self.pre_binds: list[PreBindPlugin] = [
            p for p in plugin_list if isinstance(p, PreBindPlugin)
        ]
        binders = [p for p in plugin_list if isinstance(p, BindPlugin)]
        self.binders: list[BindPlugin] = binders

    # -- filter ------------------------------------------------------------------------------

    def run_pre_filters(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Status:
        for plugin in self.pre_filters:
            status = plugin.pre_filter(state, pod, cache)
            if not status.ok:
                return Status(status.code, status.reasons, plugin.name)
        return Status.success()

    def feasible(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Mask:
        """Every filter over every node: one boolean per node slot."""
        mask = cache.valid.copy()
        for plugin in self.filters:
            m = plugin.filter_nodes(state, pod, cache)
            if m is not None:
                mask &= m
        return mask

    def diagnose(self, state: CycleState, pod: PodInfo, cache: NodeCache) -> Diagnosis:
        """Explain an empty :meth:`feasible`: each node is charged to the first filter that
        rejects it (as upstream, which stops at a node's first failing plugin)."""
        remaining = cache.valid.copy()
        diagnosis = Diagnosis(total_nodes=int(remaining.sum()))
        unresolvable = np.zeros_like(remaining)
        for plugin in self.filters:
            m = plugin.filter_nodes(state, pod, cache)
            if m is None:
                continue
            failing = remaining & ~m
            if failing.any():
                diagnosis.counts.update(plugin.explain(state, pod, cache, np.flatnonzero(failing)))
                if not plugin.resolvable:
                    unresolvable |= failing
            remaining &= m
        diagnosis.unresolvable = unresolvable
        return diagnosis

    def filter_one(self, state: CycleState, pod: PodInfo, cache: NodeCache, node: int) -> Status:
        """The per-node filters, in order, stopping at the first failure."""
        for plugin in self.filters:
            status = plugin.filter(state, pod, cache, node)
            if not status.ok:
                return Status(status.code, status.reasons, plugin.name)
        return Status.success()

    # -- score -------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, cache: NodeCache, nodes: Indices) -> Floats:
        total = np.zeros(len(nodes), dtype=np.float64)
        for plugin in self.scores:
            total += plugin.weight * plugin.score_nodes(state, pod, cache, nodes)
        return total

    # -- reserve -----------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        done: list[ReservePlugin] = []
        for plugin in self.reserves:
            status = plugin.reserve(state, pod, node)
            if not status.ok:
                for undo in reversed(done):
                    undo.unreserve(state, pod, node)
                return Status(status.code, status.reasons, plugin.name)
            done.append(plugin)
        return Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for plugin in reversed(self.reserves):
            plugin.unreserve(state, pod, node)

    # -- bind --------------------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Each PreBind plugin in order; an error reads as upstream's
        ``running PreBind plugin "NAME": <error>``."""
        for plugin in self.pre_binds:
            status = await plugin.pre_bind(state, pod, node)
            if status.code == Code.ERROR:
                reason = f'running PreBind plugin "{plugin.name}": {status.message()}'
                return Status(Code.ERROR, (reason,), plugin.name)
            if not status.ok:
                return Status(status.code, status.reasons, plugin.name)
        return Status.success()

    async def bind(self, pod: PodInfo, node: str) -> Status:
        for plugin in self.binders:
            status = await plugin.bind(pod, node)
            if status.code == Code.SKIP:
                continue
            return Status(status.code, status.reasons, plugin.name)
        return Status.error("no bind plugin bound the pod")


def sample_size(num_nodes: int, percentage: int = 0) -> int:
    """upstream ``numFeasibleNodesToFind``: how many feasible nodes to score.

    ``percentage`` 0 is adaptive: 50% minus 1% per 125 nodes, at least 5%; never fewer than
    100 nodes (or all of them, when there are fewer)."""
    min_nodes = 100
    if num_nodes < min_nodes or percentage >= 100:
        return num_nodes
    adaptive = percentage
    if adaptive <= 0:
        adaptive = max(50 - num_nodes // 125, 5)
    return max(num_nodes * adaptive // 100, min_nodes)
