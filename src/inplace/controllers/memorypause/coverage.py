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
from typing import Any

from inplace.api import vpa_targets
from inplace.api.vpa_policy import INITIAL, OFF, update_mode
from inplace.api.vpa_targets import WELL_KNOWN

__all__ = ["WELL_KNOWN", "OwnerLookup", "controlling_vpa", "covering_vpa", "top_controller"]

OwnerLookup = Callable[[str, str, str], Mapping[str, Any] | None]
"""(kind, namespace, name) → the object from a cache, or None when unknown."""


def top_controller(pod: Mapping[str, Any], lookup: OwnerLookup) -> tuple[str, str] | None:
    """``(kind, name)`` of the pod's top-most well-known controller (its own controller when
    that is not well-known, or when an owner is not in the cache); None without one. The
    VPA's own rule (:func:`inplace.api.vpa_targets.top_controller`), over this lookup."""
    return vpa_targets.top_controller(pod, lambda _group, kind, name, ns: lookup(kind, ns, name))


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
