"""Which pods the pod garbage collector force-deletes, pure (upstream ``pkg/controller/podgc``).

A pod whose node will never confirm its termination would otherwise stay ``Terminating`` (or
``Running``) for ever: nothing else deletes it. Upstream's four passes, each a function here:

* :func:`orphaned` — pods bound to a node that does not exist. A name missing from the node
  cache is first *quarantined* (:class:`Quarantine`, 40 s) so that a node being registered, or
  a cache a step behind, does not cost a pod; only then is the node asked for directly.
* :func:`unscheduled_terminating` — pods being deleted that were never bound to a node.
* :func:`out_of_service_terminating` — pods being deleted on a not-ready node that carries the
  ``node.kubernetes.io/out-of-service`` taint (an operator's word that the node is down).
* :func:`terminated_beyond` — finished pods beyond ``--terminated-pod-gc-threshold``, evicted
  ones first, then the oldest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Any, Final

from inplace.api.timestamps import parse_rfc3339

__all__ = [
    "CHECK_PERIOD",
    "OUT_OF_SERVICE",
    "QUARANTINE",
    "TERMINATED_THRESHOLD",
    "Quarantine",
    "orphaned",
    "out_of_service_terminating",
    "terminated_beyond",
    "unscheduled_terminating",
]

Obj = Mapping[str, Any]

CHECK_PERIOD: Final = 20.0
"""Upstream's ``gcCheckPeriod``: seconds between passes."""
QUARANTINE: Final = 40.0
"""Upstream's ``quarantineTime``: how long a node name must stay missing from the cache
before the node is asked for directly."""
TERMINATED_THRESHOLD: Final = 12500
"""Upstream's default ``--terminated-pod-gc-threshold`` (0 turns that pass off)."""
OUT_OF_SERVICE: Final = "node.kubernetes.io/out-of-service"


def _node_name(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _terminated(pod: Obj) -> bool:
    """Upstream ``isPodTerminated``: any phase but Pending, Running and Unknown."""
    return (pod.get("status") or {}).get("phase") not in ("Pending", "Running", "Unknown")


class Quarantine:
    """Node names missing from the cache, with when each was first seen missing (upstream's
    delaying queue: re-adding a waiting name keeps its earlier time)."""

    def __init__(self, period: float = QUARANTINE) -> None:
        self.period = period
        self._since: dict[str, float] = {}

    def due(self, missing: Set[str], now: float) -> set[str]:
        """Record ``missing`` as seen at ``now`` (forgetting names no longer missing); the
        names missing for the whole period, to be checked against the API and then
        :meth:`release`\\ d."""
        for name in list(self._since):
            if name not in missing:
                del self._since[name]
        for name in missing:
            self._since.setdefault(name, now)
        return {name for name, since in self._since.items() if now - since >= self.period}

    def release(self, name: str) -> None:
        """``name`` was checked: if it is still missing next pass, it waits a period again."""
        self._since.pop(name, None)


def missing_nodes(pods: Iterable[Obj], nodes: Set[str]) -> set[str]:
    """Names of the nodes pods are bound to that the cache does not hold."""
    return {name for pod in pods if (name := _node_name(pod)) and name not in nodes}


def orphaned(pods: Iterable[Obj], deleted_nodes: Set[str]) -> list[Obj]:
    """The pods bound to a node confirmed gone."""
    return [pod for pod in pods if _node_name(pod) in deleted_nodes]


def unscheduled_terminating(pods: Iterable[Obj]) -> list[Obj]:
    """Upstream ``gcUnscheduledTerminating``: being deleted, and bound to no node."""
    return [pod for pod in pods if _terminating(pod) and not _node_name(pod)]


def _ready(node: Obj) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def out_of_service_terminating(pods: Iterable[Obj], nodes: Mapping[str, Obj]) -> list[Obj]:
    """Upstream ``gcTerminating``: being deleted, on a node that is not Ready and carries the
    out-of-service taint (any effect)."""
    out = []
    for pod in pods:
        node = nodes.get(_node_name(pod))
        if not _terminating(pod) or node is None or _ready(node):
            continue
        if any(
            t.get("key") == OUT_OF_SERVICE for t in (node.get("spec") or {}).get("taints") or ()
        ):
            out.append(pod)
    return out


def _evicted(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


def _created(pod: Obj) -> float:
    stamp = (pod.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_rfc3339(str(stamp)).timestamp() if stamp else 0.0
    except ValueError:
        return 0.0


def terminated_beyond(pods: Iterable[Obj], threshold: int) -> list[Obj]:
    """Upstream ``gcTerminated``: of the finished pods, as many as exceed ``threshold``,
    evicted ones first, then by creation time, then by name (0: none)."""
    if threshold <= 0:
        return []
    finished = [pod for pod in pods if _terminated(pod)]
    excess = len(finished) - threshold
    if excess <= 0:
        return []
    finished.sort(
        key=lambda p: (not _evicted(p), _created(p), str((p.get("metadata") or {}).get("name")))
    )
    return finished[:excess]
