"""A usage trace replayed against the real recommender and updater on simulated nodes.

``inplace replay`` runs this over a trace read by :mod:`.trace`. A workload whose pods never
overlap is treated as a Job, otherwise as a Deployment's ReplicaSet.

The simulated cluster is a few nodes with capacity, pods placed first-fit by their requests,
and per pod the requests it runs with. Every step of the trace, in this order:

1. pods that start are admitted at their VPA's current target (the admission step), or at
   their *hand-set* size — what a person writes in the workload's pod template: one size
   per container name, the peak of that container over every pod of the workload (all
   replicas, all runs, the whole trace); this is also the ``static-peak`` policy — and
   placed; pods that end are deleted;
2. each ``updater_interval`` the updater's :func:`~.updater.decide` runs for every VPA, with
   ``updateMode: InPlaceOrRecreate`` and ``minReplicas: 1``; a resize that fits its node is
   applied at once (a memory limit capped at the node's memory), one that fits the node
   only when emptier is ``Deferred`` (retried every step), one larger than the node is
   ``Infeasible``; an eviction recreates the pod at once through admission. A pod started
   this step gets this pass before its first sample is judged: live, the updater passes
   every 10 s, and one trace sample stands for a minute or five;
3. each container's usage is checked against its memory limit (its request, unless the
   updater gave it headroom, ``memory_limit_headroom``): above it is an OOM kill; and
   where a node's containers together use more memory than it has, the kernel kills
   those furthest above their requests until the rest fit (a *node-pressure* kill, counted
   with the OOM kills); either is recorded as an OOM; otherwise it is a usage sample;
4. each ``recommender_interval`` the recommender writes every VPA's recommendation, which
   the next step's updater pass acts on.

So the policies react once per trace step, and a rise between two samples is taken to
happen at once, before any reaction: the harshest reading of a trace (live, the updater
reacts every 10 s and a resize lands in 10-20 ms), so OOM kills counted here are an upper
bound for the live policy.

The result counts what an operator cares about: relative slack
``sum(requested - used) / sum(requested)`` over all samples (used capped at the request),
CPU demand above the request, OOM kills (and how many of them node pressure made), resizes,
evictions, and requested resource-hours.
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from inplace.api.quantity import Quantity
from inplace.api.timestamps import parse_rfc3339, rfc3339
from inplace.api.vpa_policy import pod_container_resources

from .inputs import memory_at_event
from .recommender import ContainerKey, Recommender, VpaKey
from .settings import RecommenderSettings, UpdaterSettings, variant
from .trace import Row, Trace, workload_of
from .updater import Action, UpdaterMemory, decide

__all__ = [
    "EPOCH",
    "POLICIES",
    "Policy",
    "PolicyResult",
    "Simulation",
    "default_nodes",
    "iter_results",
]

EPOCH: Final = parse_rfc3339("2026-01-05T00:00:00Z").timestamp()
"""Wall time of a trace's time 0 (a Monday at midnight UTC)."""
NAMESPACE: Final = "replay"
GIB: Final = 1024**3


# -- policies ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """What sizes the pods: nothing (their hand-set static peak) or a VPA with settings."""

    name: str
    recommender: RecommenderSettings | None = None
    updater: UpdaterSettings | None = None
    pause: bool = False
    """Pods opt into ``inplace.dev/oom-kill-disable``: memory past the limit pauses the
    container instead of killing it, and the pause is reported to the recommender as an
    OOM would be (the updater then resizes it, and it continues)."""

    @classmethod
    def of(cls, name: str) -> Policy:
        """``static-peak``, a variant's name, or a variant's name + ``+pause``."""
        if name == "static-peak":
            return cls(name)
        base, _, suffix = name.partition("+")
        if suffix not in ("", "pause"):
            raise KeyError(f"unknown policy {name!r}")
        recommender, updater = variant(base)
        return cls(name, recommender, updater, pause=suffix == "pause")


POLICIES: Final = ("static-peak", "upstream", "inplace", "inplace+pause")
"""The policies ``inplace replay`` compares by default."""


def _floats() -> array[float]:
    return array("d")


def _ints() -> array[int]:
    return array("q")


@dataclass
class PodSeries:
    """One container's usage and requests over time (for plots; compact arrays, since a
    week of a few hundred pods is a few hundred thousand samples)."""

    times: array[float] = field(default_factory=_floats)
    cpu_used: array[int] = field(default_factory=_ints)
    cpu_request: array[int] = field(default_factory=_ints)
    memory_used: array[int] = field(default_factory=_ints)
    memory_request: array[int] = field(default_factory=_ints)
    resizes: list[float] = field(default_factory=list)
    ooms: list[float] = field(default_factory=list)
    evictions: list[float] = field(default_factory=list)

    @property
    def memory_waste(self) -> int:
        """Byte-samples requested and not used (the pod's share of the slack)."""
        return sum(
            max(r - u, 0) for r, u in zip(self.memory_request, self.memory_used, strict=True)
        )


@dataclass
class ClusterSeries:
    """The whole cluster's memory over time, one point per trace step (the summary plot)."""

    times: array[float] = field(default_factory=_floats)
    memory_requested: array[float] = field(default_factory=_floats)
    """Bytes requested by the running pods."""
    memory_used: array[float] = field(default_factory=_floats)
    """Bytes used by them, each capped at its limit (a killed container used its limit);
    above the requested line where bursts run on headroom."""
    ooms: list[float] = field(default_factory=list)
    pauses: list[float] = field(default_factory=list)


@dataclass
class PolicyResult:
    policy: str
    cpu_requested: float = 0.0
    """Core-seconds requested over all samples."""
    cpu_used: float = 0.0
    """Core-seconds used, each sample capped at its request."""
    cpu_demand_above_request: float = 0.0
    """Core-seconds used beyond the request (served only when the node has spare CPU)."""
    cpu_demand: float = 0.0
    memory_requested: float = 0.0
    """Byte-seconds requested."""
    memory_used: float = 0.0
    ooms: int = 0
    """OOM kills (a container restarted), node-pressure kills included."""
    node_pressure_kills: int = 0
    """Of ``ooms``: containers below their limit killed because their node ran out."""
    pauses: int = 0
    """Samples at which a container was paused at its memory limit (``+pause`` policies):
    each lasts until the resize lands (at most one trace step here)."""
    resizes: int = 0
    evictions: int = 0
    deferred: int = 0
    infeasible: int = 0
    unplaced_samples: int = 0
    """Samples of pods that found no node with room (not counted above)."""
    series: dict[tuple[str, str], PodSeries] = field(default_factory=dict)
    cluster: ClusterSeries = field(default_factory=ClusterSeries)
    memory_saved: float | None = None
    """Set by :func:`iter_results`: the share of memory-hours saved against the
    ``static-peak`` policy's (None when that was not replayed)."""

    @property
    def cpu_slack(self) -> float:
        return _ratio(self.cpu_requested - self.cpu_used, self.cpu_requested)

    @property
    def memory_slack(self) -> float:
        return _ratio(self.memory_requested - self.memory_used, self.memory_requested)

    @property
    def cpu_shortfall(self) -> float:
        return _ratio(self.cpu_demand_above_request, self.cpu_demand)

    @property
    def cpu_core_hours(self) -> float:
        return self.cpu_requested / 3600.0

    @property
    def memory_gib_hours(self) -> float:
        return self.memory_requested / 3600.0 / GIB


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


# -- the simulated cluster -------------------------------------------------------------------


@dataclass
class Node:
    name: str
    cpu_milli: int
    memory: int
    used_cpu: int = 0
    used_memory: int = 0

    def free(self) -> tuple[int, int]:
        return self.cpu_milli - self.used_cpu, self.memory - self.used_memory


@dataclass
class SimPod:
    name: str
    uid: str
    workload: str
    started: float
    node: Node | None
    requests: dict[str, tuple[int, int]]
    """Container → (CPU millicores, memory bytes) it runs with."""
    limits: dict[str, int] = field(default_factory=dict)
    """Container → memory limit, where it is above the request (else it equals it)."""
    desired: dict[str, tuple[int, int]] | None = None
    """A resize asked for and not yet applied."""
    desired_limits: dict[str, int] = field(default_factory=dict)
    resize_reason: str = ""
    last_oom: dict[str, float] = field(default_factory=dict)

    def limit(self, container: str) -> int:
        request = self.requests[container][1]
        return max(self.limits.get(container, request), request)

    def total(self, which: dict[str, tuple[int, int]] | None = None) -> tuple[int, int]:
        sizes = (which or self.requests).values()
        return sum(c for c, _ in sizes), sum(m for _, m in sizes)


class Simulation:
    """One policy over one trace."""

    def __init__(
        self,
        trace: Trace,
        policy: Policy,
        *,
        nodes: int,
        node_cpu_milli: int,
        node_memory: int,
        keep_series: bool = False,
    ) -> None:
        self.trace = trace
        self.policy = policy
        self.nodes = [Node(f"sim-{i + 1}", node_cpu_milli, node_memory) for i in range(nodes)]
        self.keep_series = keep_series
        self.result = PolicyResult(policy.name)
        self.now = EPOCH
        self.pods: dict[str, SimPod] = {}
        self.vpas: dict[str, dict[str, Any]] = {}
        self.recommender: Recommender | None = None
        self.memory = UpdaterMemory()
        if policy.recommender is not None:
            self.recommender = Recommender(policy.recommender, clock=_SimClock(self))
        self._jobs = _job_workloads(trace)
        self._uids = 0

    def run(self, progress: Callable[[int], None] | None = None) -> PolicyResult:
        """Replay every step; ``progress`` is called with the number of steps done."""
        rec_interval = (
            self.policy.recommender.recommender_interval if self.policy.recommender else 0
        )
        upd_interval = self.policy.updater.updater_interval if self.policy.updater else 0
        last_rec = last_upd = -math.inf
        step = self.trace.step
        for index, (offset, rows) in enumerate(self.trace.steps):
            self.now = EPOCH + offset
            self._lifecycle(offset)
            self._retry_deferred()
            if self.policy.updater is not None and self.now - last_upd >= upd_interval:
                last_upd = self.now
                self._update()
            self._observe(rows, step)
            if self.recommender is not None and self.now - last_rec >= rec_interval:
                last_rec = self.now
                self._recommend()
            if progress is not None:
                progress(index + 1)
        return self.result

    # -- pods ---------------------------------------------------------------------------------

    def _lifecycle(self, offset: float) -> None:
        for name in [n for n, p in self.pods.items() if self.trace.last_seen[n] < offset]:
            self._delete(self.pods.pop(name))
        for name in self.trace.pods():
            if self.trace.first_seen[name] <= offset <= self.trace.last_seen[name]:
                if name not in self.pods:
                    self._create(name)
                elif self.pods[name].node is None:
                    self._place(self.pods[name])

    def _hand_set(self, pod: str) -> dict[str, tuple[int, int]]:
        workload = workload_of(pod)
        return {c: self.trace.template_peaks[(workload, c)] for c in self.trace.containers[pod]}

    def _admit(self, pod: str, workload: str) -> dict[str, tuple[int, int]]:
        """Upstream's admission step: the VPA's target for each container, else hand-set."""
        sizes = self._hand_set(pod)
        vpa = self.vpas.get(workload)
        if vpa is None or not vpa["status"].get("recommendation"):
            return sizes
        spec = {"spec": {"containers": [_container_json(c, s) for c, s in sizes.items()]}}
        for res in pod_container_resources(spec, vpa):
            cpu, memory = sizes[res.name]
            if "cpu" in res.requests:
                cpu = res.requests["cpu"].milli_value()
            if "memory" in res.requests:
                memory = res.requests["memory"].value()
            sizes[res.name] = (cpu, memory)
        return sizes

    def _create(self, name: str) -> None:
        workload = workload_of(name)
        if self.recommender is not None and workload not in self.vpas:
            self.vpas[workload] = _vpa_object(
                workload, "Job" if workload in self._jobs else "Deployment"
            )
        self._uids += 1
        pod = SimPod(
            name, f"uid-{self._uids}", workload, self.now, None, self._admit(name, workload)
        )
        self.pods[name] = pod
        self._place(pod)

    def _place(self, pod: SimPod) -> None:
        cpu, memory = pod.total()
        for node in self.nodes:
            free_cpu, free_memory = node.free()
            if cpu <= free_cpu and memory <= free_memory:
                node.used_cpu += cpu
                node.used_memory += memory
                pod.node = node
                pod.started = self.now
                return

    def _delete(self, pod: SimPod) -> None:
        if pod.node is not None:
            cpu, memory = pod.total()
            pod.node.used_cpu -= cpu
            pod.node.used_memory -= memory
            pod.node = None
        if self.recommender is not None:
            self.recommender.forget_pod(pod.uid)
        self.memory.forget(f"{NAMESPACE}/{pod.name}", pod.uid)

    # -- usage --------------------------------------------------------------------------------

    def _observe(self, rows: Iterable[Row], step: float) -> None:
        result = self.result
        requested = used = 0.0
        at = self.now - EPOCH
        placed = []
        for row in rows:
            pod = self.pods.get(row.pod)
            if pod is None or pod.node is None:
                result.unplaced_samples += 1
            else:
                placed.append((row, pod))
        squeezed = self._node_pressure(placed)
        result.node_pressure_kills += len(squeezed)
        for row, pod in placed:
            cpu_request, memory_request = pod.requests[row.container]
            limit = pod.limit(row.container)
            squeezed_here = (row.pod, row.container) in squeezed
            oom = row.memory > limit or squeezed_here
            # The pause is the memory cgroup's; a node out of memory kills all the same.
            paused = oom and self.policy.pause and not squeezed_here
            used_memory = min(row.memory, memory_request)
            if oom:
                if paused:
                    result.pauses += 1
                    result.cluster.pauses.append(at)
                else:
                    result.ooms += 1
                    result.cluster.ooms.append(at)
                used_memory = memory_request  # killed, or paused: it used at least that
            requested += memory_request
            used += min(row.memory, limit)
            cpu_used = min(row.cpu_milli, cpu_request)
            result.cpu_requested += cpu_request / 1000.0 * step
            result.cpu_used += cpu_used / 1000.0 * step
            result.cpu_demand += row.cpu_milli / 1000.0 * step
            result.cpu_demand_above_request += max(row.cpu_milli - cpu_request, 0) / 1000.0 * step
            result.memory_requested += memory_request * step
            result.memory_used += used_memory * step
            if self.keep_series:
                series = result.series.setdefault((row.pod, row.container), PodSeries())
                series.times.append(at)
                series.cpu_used.append(row.cpu_milli)
                series.cpu_request.append(cpu_request)
                series.memory_used.append(row.memory)
                series.memory_request.append(memory_request)
                if oom:
                    series.ooms.append(at)
            if self.recommender is None:
                continue
            vpa_key: VpaKey = (NAMESPACE, pod.workload)
            key = ContainerKey(pod.uid, row.container)
            if oom:
                used_at = memory_at_event(memory_request, limit, kill=not paused)
                self.recommender.record_oom(vpa_key, key, self.now, used_at)
                pod.last_oom[row.container] = self.now
                # The kill restarts the container; CPU was still used this step.
                self.recommender.add_sample(
                    vpa_key,
                    key,
                    self.now,
                    cpu_millicores=row.cpu_milli,
                    memory_bytes=None,
                    cpu_request_millicores=cpu_request,
                )
            else:
                self.recommender.add_sample(
                    vpa_key,
                    key,
                    self.now,
                    cpu_millicores=row.cpu_milli,
                    memory_bytes=row.memory,
                    cpu_request_millicores=cpu_request,
                    memory_limit_bytes=limit,
                )
        result.cluster.times.append(at)
        result.cluster.memory_requested.append(requested)
        result.cluster.memory_used.append(used)

    def _node_pressure(self, placed: list[tuple[Row, SimPod]]) -> set[tuple[str, str]]:
        """Containers the kernel kills because their node ran out of memory: those furthest
        above their requests first (what upstream's ``oom_score_adj`` for Burstable pods
        makes it choose), until the rest fit. Only limits above requests let a node's
        usage pass its memory: requests never add up past it."""
        usage: dict[str, int] = {}
        candidates: dict[str, list[tuple[int, int, tuple[str, str]]]] = {}
        for row, pod in placed:
            assert pod.node is not None
            used = min(row.memory, pod.limit(row.container))
            usage[pod.node.name] = usage.get(pod.node.name, 0) + used
            above = used - pod.requests[row.container][1]
            if above > 0:
                candidates.setdefault(pod.node.name, []).append(
                    (above, used, (row.pod, row.container))
                )
        killed: set[tuple[str, str]] = set()
        for node in self.nodes:
            total = usage.get(node.name, 0)
            for _, used, key in sorted(candidates.get(node.name, ()), reverse=True):
                if total <= node.memory:
                    break
                killed.add(key)
                total -= used
        return killed

    # -- the VPA loops -----------------------------------------------------------------------

    def _recommend(self) -> None:
        assert self.recommender is not None
        for workload, vpa in self.vpas.items():
            recommendation = self.recommender.recommendation((NAMESPACE, workload), vpa)
            if recommendation is None:
                vpa["status"].pop("recommendation", None)
            else:
                vpa["status"]["recommendation"] = recommendation

    def _update(self) -> None:
        assert self.policy.updater is not None
        by_workload: dict[str, list[SimPod]] = {}
        for pod in self.pods.values():
            if pod.node is not None:
                by_workload.setdefault(pod.workload, []).append(pod)
        for workload, pods in by_workload.items():
            vpa = self.vpas.get(workload)
            if vpa is None:
                continue
            kind = "Job" if workload in self._jobs else "ReplicaSet"
            objects = {p.name: self._pod_object(p) for p in pods}
            decisions = decide(
                vpa,
                objects.values(),
                replicas={(kind, workload): len(pods)},
                now=self.now,
                settings=self.policy.updater,
                memory=self.memory,
            )
            for decision in decisions:
                pod = self.pods[decision.pod.split("/", 1)[1]]
                if decision.action is Action.RESIZE:
                    desired = dict(pod.requests)
                    limits = dict(pod.limits)
                    for res in decision.resources:
                        cpu, memory = desired[res.name]
                        if "cpu" in res.requests:
                            cpu = res.requests["cpu"].milli_value()
                        if "memory" in res.requests:
                            memory = res.requests["memory"].value()
                        desired[res.name] = (cpu, memory)
                        limits.pop(res.name, None)
                        if "memory" in res.limits and pod.node is not None:  # node's ceiling
                            limit = min(res.limits["memory"].value(), pod.node.memory)
                            if limit > memory:
                                limits[res.name] = limit
                    if desired != pod.requests or limits != pod.limits:
                        pod.desired = desired
                        pod.desired_limits = limits
                        self._try_resize(pod)
                elif decision.action is Action.EVICT:
                    self._evict(pod)

    def _try_resize(self, pod: SimPod) -> None:
        """Apply a resize that fits the node now; otherwise mark it Deferred or Infeasible."""
        assert pod.desired is not None and pod.node is not None
        node = pod.node
        old_cpu, old_memory = pod.total()
        new_cpu, new_memory = pod.total(pod.desired)
        if new_cpu > node.cpu_milli or new_memory > node.memory:
            if pod.resize_reason != "Infeasible":
                self.result.infeasible += 1
            pod.resize_reason = "Infeasible"
            return
        free_cpu, free_memory = node.free()
        if new_cpu - old_cpu > free_cpu or new_memory - old_memory > free_memory:
            if pod.resize_reason != "Deferred":
                self.result.deferred += 1
            pod.resize_reason = "Deferred"
            return
        node.used_cpu += new_cpu - old_cpu
        node.used_memory += new_memory - old_memory
        changed = [
            c
            for c, size in pod.desired.items()
            if pod.requests.get(c) != size or pod.limits.get(c) != pod.desired_limits.get(c)
        ]
        pod.requests = pod.desired
        pod.limits = pod.desired_limits
        pod.desired = None
        pod.desired_limits = {}
        pod.resize_reason = ""
        self.result.resizes += 1
        if self.keep_series:
            for container in changed:  # marked where the size changed
                series = self.result.series.setdefault((pod.name, container), PodSeries())
                series.resizes.append(self.now - EPOCH)

    def _retry_deferred(self) -> None:
        for pod in self.pods.values():
            if pod.desired is not None and pod.node is not None and pod.resize_reason == "Deferred":
                self._try_resize(pod)

    def _evict(self, pod: SimPod) -> None:
        self.result.evictions += 1
        if self.keep_series:
            for container in pod.requests:
                series = self.result.series.setdefault((pod.name, container), PodSeries())
                series.evictions.append(self.now - EPOCH)
        self._delete(pod)
        del self.pods[pod.name]
        self._create(pod.name)

    def _pod_object(self, pod: SimPod) -> dict[str, Any]:
        """The pod as the API would show it (what the updater reads)."""
        desired = pod.desired or pod.requests
        limits = pod.desired_limits if pod.desired is not None else pod.limits
        conditions = []
        if pod.desired is not None and pod.resize_reason:
            conditions.append(
                {"type": "PodResizePending", "status": "True", "reason": pod.resize_reason}
            )
        statuses = []
        for name, size in pod.requests.items():
            resources = _resources_json(size, pod.limits.get(name))
            status: dict[str, Any] = {"name": name, "resources": resources}
            oom_at = pod.last_oom.get(name)
            if oom_at is not None:
                status["lastState"] = {
                    "terminated": {
                        "reason": "OOMKilled",
                        "startedAt": rfc3339(pod.started),
                        "finishedAt": rfc3339(oom_at),
                    }
                }
            statuses.append(status)
        kind = "Job" if pod.workload in self._jobs else "ReplicaSet"
        return {
            "metadata": {
                "name": pod.name,
                "namespace": NAMESPACE,
                "uid": pod.uid,
                "ownerReferences": [{"kind": kind, "name": pod.workload, "controller": True}],
            },
            "spec": {
                "nodeName": pod.node.name if pod.node else "",
                "containers": [_container_json(c, s, limits.get(c)) for c, s in desired.items()],
            },
            "status": {
                "phase": "Running",
                "startTime": rfc3339(pod.started),
                "conditions": conditions,
                "containerStatuses": statuses,
            },
        }


class _SimClock:
    """The simulated clock the recommender reads."""

    def __init__(self, sim: Simulation) -> None:
        self._sim = sim

    def now(self) -> float:
        return self._sim.now


def _resources_json(size: tuple[int, int], memory_limit: int | None = None) -> dict[str, Any]:
    """A container's resources; the memory limit is the request unless one is given."""
    cpu, memory = size
    memory_q = str(Quantity.from_int(memory))
    limit_q = memory_q if memory_limit is None else str(Quantity.from_int(memory_limit))
    return {
        "requests": {"cpu": str(Quantity.from_milli(cpu)), "memory": memory_q},
        "limits": {"memory": limit_q},
    }


def _container_json(
    name: str, size: tuple[int, int], memory_limit: int | None = None
) -> dict[str, Any]:
    return {"name": name, "resources": _resources_json(size, memory_limit)}


def _vpa_object(workload: str, kind: str) -> dict[str, Any]:
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": workload, "namespace": NAMESPACE},
        "spec": {
            "targetRef": {"apiVersion": api_version, "kind": kind, "name": workload},
            "updatePolicy": {"updateMode": "InPlaceOrRecreate", "minReplicas": 1},
        },
        "status": {},
    }


def _job_workloads(trace: Trace) -> set[str]:
    """Workloads whose pods never run at the same time (sequential runs: Jobs)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for pod in trace.pods():
        spans.setdefault(workload_of(pod), []).append((trace.first_seen[pod], trace.last_seen[pod]))
    jobs = set()
    for workload, items in spans.items():
        items.sort()
        if len(items) > 1 and all(a[1] < b[0] for a, b in itertools.pairwise(items)):
            jobs.add(workload)
    return jobs


def default_nodes(trace: Trace, nodes: int) -> tuple[int, int]:
    """Node size (CPU millicores, memory bytes) so that the pods' hand-set sizes, at their
    busiest moment, fill the nodes to two thirds, and the largest pod fits twice."""

    def hand_set(pod: str) -> tuple[int, int]:
        sizes = [trace.template_peaks[(workload_of(pod), c)] for c in trace.containers[pod]]
        return sum(c for c, _ in sizes), sum(m for _, m in sizes)

    sizes = {pod: hand_set(pod) for pod in trace.pods()}
    busiest_cpu = busiest_memory = 0
    for at, _ in trace.steps:
        running = [p for p in sizes if trace.first_seen[p] <= at <= trace.last_seen[p]]
        busiest_cpu = max(busiest_cpu, sum(sizes[p][0] for p in running))
        busiest_memory = max(busiest_memory, sum(sizes[p][1] for p in running))
    largest_cpu = max(cpu for cpu, _ in sizes.values())
    largest_memory = max(memory for _, memory in sizes.values())
    per_cpu = math.ceil(max(busiest_cpu * 1.5 / nodes, 2 * largest_cpu) / 1000) * 1000
    per_memory = math.ceil(max(busiest_memory * 1.5 / nodes, 2 * largest_memory) / GIB) * GIB
    return max(per_cpu, 1000), max(per_memory, GIB)


def iter_results(
    trace: Trace,
    policies: Iterable[str],
    *,
    nodes: int,
    node_cpu_milli: int,
    node_memory: int,
    keep_series: bool,
    progress: Callable[[str, int], None] | None = None,
) -> Iterator[PolicyResult]:
    """Run each named policy over the trace in turn (``static-peak`` first when it is
    asked for, so the others' savings against it are known)."""
    names = list(policies)
    if "static-peak" in names:
        names.remove("static-peak")
        names.insert(0, "static-peak")
    baseline: PolicyResult | None = None
    for name in names:
        sim = Simulation(
            trace,
            Policy.of(name),
            nodes=nodes,
            node_cpu_milli=node_cpu_milli,
            node_memory=node_memory,
            keep_series=keep_series,
        )
        result = sim.run(None if progress is None else _bind(progress, name))
        if name == "static-peak":
            baseline = result
        if baseline is not None and baseline.memory_requested:
            result.memory_saved = 1.0 - result.memory_requested / baseline.memory_requested
        yield result


def _bind(progress: Callable[[str, int], None], name: str) -> Callable[[int], None]:
    def report(done: int) -> None:
        progress(name, done)

    return report
