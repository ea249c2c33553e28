"""The in-place rule and a workload's resize progress, as pure functions of plain dicts.

* :func:`in_place_verdict` — may a template change be carried out by resizing the running
  pods? Only if the templates differ in nothing but containers' ``resources`` and
  ``resizePolicy`` (:mod:`inplace.api.podtemplates`) *and* the ``pods/resize`` validation
  accepts the change on a pod made from each template (cpu and memory only, nothing removed,
  same QoS class; upstream's resize rules also keep ``resizePolicy`` as it is, so a policy
  change rolls out). Anything else rolls out as upstream does.
* :func:`resize_patch` — the ``pods/resize`` body that brings a pod to its template's cpu
  and memory, or None when it is already there. Templates are compared as the pods made from
  them are stored (pod defaulting: requests default to limits), quantities by value.
* :func:`pod_state` — where one pod is: at the template's size, resizing, waiting
  (``Deferred``/``Infeasible``, with the scheduler's or kubelet's message), or not yet asked.
* :func:`summarize` and :func:`progress_condition` — the counts and the ``PodsResized``
  condition a workload shows (``kubectl describe``), and :func:`should_replace` — whether an
  ``InPlacePreferred`` pod that has waited too long is replaced at the new size.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from inplace.api import defaults
from inplace.api.annotations import IN_PLACE_PREFERRED, resize_policy
from inplace.api.podtemplates import only_resizable_changed
from inplace.api.quantity import Quantity, QuantityError
from inplace.api.resources import (
    pod_requests,
    qos_class,
    requests_milli_bytes,
    resize_accounting_requests,
)
from inplace.api.timestamps import parse_rfc3339
from inplace.api.validation import ValidationError, validate_resize

__all__ = [
    "CONDITION",
    "InPlaceVerdict",
    "PodState",
    "Progress",
    "State",
    "allows_memory_limit_decrease",
    "desired_resources",
    "fingerprint",
    "fits_elsewhere",
    "in_place_verdict",
    "pod_state",
    "progress_condition",
    "resize_patch",
    "should_replace",
    "summarize",
]

Obj = dict[str, Any]

CONDITION: Final = "PodsResized"
"""The condition a workload carries once its pods have been resized at least once."""

_RESIZABLE: Final = ("cpu", "memory")


# -- the in-place rule -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InPlaceVerdict:
    in_place: bool
    reason: str = ""


def pod_from_template(template: Mapping[str, Any]) -> Obj:
    """A defaulted pod made from ``template``, as the API server would store it."""
    meta = template.get("metadata") or {}
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "template",
            "namespace": "default",
            **({"labels": dict(meta["labels"])} if meta.get("labels") else {}),
            **({"annotations": dict(meta["annotations"])} if meta.get("annotations") else {}),
        },
        "spec": orjson.loads(orjson.dumps(template.get("spec") or {})),
    }
    defaults.default_pod(pod, True)
    return pod


def allows_memory_limit_decrease(version: Mapping[str, Any]) -> bool:
    """Whether the API server answering ``GET /version`` with ``version`` lets ``pods/resize``
    lower a memory limit in place: from 1.34 on (1.33 refuses it, 422 "memory limits cannot be
    decreased", unless the container restarts for memory), and inplace's own API server
    (``+inplace`` in its build), which applies 1.34's rule whatever release it names. An
    answer that cannot be read is taken as allowing it, as every release since 1.34 does."""
    git = str(version.get("gitVersion") or "")
    if "+inplace" in git:
        return True
    try:
        major = int(str(version.get("major") or "").rstrip("+"))
        minor = int(str(version.get("minor") or "").rstrip("+"))
    except ValueError:
        return True
    return (major, minor) >= (1, 34)


def in_place_verdict(
    old: Mapping[str, Any], new: Mapping[str, Any], *, allow_memory_limit_decrease: bool = True
) -> InPlaceVerdict:
    """Whether moving pods from template ``old`` to ``new`` can be done by resizing them, on
    an API server that does (or, ``allow_memory_limit_decrease`` False, does not: 1.33) let a
    memory limit be lowered in place."""
    if not only_resizable_changed(old, new):
        return InPlaceVerdict(False, "the pod template changed beyond container resources")
    old_pod, new_pod = pod_from_template(old), pod_from_template(new)
    # What the API server stored for the running pods (a resize keeps their status).
    old_pod["status"] = new_pod["status"] = {"qosClass": qos_class(old_pod)}
    try:
        validate_resize(new_pod, old_pod, allow_memory_limit_decrease=allow_memory_limit_decrease)
    except ValidationError as exc:
        detail = "; ".join(e.message() for e in exc.errors) or exc.message()
        return InPlaceVerdict(False, f"the change cannot be made in place: {detail}")
    return InPlaceVerdict(True)


# -- one pod against its template ------------------------------------------------------------

ContainerWant = tuple[dict[str, Quantity], dict[str, Quantity]]
"""A container's (requests, limits) of cpu and memory."""


def _cpu_memory(raw: Any) -> dict[str, Quantity]:
    out: dict[str, Quantity] = {}
    if not isinstance(raw, Mapping):
        return out
    for name in _RESIZABLE:
        if name in raw:
            try:
                out[name] = Quantity.from_json(raw[name])
            except QuantityError:
                continue
    return out


def _resizable_containers(spec: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for container in spec.get("containers") or ():
        yield "containers", container
    for container in spec.get("initContainers") or ():
        if container.get("restartPolicy") == "Always":
            yield "initContainers", container


def desired_resources(template: Mapping[str, Any]) -> dict[str, ContainerWant]:
    """Per container name: the cpu/memory (requests, limits) a pod of ``template`` has."""
    pod = pod_from_template(template)
    out: dict[str, ContainerWant] = {}
    for _, container in _resizable_containers(pod.get("spec") or {}):
        res = container.get("resources") or {}
        out[str(container.get("name"))] = (
            _cpu_memory(res.get("requests")),
            _cpu_memory(res.get("limits")),
        )
    return out


def fingerprint(want: Mapping[str, ContainerWant]) -> str:
    """A short stable name for a set of desired resources (one resize "round")."""
    canonical = {
        name: [
            {k: str(v) for k, v in sorted(req.items())},
            {k: str(v) for k, v in sorted(lim.items())},
        ]
        for name, (req, lim) in sorted(want.items())
    }
    return hashlib.sha256(orjson.dumps(canonical)).hexdigest()[:12]


def _quantities_json(want: Mapping[str, Quantity], have: Mapping[str, Quantity]) -> Obj:
    out: Obj = {name: str(q) for name, q in want.items()}
    for name in have:
        if name not in want:
            out[name] = None
    return out


def resize_patch(pod: Mapping[str, Any], want: Mapping[str, ContainerWant]) -> Obj | None:
    """The strategic-merge body for ``pods/NAME/resize`` that gives ``pod`` the resources in
    ``want``, or None if its spec already has them."""
    changes: dict[str, list[Obj]] = {}
    for key, container in _resizable_containers(pod.get("spec") or {}):
        name = str(container.get("name"))
        if name not in want:
            continue
        req_want, lim_want = want[name]
        res = container.get("resources") or {}
        req_have, lim_have = _cpu_memory(res.get("requests")), _cpu_memory(res.get("limits"))
        entry: Obj = {"name": name}
        if req_have != req_want or lim_have != lim_want:
            resources: Obj = {}
            if req_want or req_have:
                resources["requests"] = _quantities_json(req_want, req_have)
            if lim_want or lim_have:
                resources["limits"] = _quantities_json(lim_want, lim_have)
            entry["resources"] = resources
        if len(entry) > 1:
            changes.setdefault(key, []).append(entry)
    if not changes:
        return None
    return {"spec": changes}


class State(enum.Enum):
    AT_SIZE = "at size"
    NEEDS_PATCH = "not yet resized"
    RESIZING = "resizing"
    DEFERRED = "Deferred"
    INFEASIBLE = "Infeasible"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class PodState:
    state: State
    message: str = ""
    since: float = 0.0
    """Unix time the pod started waiting (PodResizePending's transition), for replacement."""
    in_place: bool = False
    """At size after having been resized (``metadata.generation`` > 1), not created so."""


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind and cond.get("status", "True") == "True":
            return cond  # type: ignore[no-any-return]
    return None


def _stamp(value: Any) -> float:
    try:
        return parse_rfc3339(str(value)).timestamp()
    except ValueError:
        return 0.0


def _actual_matches(pod: Mapping[str, Any]) -> bool:
    """The node reports the spec's cpu/memory as allocated and actual for every container
    (a pod with no container status yet has not started: it will start at its spec)."""
    spec = pod.get("spec") or {}
    statuses = {
        str(s.get("name")): s
        for key in ("containerStatuses", "initContainerStatuses")
        for s in (pod.get("status") or {}).get(key) or ()
    }
    for _, container in _resizable_containers(spec):
        status = statuses.get(str(container.get("name")))
        if status is None:
            continue
        res = container.get("resources") or {}
        want_req, want_lim = _cpu_memory(res.get("requests")), _cpu_memory(res.get("limits"))
        allocated = status.get("allocatedResources")
        if allocated is not None and _cpu_memory(allocated) != want_req:
            return False
        actual = status.get("resources")
        if actual is not None:
            if _cpu_memory(actual.get("requests")) != want_req:
                return False
            if _cpu_memory(actual.get("limits")) != want_lim:
                return False
    return True


def pod_state(pod: Mapping[str, Any], want: Mapping[str, ContainerWant]) -> PodState:
    if resize_patch(pod, want) is not None:
        return PodState(State.NEEDS_PATCH)
    pending = _condition(pod, "PodResizePending")
    if pending is not None:
        reason = str(pending.get("reason") or "Deferred")
        state = State.INFEASIBLE if reason == "Infeasible" else State.DEFERRED
        return PodState(
            state, str(pending.get("message") or ""), _stamp(pending.get("lastTransitionTime"))
        )
    progress = _condition(pod, "PodResizeInProgress")
    if progress is not None and progress.get("reason") == "Error":
        return PodState(
            State.ERROR,
            str(progress.get("message") or ""),
            _stamp(progress.get("lastTransitionTime")),
        )
    if progress is not None or not _actual_matches(pod):
        return PodState(State.RESIZING)
    generation = int((pod.get("metadata") or {}).get("generation") or 1)
    return PodState(State.AT_SIZE, in_place=generation > 1)


def should_replace(
    pod: Mapping[str, Any], state: PodState, *, now: float, timeout: float, fits_elsewhere: bool
) -> bool:
    """An ``InPlacePreferred`` pod whose resize has been Infeasible or Deferred for longer
    than ``timeout`` is replaced at the new size, if the new size fits another node."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if resize_policy(annotations) != IN_PLACE_PREFERRED:
        return False
    if state.state not in (State.DEFERRED, State.INFEASIBLE):
        return False
    if not state.since or now - state.since < timeout:
        return False
    return fits_elsewhere


def _tolerates(pod: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    for tol in (pod.get("spec") or {}).get("tolerations") or ():
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol.get("key") == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and (tol.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


def fits_elsewhere(
    pod: Mapping[str, Any],
    nodes: Iterable[Mapping[str, Any]],
    pods_on: Mapping[str, Iterable[Mapping[str, Any]]],
) -> bool:
    """Would ``pod`` at its spec's (new) size fit on a schedulable node other than its own?

    A cheap, conservative estimate from the informers, used only to avoid replacing a pod
    whose replacement could not be placed anywhere: the scheduler still decides."""
    want_cpu, want_mem = requests_milli_bytes(pod_requests(pod))
    current = (pod.get("spec") or {}).get("nodeName")
    for node in nodes:
        name = (node.get("metadata") or {}).get("name")
        spec = node.get("spec") or {}
        if name == current or spec.get("unschedulable"):
            continue
        if any(
            t.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(pod, t)
            for t in spec.get("taints") or ()
        ):
            continue
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        try:
            free_cpu = Quantity.from_json(allocatable.get("cpu", "0")).milli_value()
            free_mem = Quantity.from_json(allocatable.get("memory", "0")).value()
        except QuantityError:
            continue
        for other in pods_on.get(str(name), ()):
            if (other.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            cpu, mem = requests_milli_bytes(resize_accounting_requests(other))
            free_cpu, free_mem = free_cpu - cpu, free_mem - mem
        if free_cpu >= want_cpu and free_mem >= want_mem:
            return True
    return False


# -- a workload's progress -------------------------------------------------------------------


@dataclass(slots=True)
class Progress:
    total: int = 0
    at_size: int = 0
    in_place: int = 0
    moved: int = 0
    resizing: int = 0
    waiting: list[tuple[str, PodState]] = field(default_factory=list)
    """Pods waiting (Deferred, Infeasible, Error or refused), with why."""

    @property
    def pending(self) -> int:
        return self.total - self.at_size

    @property
    def done(self) -> bool:
        return self.total == self.at_size


def summarize(states: Iterable[tuple[str, PodState]], *, moved: int = 0) -> Progress:
    progress = Progress(moved=moved)
    for name, state in states:
        progress.total += 1
        if state.state is State.AT_SIZE:
            progress.at_size += 1
            progress.in_place += state.in_place
        elif state.state in (State.RESIZING, State.NEEDS_PATCH):
            progress.resizing += 1
        else:
            progress.waiting.append((name, state))
    return progress


_SHOWN: Final = 3


def progress_condition(progress: Progress, *, policy: str, kind: str, now: str) -> Obj:
    """The ``PodsResized`` condition for a workload of ``kind`` (Deployment, ReplicaSet or
    Job, whose condition types have different time fields): True once every pod is at the
    template's resources."""
    head = (
        f"{progress.at_size}/{progress.total} pods at the template's resources "
        f"({progress.in_place} resized in place, {progress.moved} moved)"
    )
    if progress.done:
        return _cond(kind, "True", "AllPodsResized", head, now)
    parts = [head]
    if progress.resizing:
        parts.append(f"{progress.resizing} resizing")
    if progress.waiting:
        counts: dict[str, int] = {}
        for _, state in progress.waiting:
            counts[state.state.value] = counts.get(state.state.value, 0) + 1
        summary = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
        shown = [
            f"{name}: {state.state.value}: {state.message}".rstrip(": ")
            for name, state in progress.waiting[:_SHOWN]
        ]
        more = len(progress.waiting) - _SHOWN
        detail = "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
        stays = (
            " (resize policy InPlaceOnly: they stay where they are until room appears)"
            if policy != IN_PLACE_PREFERRED
            else ""
        )
        parts.append(f"{len(progress.waiting)} pending{stays}: {summary} — {detail}")
        return _cond(kind, "False", "ResizePending", "; ".join(parts), now)
    return _cond(kind, "False", "ResizeInProgress", "; ".join(parts), now)


def _cond(kind: str, status: str, reason: str, message: str, now: str) -> Obj:
    cond: Obj = {"type": CONDITION, "status": status}
    if kind == "Deployment":
        cond["lastUpdateTime"] = now
    elif kind == "Job":
        cond["lastProbeTime"] = now
    cond.update(lastTransitionTime=now, reason=reason, message=message)
    return cond
