"""What a pod's status says, as the kubelet 1.36 writes it, from what the agent knows: each
container's state (:class:`ContainerState`), its ``volumeMounts``, the pod's phase
(upstream's ``getPhase``) and its pod-level ``allocatedResources`` and ``resources``
(``pkg/kubelet/kubelet_pods.go``). Pure: no I/O, no clock; :mod:`.status` writes it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from inplace.api.quantity import Format, Quantity, read_quantity
from inplace.api.resources import pod_limits, pod_requests

from .cgroups.base import DEFAULT_CPU_SHARES, CgroupResources
from .cgroups.mapping import (
    MIN_MILLI_CPU_LIMIT,
    MIN_SHARES,
    quota_to_milli_cpu,
    shares_to_milli_cpu,
)
from .model import NO_ALLOC, Alloc, canonical_quantity, requirements_json

__all__ = [
    "ContainerState",
    "pod_phase",
    "pod_status_allocated",
    "pod_status_resources",
    "volume_mount_statuses",
]


@dataclass
class ContainerState:
    """What the agent knows about one container, from which its status is built."""

    name: str
    image: str = ""
    init: bool = False
    sidecar: bool = False
    restart_count: int = 0
    state: Literal["waiting", "running", "terminated"] = "waiting"
    reason: str = "ContainerCreating"
    message: str = ""
    exit_code: int | None = None
    signal: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    pid: int | None = None
    last_state: dict[str, Any] = field(default_factory=dict)
    """``lastState`` as the API shows it (``{"terminated": {...}}``) or empty."""
    backoff: float | None = None
    """The current CrashLoopBackOff delay, None before the first restart."""
    user: dict[str, Any] | None = None
    """Who its process runs as, in the API's shape (``{"uid", "gid", "supplementalGroups"}``),
    from its last start; None before it started."""

    @property
    def known(self) -> bool:
        """Whether the container was ever created: what a kubelet finds in the runtime's pod
        status (a container waiting for its first start, say on its configuration, is not)."""
        return (
            self.pid is not None
            or self.state != "waiting"
            or self.restart_count > 0
            or bool(self.last_state)
        )

    def status(
        self,
        *,
        allocated: Alloc | None,
        actual: Alloc | None,
        volume_mounts: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """``containerStatuses[]`` entry, upstream's shape (``convertToAPIContainerStatuses``
        in ``pkg/kubelet/kubelet_pods.go``). What only a created container has (its
        ``resources``, ``allocatedResources`` and ``user``) is left out until it was created:
        ``resources`` are what runs for a running container and its allocation otherwise,
        ``allocatedResources`` the allocation's requests. ``volume_mounts``: the statuses of
        its mounts (:func:`volume_mount_statuses`), which every container reports."""
        state: dict[str, Any]
        if self.state == "running":
            state = {"running": {"startedAt": self.started_at}}
        elif self.state == "terminated":
            term: dict[str, Any] = {
                "exitCode": self.exit_code if self.exit_code is not None else 0,
                "reason": self.reason or ("Completed" if not self.exit_code else "Error"),
                "startedAt": self.started_at,
                "finishedAt": self.finished_at,
                "containerID": f"inplace://{self.pid}" if self.pid else None,
            }
            if self.signal:
                term["signal"] = self.signal
            if self.message:
                term["message"] = self.message
            state = {"terminated": {k: v for k, v in term.items() if v is not None}}
        else:
            waiting: dict[str, Any] = {"reason": self.reason or "ContainerCreating"}
            if self.message:
                waiting["message"] = self.message
            state = {"waiting": waiting}
        running = self.state == "running"
        out: dict[str, Any] = {
            "name": self.name,
            "state": state,
            "lastState": self.last_state,
            "ready": running,
            "restartCount": self.restart_count,
            "image": self.image,
            "imageID": f"inplace://{self.image}" if self.image else "",
            "started": running,
        }
        if self.pid:
            out["containerID"] = f"inplace://{self.pid}"
        if volume_mounts:
            out["volumeMounts"] = [dict(m) for m in volume_mounts]
        if not self.known:
            return out
        if allocated is not None and allocated.requests:
            out["allocatedResources"] = dict(allocated.requests)
        # A running container always reports its resources, if none ({}): upstream's API
        # server refuses to resize a pod whose running containers report none.
        out["resources"] = ((actual if running else allocated) or NO_ALLOC).to_json()
        if self.user is not None:
            out["user"] = {"linux": dict(self.user)}
        return out


def volume_mount_statuses(container: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A container's ``volumeMounts`` as its status reports them (``convertToAPIContainer
    Statuses`` in ``pkg/kubelet/kubelet_pods.go``): name, path, ``readOnly`` when set, and
    for a read-only mount whether it is recursively read-only (``resolveRecursiveReadOnly``).
    The agent's read-only mounts are not recursive, which the kubelet reports as ``Disabled``
    (``IfPossible`` on a runtime that cannot, too)."""
    out: list[dict[str, Any]] = []
    for mount in container.get("volumeMounts") or ():
        status: dict[str, Any] = {"name": mount.get("name"), "mountPath": mount.get("mountPath")}
        if mount.get("readOnly"):
            status["readOnly"] = True
            status["recursiveReadOnly"] = "Disabled"
        out.append(status)
    return out


def _allocated_pod(pod: Mapping[str, Any], allocs: Mapping[str, Alloc]) -> dict[str, Any]:
    """The pod as the kubelet's allocation manager hands it on (``UpdatePodFromAllocation``):
    its spec with each container's cpu and memory as allocated, its other resources kept."""
    spec = dict(pod.get("spec") or {})
    for key in ("containers", "initContainers"):
        spec[key] = [
            {**c, "resources": requirements_json(c.get("resources"), allocs.get(c["name"]))}
            for c in spec.get(key) or ()
        ]
    return {"metadata": pod.get("metadata") or {}, "spec": spec}


def _quantities(values: Mapping[str, Quantity]) -> dict[str, str]:
    return {name: str(values[name]) for name in sorted(values)}


def pod_status_allocated(pod: Mapping[str, Any], allocs: Mapping[str, Alloc]) -> dict[str, str]:
    """``status.allocatedResources``: the allocated pod's requests as ``PodRequests`` sums
    them (``convertStatusToAPIStatus`` in ``pkg/kubelet/kubelet_pods.go``); empty when it
    requests nothing (then left out)."""
    return _quantities(pod_requests(_allocated_pod(pod, allocs)))


def pod_status_resources(
    pod: Mapping[str, Any],
    allocs: Mapping[str, Alloc],
    *,
    stored: Mapping[str, Any] | None,
    cgroup: CgroupResources | None,
) -> dict[str, Any]:
    """``status.resources`` of the pod, by the kubelet's rules (``convertToAPIPodLevel
    ResourcesStatus`` in ``pkg/kubelet/kubelet_pods.go``).

    ``stored`` is the pod's status as stored (the phase and the values reported before),
    ``cgroup`` the pod cgroup's values as the kubelet reads them (``GetPodCgroupConfig``:
    ``memory_limit_bytes`` None when the file says there is none — on cgroup v1 the kubelet
    reads a number there, the caller passes it), None when they cannot be read.

    Until the stored phase is ``Running``: the allocated pod's ``PodRequests`` and
    ``PodLimits`` (with its pod-level ``spec.resources`` otherwise). Once running, from the
    pod-level ``spec.resources`` (usually none) and the cgroup: the CPU request its
    ``cpu.shares`` stand for (when above ``MinShares``), the CPU limit its quota stands for
    (above ``MinMilliCPULimit``), its memory limit; a value the cgroup does not give keeps
    the one reported before. The memory request, which is in no cgroup, is the one reported
    before whenever there is one: after a resize of the memory request a running pod keeps
    reporting the request it started with, as the kubelet does."""
    allocated = _allocated_pod(pod, allocs)
    spec_resources = (pod.get("spec") or {}).get("resources") or {}
    extra = {k: v for k, v in spec_resources.items() if k not in ("requests", "limits")}
    stored = stored or {}
    if stored.get("phase") != "Running":
        requests = _quantities(pod_requests(allocated))
        limits = _quantities(pod_limits(allocated))
        return _resource_requirements(requests, limits, extra)
    old = stored.get("resources") or {}
    old_requests, old_limits = old.get("requests") or {}, old.get("limits") or {}
    requests = {k: canonical_quantity(v) for k, v in (spec_resources.get("requests") or {}).items()}
    limits = {k: canonical_quantity(v) for k, v in (spec_resources.get("limits") or {}).items()}

    def keep(name: str, before: Mapping[str, Any], into: dict[str, Any]) -> None:
        if name in before:
            into[name] = before[name]

    cpu_request = 0
    if cgroup is not None:
        shares = cgroup.cpu_shares if cgroup.cpu_shares is not None else DEFAULT_CPU_SHARES
        cpu_request = shares_to_milli_cpu(shares)
    if cpu_request > 0:
        asked = read_quantity(requests.get("cpu"), milli=True) or 0
        if cpu_request > MIN_SHARES or asked > MIN_SHARES:
            requests["cpu"] = str(Quantity.from_milli(cpu_request))
    else:
        keep("cpu", old_requests, requests)
    if "memory" not in requests:
        memory = pod_requests(allocated).get("memory")
        if memory is not None:
            requests["memory"] = str(memory)
    keep("memory", old_requests, requests)
    cpu_limit = 0
    if cgroup is not None and not cgroup.cpu_quota_unlimited:
        cpu_limit = quota_to_milli_cpu(cgroup.cpu_quota_us, cgroup.cpu_period_us)
    if cpu_limit > 0:
        asked = read_quantity(limits.get("cpu"), milli=True) or 0
        if cpu_limit > MIN_MILLI_CPU_LIMIT or asked > MIN_MILLI_CPU_LIMIT:
            limits["cpu"] = str(Quantity.from_milli(cpu_limit))
    else:
        keep("cpu", old_limits, limits)
    memory_limit = cgroup.memory_limit_bytes if cgroup is not None else None
    if memory_limit is not None and memory_limit > 0:
        limits["memory"] = str(Quantity.from_int(memory_limit, Format.BINARY_SI))
    else:
        keep("memory", old_limits, limits)
    return _resource_requirements(requests, limits, extra)


def _resource_requirements(
    requests: Mapping[str, Any], limits: Mapping[str, Any], extra: Mapping[str, Any]
) -> dict[str, Any]:
    """A ``v1.ResourceRequirements`` as Go marshals it: empty lists and maps left out."""
    out: dict[str, Any] = {k: v for k, v in extra.items() if v}
    if limits:
        out["limits"] = {k: limits[k] for k in sorted(limits)}
    if requests:
        out["requests"] = {k: requests[k] for k in sorted(requests)}
    return out


def pod_phase(
    app: Iterable[ContainerState], restart_policy: str, *, initialized: bool, failed_init: bool
) -> str:
    """Upstream's phase rules (``getPhase``): Failed when an init container failed for good;
    Pending until initialized; Running while any app container runs or will restart;
    Succeeded when all ended with 0; Failed when all ended and one failed."""
    if failed_init:
        return "Failed"
    containers = list(app)
    if not initialized or not containers:
        return "Pending"
    running = sum(1 for c in containers if c.state == "running")
    waiting = sum(1 for c in containers if c.state == "waiting")
    if running:
        return "Running"
    if waiting:
        # Waiting to start for the first time, or in back-off before a restart.
        if all(
            c.restart_count == 0 and not c.last_state for c in containers if c.state == "waiting"
        ):
            return "Pending"
        return "Running"
    failed = any((c.exit_code or 0) != 0 for c in containers)
    if restart_policy == "Always":
        return "Running"
    if failed and restart_policy == "OnFailure":
        return "Running"
    return "Failed" if failed else "Succeeded"
