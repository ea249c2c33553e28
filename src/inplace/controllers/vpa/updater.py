"""The updater's decisions, as a pure function: a VPA and its pods in, one decision per pod out.

Transcribed from upstream's ``updater`` (``logic/updater.go``, ``priority/``,
``restriction/``):

* ``Off`` and ``Initial`` never touch a running pod.
* A pod is a candidate when a container's request is outside [lowerBound, upperBound], or
  a container was OOM-killed within ``evict_after_oom_threshold`` of starting, or — for a
  pod running at least ``pod_lifetime_update_threshold`` — when the requests are off the
  target by ``update_threshold`` (sum over resources of |request - target| / request).
  Candidates are taken in priority order: growth first, then the largest relative change.
* Disruption is rationed per controller: a controller with fewer live pods than
  ``minReplicas`` is left alone, and at most ``eviction_tolerance_fraction`` of its replicas
  are evicted or resizing at once (one at a time for a single replica).
* ``InPlaceOrRecreate`` and ``InPlace`` resize in place (``pods/resize``). A resize already in
  flight is waited for; under ``InPlaceOrRecreate`` one that is ``Infeasible``, in error,
  ``Deferred`` longer than ``deferred_resize_timeout`` or in progress longer than
  ``in_progress_resize_timeout`` falls back to eviction. ``InPlace`` never evicts; an
  infeasible size is retried only once the recommendation asks for less.
* ``Recreate`` (and ``Auto``, its deprecated name) evicts.
* Our addition, ``memory_limit_headroom`` (off for upstream's settings): an in-place resize
  writes each memory limit at that multiple of the request where :mod:`.headroom` allows
  it, and a pod still at ``limit = request`` is resized once to get it (never evicted).

The caller (the controller manager, or ``inplace replay``) carries out the decisions: a
resize through ``pods/resize`` with :meth:`Decision.resize_body`, an eviction through the
Eviction API, which also enforces PodDisruptionBudgets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from inplace.api.objects import get_path
from inplace.api.resources import CPU, MEMORY, parse_resource_list
from inplace.api.timestamps import parse_rfc3339
from inplace.api.vpa_policy import (
    IN_PLACE,
    IN_PLACE_OR_RECREATE,
    ContainerResources,
    PodRecommendation,
    container_policy,
    container_resources,
    is_scaling_off,
    min_replicas,
    pod_recommendations,
    resize_body,
    update_mode,
    updates_running_pods,
)

from .headroom import lacks_headroom, with_headroom
from .settings import UpdaterSettings

__all__ = [
    "Action",
    "Decision",
    "UpdaterMemory",
    "decide",
    "pod_priority",
]


class Action(StrEnum):
    NONE = "none"
    """Leave the pod as it is."""
    WAIT = "wait"
    """It should change, but not now (budget, a resize in flight, no recommendation yet)."""
    RESIZE = "resize"
    """Resize in place to :attr:`Decision.resources`."""
    EVICT = "evict"
    """Evict, so the controller recreates it (and admission gives it the recommendation)."""


@dataclass(frozen=True)
class Decision:
    pod: str
    """``namespace/name``."""
    action: Action
    reason: str
    resources: tuple[ContainerResources, ...] = ()
    without_headroom: tuple[ContainerResources, ...] = ()
    """The same resize with the limits as upstream writes them, when the headroom changed
    them: what the caller sends instead if the API refuses the raised limits (a
    ResourceQuota on ``limits.memory``, a LimitRange's maximum)."""

    def resize_body(self) -> dict[str, Any]:
        """The strategic merge patch for ``pods/NAME/resize``."""
        return resize_body(self.resources)


@dataclass
class UpdaterMemory:
    """What the updater keeps between passes, as upstream does in memory."""

    resize_started: dict[str, float] = field(default_factory=dict)
    """Pod key → when its current in-place resize was asked for (or first seen in flight)."""
    infeasible: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """Pod uid → per-container targets of a resize found infeasible (``InPlace`` mode)."""
    headroom_refused: set[str] = field(default_factory=set)
    """Pod uids whose raised memory limits the API refused: they keep upstream's limits."""

    def forget(self, pod: str, uid: str = "") -> None:
        """A pod is gone (``namespace/name``, uid): drop what is remembered about it. One
        memory serves every VPA; entries of live pods clear themselves when no resize is
        in flight."""
        self.resize_started.pop(pod, None)
        self.infeasible.pop(uid, None)
        self.headroom_refused.discard(uid)


@dataclass(frozen=True)
class Priority:
    outside_range: bool
    scale_up: bool
    resource_diff: float


def pod_key(pod: Mapping[str, Any]) -> str:
    return (
        f"{get_path(pod, 'metadata', 'namespace') or ''}/{get_path(pod, 'metadata', 'name') or ''}"
    )


def pod_priority(recommendations: Sequence[PodRecommendation]) -> Priority:
    """Upstream's ``GetUpdatePriority`` over the processed recommendations."""
    outside = scale_up = False
    total_request: dict[str, int] = {}
    total_recommended: dict[str, int] = {}
    for rec in recommendations:
        for resource, recommended in rec.target.items():
            total_recommended[resource] = total_recommended.get(resource, 0) + (
                recommended.milli_value()
            )
            request = rec.requests.get(resource)
            if request is None:
                scale_up = outside = True
                continue
            total_request[resource] = total_request.get(resource, 0) + request.milli_value()
            if recommended.milli_value() > request.milli_value():
                scale_up = True
            lower, upper = rec.lower_bound.get(resource), rec.upper_bound.get(resource)
            if (lower is not None and request < lower) or (upper is not None and request > upper):
                outside = True
    diff = 0.0
    for resource, recommended_total in total_recommended.items():
        requested = max(float(total_request.get(resource, 0)), 1.0)
        diff += abs(requested - recommended_total) / requested
    return Priority(outside, scale_up, diff)


def _quick_oom(pod: Mapping[str, Any], vpa: Mapping[str, Any], threshold: float) -> bool:
    """A VPA-scaled container was OOM-killed less than ``threshold`` after it started."""
    override = get_path(vpa, "spec", "updatePolicy", "evictAfterOOMSeconds")
    if isinstance(override, int) and not isinstance(override, bool):
        threshold = float(override)
    for status in get_path(pod, "status", "containerStatuses") or ():
        if is_scaling_off(container_policy(vpa, str(get_path(status, "name")))):
            continue
        terminated = get_path(status, "lastState", "terminated")
        if not isinstance(terminated, Mapping) or terminated.get("reason") != "OOMKilled":
            continue
        try:
            started = parse_rfc3339(str(terminated.get("startedAt"))).timestamp()
            finished = parse_rfc3339(str(terminated.get("finishedAt"))).timestamp()
        except ValueError:
            continue
        if finished - started < threshold:
            return True
    return False


def _start_time(pod: Mapping[str, Any]) -> float | None:
    raw = get_path(pod, "status", "startTime")
    try:
        return parse_rfc3339(str(raw)).timestamp() if raw else None
    except ValueError:
        return None


def _accept(
    pod: Mapping[str, Any],
    vpa: Mapping[str, Any],
    recommendations: Sequence[PodRecommendation],
    now: float,
    settings: UpdaterSettings,
) -> tuple[Priority | None, str]:
    """Upstream's ``AddPod``: the pod's priority if it should be updated, else why not."""
    if not recommendations:
        return None, "no recommendation for any of its containers"
    priority = pod_priority(recommendations)
    quick_oom = _quick_oom(pod, vpa, settings.evict_after_oom_threshold)
    if not priority.outside_range and not quick_oom:
        started = _start_time(pod)
        if started is None:
            return None, "no status.startTime"
        if now < started + settings.pod_lifetime_update_threshold:
            return None, "requests within the recommended range and the pod is young"
        if priority.resource_diff < settings.update_threshold:
            return None, f"requests within {settings.update_threshold:.0%} of the target"
    if quick_oom and priority.resource_diff == 0:
        return None, "OOM-killed, but the recommendation would not change it"
    if priority.outside_range:
        return priority, "requests outside the recommended range"
    if quick_oom:
        return priority, "OOM-killed soon after start"
    return priority, f"requests {priority.resource_diff:.0%} off the target"


# -- replica groups (upstream's restriction package) ----------------------------------------


@dataclass
class _Group:
    configured: int
    tolerance: int
    running: int = 0
    pending: int = 0
    evicted: int = 0
    in_place_initiated: int = 0

    def disruptable(self) -> bool:
        should_be_alive = self.configured - self.tolerance
        alive = self.running - (self.evicted + self.in_place_initiated)
        return alive > should_be_alive or (
            self.configured == self.running
            and self.tolerance == 0
            and self.evicted == 0
            and self.in_place_initiated == 0
        )


def controller_of(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(kind, name)`` of the pod's controlling owner."""
    for ref in get_path(pod, "metadata", "ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("kind", "")), str(ref.get("name", ""))
    return None


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in get_path(pod, "status", "conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind and cond.get("status") == "True":
            return cond
    return None


def _resizing(pod: Mapping[str, Any]) -> bool:
    return bool(_condition(pod, "PodResizePending") or _condition(pod, "PodResizeInProgress"))


def _phase(pod: Mapping[str, Any]) -> str:
    return str(get_path(pod, "status", "phase") or "")


class _Pass:
    """One updater pass over one VPA: the replica groups and the updater's memory."""

    def __init__(
        self,
        vpa: Mapping[str, Any],
        pods: Sequence[Mapping[str, Any]],
        replicas: Mapping[tuple[str, str], int],
        now: float,
        settings: UpdaterSettings,
        memory: UpdaterMemory,
    ) -> None:
        self.vpa, self.now, self.settings, self.memory = vpa, now, settings, memory
        self.mode = update_mode(vpa)
        self.groups: dict[tuple[str, str], _Group] = {}
        self.group_of: dict[str, tuple[str, str]] = {}
        self.excluded: dict[str, str] = {}
        by_owner: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for pod in pods:
            owner = controller_of(pod)
            if owner is None:
                self.excluded[pod_key(pod)] = "the pod has no controller"
                continue
            by_owner.setdefault(owner, []).append(pod)
        required = min_replicas(vpa, settings.min_replicas)
        for owner, members in by_owner.items():
            reason = None
            if len(members) < required:
                reason = (
                    f"{len(members)} live replica(s), fewer than minReplicas {required} "
                    "(spec.updatePolicy.minReplicas, else the updater's --min-replicas)"
                )
            configured = len(members) if owner[0] == "Job" else replicas.get(owner)
            if reason is None and not configured:
                reason = f"the replica count of {owner[0]} {owner[1]} is unknown"
            if reason is not None or configured is None:
                for pod in members:
                    self.excluded[pod_key(pod)] = reason or ""
                continue
            group = _Group(configured, int(configured * settings.eviction_tolerance_fraction))
            for pod in members:
                self.group_of[pod_key(pod)] = owner
                if _phase(pod) == "Pending":
                    group.pending += 1
            group.running = len(members) - group.pending
            self.groups[owner] = group

    def group(self, pod: Mapping[str, Any]) -> _Group | None:
        owner = self.group_of.get(pod_key(pod))
        return None if owner is None else self.groups.get(owner)

    def _resize_started(self, pod: Mapping[str, Any]) -> float:
        return self.memory.resize_started.setdefault(pod_key(pod), self.now)

    def can_evict_resizing(self, pod: Mapping[str, Any], group: _Group) -> tuple[bool, str]:
        """Upstream's ``CanEvictInPlacingPod``: fall back to eviction for a stuck resize."""
        if not _resizing(pod):
            return False, "not resizing"
        since = self.now - self._resize_started(pod)
        if not group.disruptable():
            return False, "resizing, and its controller has no disruption budget left"
        pending = _condition(pod, "PodResizePending")
        if pending is not None:
            reason = pending.get("reason")
            if reason == "Deferred":
                if since > self.settings.deferred_resize_timeout:
                    return True, f"resize Deferred for {since:.0f}s"
                return False, "resize Deferred; waiting"
            if reason == "Infeasible":
                return True, "resize Infeasible"
            return True, f"resize pending ({reason})"
        progress = _condition(pod, "PodResizeInProgress")
        assert progress is not None
        if not progress.get("reason") and not progress.get("message"):
            if since > self.settings.in_progress_resize_timeout:
                return True, f"resize in progress for {since:.0f}s"
            return False, "resize in progress; waiting"
        return True, f"resize failed ({progress.get('reason')})"

    def can_evict(self, pod: Mapping[str, Any]) -> tuple[bool, str]:
        group = self.group(pod)
        if group is None:
            return False, self.excluded.get(pod_key(pod), "not in a replica group")
        if _phase(pod) == "Pending":
            return True, "pending"
        if _resizing(pod):
            return self.can_evict_resizing(pod, group)
        if group.disruptable():
            return True, "within the disruption budget"
        return False, "its controller has no disruption budget left"

    def can_resize(self, pod: Mapping[str, Any]) -> tuple[str, str]:
        """Upstream's ``CanInPlaceUpdate``: approved, deferred, evict, infeasible, cached."""
        group = self.group(pod)
        if group is None:
            return "deferred", self.excluded.get(pod_key(pod), "not in a replica group")
        if _phase(pod) == "Pending":
            return "deferred", "the pod is Pending"
        if self.mode == IN_PLACE:
            last = self.memory.infeasible.get(str(get_path(pod, "metadata", "uid")))
            if last is not None and not _asks_for_less(last, self.vpa):
                return "cached", "the last resize was infeasible and the target is not lower"
        if _resizing(pod):
            if self.mode == IN_PLACE:
                pending = _condition(pod, "PodResizePending")
                if pending is not None and pending.get("reason") == "Infeasible":
                    return "infeasible", "resize Infeasible"
                return "deferred", "a resize is in flight"
            evict, why = self.can_evict_resizing(pod, group)
            return ("evict", why) if evict else ("deferred", why)
        self.memory.resize_started.pop(pod_key(pod), None)
        if group.disruptable():
            return "approved", "within the disruption budget"
        return "deferred", "its controller has no disruption budget left"


def _targets(vpa: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for entry in get_path(vpa, "status", "recommendation", "containerRecommendations") or ():
        if isinstance(entry, Mapping):
            out[str(entry.get("containerName"))] = dict(entry.get("target") or {})
    return out


def _asks_for_less(last: Mapping[str, Mapping[str, Any]], vpa: Mapping[str, Any]) -> bool:
    now = _targets(vpa)
    for name, old in last.items():
        new = now.get(name)
        if new is None:
            continue
        old_q, new_q = parse_resource_list(old), parse_resource_list(new)
        if any(r in old_q and new_q[r] < old_q[r] for r in new_q):
            return True
    return False


def _live(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Upstream's updater lists scheduled pods that are not finished or being deleted."""
    return [
        p
        for p in pods
        if get_path(p, "spec", "nodeName")
        and _phase(p) not in ("Succeeded", "Failed")
        and not get_path(p, "metadata", "deletionTimestamp")
    ]


def decide(
    vpa: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    *,
    replicas: Mapping[tuple[str, str], int],
    now: float,
    settings: UpdaterSettings,
    memory: UpdaterMemory | None = None,
) -> list[Decision]:
    """One decision for every live pod the VPA controls, in the order to carry them out.

    ``replicas`` gives the configured replica count of each controller (``(kind, name)``,
    e.g. a ReplicaSet's ``spec.replicas``; Jobs count their live pods). ``memory`` carries
    what the updater remembers between passes (resize start times, infeasible targets).
    """
    memory = memory if memory is not None else UpdaterMemory()
    live = _live(pods)
    mode = update_mode(vpa)
    if not updates_running_pods(vpa):
        return [Decision(pod_key(p), Action.NONE, f"updateMode {mode}") for p in live]
    if not get_path(vpa, "status", "recommendation", "containerRecommendations"):
        return [Decision(pod_key(p), Action.WAIT, "no recommendation yet") for p in live]

    run = _Pass(vpa, live, replicas, now, settings, memory)
    in_place = mode in (IN_PLACE_OR_RECREATE, IN_PLACE)
    decided: dict[str, Decision] = {}
    candidates: list[tuple[Priority, int, Mapping[str, Any], list[PodRecommendation], str]] = []
    for index, pod in enumerate(live):
        key = pod_key(pod)
        if in_place:
            verdict, why = run.can_resize(pod)
            keep = verdict == "approved" or (
                verdict in ("infeasible", "deferred") and mode == IN_PLACE
            )
            keep = keep or (verdict == "evict" and mode == IN_PLACE_OR_RECREATE)
        else:
            keep, why = run.can_evict(pod)
        recs = pod_recommendations(pod, vpa)
        priority, accept_why = _accept(pod, vpa, recs, now, settings)
        headroom = _headroom(pod, settings, memory)
        if in_place and priority is None and headroom and lacks_headroom(pod, recs, headroom):
            # Only in place: a pod is never evicted just to raise its limit.
            priority, accept_why = pod_priority(recs), "memory limit without its headroom"
        if not keep:
            # Held back (budget, minReplicas, a resize in flight): a wait only if the pod
            # would otherwise be updated, so a held VPA can say why it does not act.
            action = Action.NONE if priority is None else Action.WAIT
            decided[key] = Decision(key, action, why if priority is not None else accept_why)
            continue
        why = accept_why
        if priority is None:
            decided[key] = Decision(key, Action.NONE, why)
            continue
        candidates.append((priority, index, pod, recs, why))
    # Growth first, then the largest relative change (upstream's PodPriority.Less).
    candidates.sort(key=lambda c: (not c[0].scale_up, -c[0].resource_diff, c[1]))

    ordered: list[Decision] = []
    evictions: list[tuple[Mapping[str, Any], str]] = []
    for _, _, pod, recs, accepted_why in candidates:
        key = pod_key(pod)
        if not in_place:
            evictions.append((pod, accepted_why))
            continue
        verdict, why = run.can_resize(pod)
        if verdict == "evict":
            evictions.append((pod, why))
            continue
        if verdict == "cached":
            decided[key] = Decision(key, Action.WAIT, why)
            continue
        plain = tuple(container_resources(r) for r in recs)
        resources = plain
        headroom = _headroom(pod, settings, memory)
        if headroom:
            resources = with_headroom(plain, recs, pod, headroom)
        if verdict == "deferred" and (
            mode == IN_PLACE_OR_RECREATE or _already_asked(pod, resources)
        ):
            decided[key] = Decision(key, Action.WAIT, why)
            continue
        if verdict == "infeasible":
            memory.infeasible[str(get_path(pod, "metadata", "uid"))] = _targets(vpa)
        group = run.group(pod)
        if group is not None:
            group.in_place_initiated += 1
        memory.resize_started[key] = now
        fallback = plain if resources != plain else ()
        ordered.append(Decision(key, Action.RESIZE, accepted_why, resources, fallback))
    for pod, why in evictions:
        key = pod_key(pod)
        ok, refusal = run.can_evict(pod)
        if not ok:
            decided[key] = Decision(key, Action.WAIT, refusal)
            continue
        group = run.group(pod)
        if group is not None and _phase(pod) != "Pending":
            group.evicted += 1
        ordered.append(Decision(key, Action.EVICT, why))
    done = {d.pod for d in ordered}
    ordered.extend(decided[pod_key(p)] for p in live if pod_key(p) not in done)
    return ordered


def _headroom(
    pod: Mapping[str, Any], settings: UpdaterSettings, memory: UpdaterMemory
) -> float | None:
    """The memory limit headroom for this pod: none once the API refused it."""
    if str(get_path(pod, "metadata", "uid")) in memory.headroom_refused:
        return None
    return settings.memory_limit_headroom


def _already_asked(pod: Mapping[str, Any], resources: Sequence[ContainerResources]) -> bool:
    """The spec already holds these requests (a resize to them is in flight)."""
    spec = {
        str(c.get("name")): c
        for c in get_path(pod, "spec", "containers") or ()
        if isinstance(c, Mapping)
    }
    for res in resources:
        container = spec.get(res.name)
        if container is None:
            return False
        current = parse_resource_list(get_path(container, "resources", "requests"))
        if any(current.get(r) != q for r, q in res.requests.items() if r in (CPU, MEMORY)):
            return False
    return True
