"""Which pods a vertical pod autoscaler answers for, so the memory-pause responder stays away.

The contract, relied on by the responder and by the VPA updater alike: a pod paused at its
memory limit is answered by the VPA :func:`covering_vpa` returns, and by the responder
(``inplace.dev/memory-on-pause``) only when it returns None. The rule is upstream's
(``GetControllingVPAForPod``): walk the pod's controller owner references up through the
well-known workload kinds to the top-most one; the VPAs of the pod's namespace whose
``targetRef`` names that kind and name control it, the oldest first (then by name). It
answers a pause only when its ``updateMode`` lets it touch running pods: not ``Off``, not
``Initial``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from ..vpa.policy import INITIAL, OFF, update_mode

__all__ = ["WELL_KNOWN", "OwnerLookup", "controlling_vpa", "covering_vpa", "top_controller"]

WELL_KNOWN: Final = frozenset(
    {
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "CronJob",
        "ReplicationController",
    }
)
"""Upstream's well-known controller kinds (its controller fetcher walks through these)."""

OwnerLookup = Callable[[str, str, str], Mapping[str, Any] | None]
"""(kind, namespace, name) → the object from a cache, or None when unknown."""


def _controller_ref(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("kind", "")), str(ref.get("name", ""))
    return None


def top_controller(pod: Mapping[str, Any], lookup: OwnerLookup) -> tuple[str, str] | None:
    """``(kind, name)`` of the pod's top-most well-known controller (its own controller when
    that is not well-known, or when an owner is not in the cache); None without one."""
    ref = _controller_ref(pod)
    if ref is None:
        return None
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    kind, name = ref
    seen = {ref}
    while kind in WELL_KNOWN:
        owner = lookup(kind, namespace, name)
        parent = _controller_ref(owner) if owner is not None else None
        if parent is None or parent[0] not in WELL_KNOWN or parent in seen:
            break
        seen.add(parent)
        kind, name = parent
    return kind, name


def controlling_vpa(
    pod: Mapping[str, Any], vpas: Iterable[Mapping[str, Any]], lookup: OwnerLookup
) -> Mapping[str, Any] | None:
    """The VPA that controls ``pod`` (upstream's choice), whatever its update mode."""
    top = top_controller(pod, lookup)
    if top is None:
        return None
    namespace = (pod.get("metadata") or {}).get("namespace")
    best: Mapping[str, Any] | None = None
    for vpa in vpas:
        meta = vpa.get("metadata") or {}
        target = (vpa.get("spec") or {}).get("targetRef") or {}
        if meta.get("namespace") != namespace or (target.get("kind"), target.get("name")) != top:
            continue
        if best is None or _order(vpa) < _order(best):
            best = vpa
    return best


def _order(vpa: Mapping[str, Any]) -> tuple[str, str]:
    meta = vpa.get("metadata") or {}
    return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


def covering_vpa(
    pod: Mapping[str, Any], vpas: Iterable[Mapping[str, Any]], lookup: OwnerLookup
) -> str | None:
    """The name of the VPA that answers ``pod``'s pauses, or None (the responder does)."""
    vpa = controlling_vpa(pod, vpas, lookup)
    if vpa is None or update_mode(vpa) in (OFF, INITIAL):
        return None
    return str((vpa.get("metadata") or {}).get("name") or "")
