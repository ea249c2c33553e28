"""Pod conditions: who writes which, and the one rule every status writer follows.

Several components write parts of one pod's status: the scheduler (``PodScheduled`` while
the pod is pending, and its resize arbiter's ``PodResizeScheduled``/``PodResizePending``),
the node agent (its readiness conditions, ``PodResizeInProgress``, ``MemoryPaused``, and
``PodResizePending`` when its own ledger refuses a resize or when no resize is left), and the
controllers to come. Each writes from its own cache, which may be behind the server. The
rule, for all of them:

1. **A writer sends only its own decisions.** A decision is "condition type T should be
   this" (or "should not exist") *for pod generation G*. It is sent as a strategic merge
   patch of ``status.conditions`` keyed on the type: one complete item per decided type
   (every field present, absent ones null, stamped ``observedGeneration: G``), or a
   ``$patch: delete`` item for a condition the writer has seen. Never the list as a whole,
   so what others wrote is untouched. :data:`WRITERS` names who may decide each type;
   deciding another's type is a bug (:class:`ConditionOwnershipError`).
2. **A decision never overrides a newer one.** A stored condition with
   ``observedGeneration`` g is replaced or removed only by a decision for a generation ≥ g,
   and a decision on a type two writers share is dropped once the pod has moved past the
   generation it was made for; an older decision is dropped however often it is repeated.
3. **Where two writers may decide the same type at the same time** (``PodResizePending``:
   the arbiter and the node agent), rule 2 must hold against the stored object, not the
   writer's cache: such a patch carries the ``resourceVersion`` it was computed from (a
   compare-and-swap); on a conflict the writer re-reads the pod and applies rules 1 and 2
   again (:func:`inplace.client.status.write_status`). Writes that touch only types with a
   single writer at a time need no precondition: the strategic merge cannot lose them.

:func:`status_update` implements rules 1 and 2 as a pure function of the current pod;
:mod:`inplace.client.status` adds rule 3's retry. ``observedGeneration`` on every condition
and on ``status`` follows Kubernetes 1.34 (``PodObservedGenerationTracking``): the writer
stamps the generation its decision was made for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "KUBELET",
    "NODE_LIFECYCLE",
    "SCHEDULER",
    "WRITERS",
    "ConditionOwnershipError",
    "Decision",
    "StatusPatch",
    "Writers",
    "absent",
    "condition_patch",
    "find_condition",
    "present",
    "status_update",
]

KUBELET: Final = "kubelet"
"""The node agent (upstream's name for the component, as in its events' ``source``)."""
SCHEDULER: Final = "default-scheduler"
"""The scheduler and its resize arbiter."""
NODE_LIFECYCLE: Final = "node-lifecycle-controller"
"""The controller manager's node lifecycle controller: it marks the pods of a node that
stopped reporting not ready (upstream's ``MarkPodsNotReady``); the kubelet takes ``Ready``
back when the node reports again."""


@dataclass(frozen=True)
class Writers:
    """Who may decide a condition type, and whether two of them may do so at once."""

    names: frozenset[str]
    concurrent: bool = False
    """True when several writers may decide the type at the same time (rule 3: their
    writes are compare-and-swap). False when writers hand the type over (``PodScheduled``
    is the scheduler's until binding and the node agent's after it)."""


def _only(*names: str) -> Writers:
    return Writers(frozenset(names))


WRITERS: Final[Mapping[str, Writers]] = {
    "PodScheduled": _only(SCHEDULER, KUBELET),
    "PodReadyToStartContainers": _only(KUBELET),
    "Initialized": _only(KUBELET),
    "ContainersReady": _only(KUBELET),
    "Ready": _only(KUBELET, NODE_LIFECYCLE),
    "PodResizeInProgress": _only(KUBELET),
    "MemoryPaused": _only(KUBELET),
    "PodResizeScheduled": _only(SCHEDULER),
    "PodResizePending": Writers(frozenset({SCHEDULER, KUBELET}), concurrent=True),
}
"""Condition type → its writers. A type not listed (a readiness gate's, a controller's not
registered yet) may be written by anyone and is treated as concurrent."""

_UNLISTED: Final = Writers(frozenset(), concurrent=True)

_FIELDS: Final = ("status", "reason", "message")


class ConditionOwnershipError(ValueError):
    """A component decided a condition type that is not its own."""


@dataclass(frozen=True)
class Decision:
    """What one writer decided about one condition type, for one pod generation."""

    generation: int | None
    """The pod's ``metadata.generation`` the decision was made for."""
    condition: Mapping[str, Any] | None
    """``status``, ``reason``, ``message`` of the condition; None: it should not exist."""
    probed: bool = False
    """Stamped as the kubelet stamps its resize conditions (``updatedPodResizeCondition`` in
    ``pkg/kubelet/status/status_manager.go``): ``lastProbeTime`` is the time the condition is
    written, and ``lastTransitionTime`` changes when the reason does (their status is always
    True). A rewrite that would change only ``lastProbeTime`` is not sent."""

    @property
    def exists(self) -> bool:
        return self.condition is not None


def present(
    generation: int | None,
    status: str,
    reason: str = "",
    message: str = "",
    *,
    probed: bool = False,
) -> Decision:
    """The condition should be ``status`` (``"True"``/``"False"``) with this reason
    (``probed``: see :attr:`Decision.probed`)."""
    return Decision(generation, {"status": status, "reason": reason, "message": message}, probed)


def absent(generation: int | None) -> Decision:
    """The condition should not exist (as of ``generation``)."""
    return Decision(generation, None)


@dataclass(frozen=True)
class StatusPatch:
    """A strategic merge patch of ``status`` (``conditions``: items keyed on type)."""

    status: dict[str, Any]
    guarded: bool = False
    """Send with the resourceVersion it was computed from (rule 3)."""
    types: tuple[str, ...] = field(default=())
    """The condition types it writes or deletes."""


def find_condition(pod: Mapping[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == ctype:
            return dict(cond)
    return None


def _generation(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _set_fields(cond: Mapping[str, Any]) -> dict[str, Any]:
    """A condition without its null or empty fields (what the server keeps and compares)."""
    return {k: v for k, v in cond.items() if v is not None and v != ""}


def _unprobed(cond: Mapping[str, Any]) -> dict[str, Any]:
    """What decides whether a condition must be rewritten: its set fields but
    ``lastProbeTime`` (which a rewrite stamps, and which alone never warrants one)."""
    fields = _set_fields(cond)
    fields.pop("lastProbeTime", None)
    return fields


def condition_patch(
    current: Sequence[Mapping[str, Any]],
    decisions: Mapping[str, Decision],
    *,
    writer: str,
    now: str,
    pod_generation: int | None = None,
) -> StatusPatch:
    """The ``status.conditions`` items that apply ``decisions`` to ``current`` (the
    conditions of a pod at ``pod_generation``) under the rule (module docstring); ``now``
    stamps ``lastTransitionTime`` when a status changes (and ``lastProbeTime`` of a
    :attr:`~Decision.probed` decision)."""
    stored = {c.get("type"): c for c in current if isinstance(c, Mapping)}
    items: list[dict[str, Any]] = []
    types: list[str] = []
    guarded = False
    for ctype, decision in decisions.items():
        writers = WRITERS.get(ctype, _UNLISTED)
        if writers.names and writer not in writers.names:
            raise ConditionOwnershipError(
                f"{writer} may not write the pod condition {ctype} "
                f"(it is written by {', '.join(sorted(writers.names))})"
            )
        old = stored.get(ctype)
        generation = _generation(decision.generation)
        if old is not None and _generation(old.get("observedGeneration")) > generation:
            continue  # a decision for a newer generation stands
        if writers.concurrent and generation < _generation(pod_generation):
            continue  # the pod moved on: its writers decide again for the new generation
        item: dict[str, Any]
        if decision.condition is None:
            if old is None:
                continue
            item = {"type": ctype, "$patch": "delete"}
        else:
            status = decision.condition.get("status")
            reason = decision.condition.get("reason") or None
            # The transition is a change of status (of reason too, for a probed condition).
            same = (
                old is not None
                and old.get("status") == status
                and (not decision.probed or (old.get("reason") or None) == reason)
            )
            item = {
                "type": ctype,
                "status": status,
                "reason": reason,
                "message": decision.condition.get("message") or None,
                "observedGeneration": decision.generation,
                "lastProbeTime": now if decision.probed else None,
                "lastTransitionTime": (
                    old["lastTransitionTime"]
                    if old is not None and same and old.get("lastTransitionTime")
                    else now
                ),
            }
            compare = _unprobed if decision.probed else _set_fields
            if old is not None and compare(old) == compare(item):
                continue
        items.append(item)
        types.append(ctype)
        guarded = guarded or writers.concurrent
    return StatusPatch({"conditions": items} if items else {}, guarded, tuple(types))


def status_update(
    pod: Mapping[str, Any],
    *,
    writer: str,
    now: str,
    fields: Mapping[str, Any] | None = None,
    decisions: Mapping[str, Decision] | None = None,
    order: Sequence[str] | None = None,
) -> StatusPatch | None:
    """The status patch a writer sends to bring ``pod`` to its ``fields`` (top-level
    ``status`` fields it owns: only those that differ are sent) and condition
    ``decisions``; None when there is nothing to write.

    ``order``: where the writer's condition types go in ``status.conditions`` (the kubelet
    sends its whole list, so its conditions stand in its order): a patch that writes
    conditions then lists its items in that order and carries
    ``$setElementOrder/conditions`` with the writer's types the pod will have; the API
    server orders those so and keeps the others (other writers'), placed by where they were
    (upstream's ``normalizeElementOrder``)."""
    status = pod.get("status") or {}
    body = {k: v for k, v in (fields or {}).items() if status.get(k) != v}
    conditions = condition_patch(
        status.get("conditions") or (),
        decisions or {},
        writer=writer,
        now=now,
        pod_generation=(pod.get("metadata") or {}).get("generation"),
    )
    body.update(conditions.status)
    if order is not None and body.get("conditions"):
        _set_order(body, status.get("conditions") or (), order)
    if not body:
        return None
    return StatusPatch(body, conditions.guarded, conditions.types)


def _set_order(
    body: dict[str, Any], current: Sequence[Mapping[str, Any]], order: Sequence[str]
) -> None:
    """Order ``body``'s condition items by ``order`` (types it does not name last) and add
    the ``$setElementOrder/conditions`` directive for the types ``order`` names that will
    exist once the patch is applied."""
    rank = {ctype: i for i, ctype in enumerate(order)}
    items: list[dict[str, Any]] = sorted(
        body["conditions"], key=lambda item: rank.get(item["type"], len(rank))
    )
    body["conditions"] = items
    written = {item["type"] for item in items if item.get("$patch") != "delete"}
    deleted = {item["type"] for item in items if item.get("$patch") == "delete"}
    stored = {c.get("type") for c in current if isinstance(c, Mapping)}
    present = (stored | written) - deleted
    named = [ctype for ctype in order if ctype in present]
    named += [item["type"] for item in items if item["type"] in written - set(order)]
    body["$setElementOrder/conditions"] = [{"type": ctype} for ctype in named]
