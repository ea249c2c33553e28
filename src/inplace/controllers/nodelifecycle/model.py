"""Node health and taints, pure (upstream ``pkg/controller/nodelifecycle`` and
``pkg/controller/tainteviction``).

* :func:`stale` — a node is stale when neither its Lease's ``renewTime`` nor its Ready
  condition's ``lastHeartbeatTime`` changed for the grace period (measured on this process's
  clock from when the change was *observed*, as upstream does, so clock skew between
  components does not matter); a node that never posted status gets the startup grace.
* :func:`unknown_conditions` — Ready, MemoryPressure, DiskPressure and PIDPressure become
  ``Unknown`` (``NodeStatusUnknown``, "Kubelet stopped posting node status.").
* :func:`desired_taints` — the taints the conditions imply: ``not-ready`` / ``unreachable``
  with ``NoExecute`` (taint-based eviction) and ``NoSchedule`` (scheduling), the pressure
  taints, ``unschedulable``; a node that never reported keeps ``not-ready:NoSchedule`` (ours:
  upstream's pass would drop the taint its admission added; a Node object with no agent
  behind it must not receive pods); :func:`merge_taints` applies them and leaves other
  taints alone.
* :func:`eviction_delay` — how long a pod may stay on a node with ``NoExecute`` taints: now if
  it does not tolerate one, never if it tolerates all forever, else the smallest
  ``tolerationSeconds`` counted from when the taint was added.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from inplace.api.timestamps import parse_rfc3339

__all__ = [
    "MANAGED_TAINTS",
    "NOT_READY",
    "UNREACHABLE",
    "desired_taints",
    "eviction_delay",
    "merge_taints",
    "ready_status",
    "tolerates",
    "unknown_conditions",
]

Obj = dict[str, Any]

NOT_READY: Final = "node.kubernetes.io/not-ready"
UNREACHABLE: Final = "node.kubernetes.io/unreachable"
UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
DISK_PRESSURE: Final = "node.kubernetes.io/disk-pressure"
PID_PRESSURE: Final = "node.kubernetes.io/pid-pressure"
NETWORK_UNAVAILABLE: Final = "node.kubernetes.io/network-unavailable"

MANAGED_TAINTS: Final = frozenset(
    {
        NOT_READY,
        UNREACHABLE,
        UNSCHEDULABLE,
        MEMORY_PRESSURE,
        DISK_PRESSURE,
        PID_PRESSURE,
        NETWORK_UNAVAILABLE,
    }
)
_HEALTH_CONDITIONS: Final = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
_PRESSURE: Final = {
    "MemoryPressure": MEMORY_PRESSURE,
    "DiskPressure": DISK_PRESSURE,
    "PIDPressure": PID_PRESSURE,
    "NetworkUnavailable": NETWORK_UNAVAILABLE,
}


def _conditions(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((node.get("status") or {}).get("conditions") or ())


def ready_status(node: Mapping[str, Any]) -> str | None:
    """The Ready condition's status ("True", "False", "Unknown"), None if there is none."""
    for cond in _conditions(node):
        if cond.get("type") == "Ready":
            return str(cond.get("status"))
    return None


def heartbeat(node: Mapping[str, Any]) -> str | None:
    for cond in _conditions(node):
        if cond.get("type") == "Ready":
            value = cond.get("lastHeartbeatTime")
            return str(value) if value else None
    return None


def unknown_conditions(node: Mapping[str, Any], now: str) -> list[Obj] | None:
    """The node's conditions with the health ones set Unknown, or None if they already are."""
    out: list[Obj] = []
    seen: set[str] = set()
    changed = False
    for cond in _conditions(node):
        kind = str(cond.get("type"))
        updated = dict(cond)
        if kind in _HEALTH_CONDITIONS:
            seen.add(kind)
            if cond.get("status") != "Unknown":
                updated.update(
                    status="Unknown",
                    reason="NodeStatusUnknown",
                    message="Kubelet stopped posting node status.",
                    lastTransitionTime=now,
                )
                changed = True
        out.append(updated)
    for kind in _HEALTH_CONDITIONS:
        if kind not in seen:
            out.append(
                {
                    "type": kind,
                    "status": "Unknown",
                    "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status.",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            )
            changed = True
    return out if changed else None


def desired_taints(node: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(key, effect) of every managed taint the node's conditions and spec call for."""
    out: set[tuple[str, str]] = set()
    ready = ready_status(node)
    if ready is None:
        # Never reported (a Node object with no agent behind it yet): not schedulable until
        # it does, as upstream's admission taints every new Node. Not NoExecute: nothing to
        # evict before the startup grace period has passed.
        out.add((NOT_READY, "NoSchedule"))
    elif ready == "False":
        out |= {(NOT_READY, "NoExecute"), (NOT_READY, "NoSchedule")}
    elif ready == "Unknown":
        out |= {(UNREACHABLE, "NoExecute"), (UNREACHABLE, "NoSchedule")}
    for cond in _conditions(node):
        key = _PRESSURE.get(str(cond.get("type")))
        if key is not None and cond.get("status") == "True":
            out.add((key, "NoSchedule"))
    if (node.get("spec") or {}).get("unschedulable"):
        out.add((UNSCHEDULABLE, "NoSchedule"))
    return out


def merge_taints(
    taints: Sequence[Mapping[str, Any]], wanted: set[tuple[str, str]], now: str
) -> list[Obj] | None:
    """``taints`` with the managed ones made equal to ``wanted`` (new NoExecute taints get
    ``timeAdded``); None if nothing changes."""
    out: list[Obj] = []
    have: set[tuple[str, str]] = set()
    for taint in taints:
        pair = (str(taint.get("key")), str(taint.get("effect")))
        if pair[0] in MANAGED_TAINTS and pair not in wanted:
            continue
        have.add(pair)
        out.append(dict(taint))
    added = False
    for key, effect in sorted(wanted - have):
        new: Obj = {"key": key, "effect": effect}
        if effect == "NoExecute":
            new["timeAdded"] = now
        out.append(new)
        added = True
    if not added and len(out) == len(taints):
        return None
    return out


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Upstream ``Toleration.ToleratesTaint``."""
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def _time(text: Any) -> float | None:
    try:
        return parse_rfc3339(str(text)).timestamp() if text else None
    except ValueError:
        return None


def eviction_delay(
    tolerations: Iterable[Mapping[str, Any]],
    taints: Iterable[Mapping[str, Any]],
    now: float,
) -> float | None:
    """Seconds until a pod on a node with ``taints`` is to be deleted (0: now), or None.

    Upstream's rule: a ``NoExecute`` taint no toleration matches means now; otherwise the
    smallest ``tolerationSeconds`` among the tolerations used (none set: never), counted from
    the last time such a taint was added."""
    tolerations = list(tolerations)
    used: list[Mapping[str, Any]] = []
    added_at: float | None = None
    for taint in taints:
        if taint.get("effect") != "NoExecute":
            continue
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return 0.0
        used.extend(matching)
        added = _time(taint.get("timeAdded"))
        if added is not None:
            added_at = added if added_at is None else max(added_at, added)
    if not used:
        return None
    seconds = [int(t["tolerationSeconds"]) for t in used if t.get("tolerationSeconds") is not None]
    if not seconds:
        return None
    allowed = max(0, min(seconds))
    if allowed == 0:
        return 0.0
    if added_at is None:
        return float(allowed)
    return max(0.0, added_at + allowed - now)
