"""What a DELETE decides before it writes: the grace period, the finalizers the request and
the kind add, the object marked for a graceful deletion, a namespace marked Terminating.

Pure: `REST.delete` reads the object, asks these, and does the one compare-and-swap write.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

from inplace.api.timestamps import rfc3339
from inplace.apiserver.errors import StatusError
from inplace.registry.kinds import Kind
from inplace.registry.strategy import Rejected, copy_json

#: Namespaces upstream's namespace lifecycle admission never lets go.
PROTECTED_NAMESPACES: Final = frozenset(
    {"default", "kube-system", "kube-public", "kube-node-lease"}
)


def grace_period(kind: Kind, obj: dict[str, Any], requested: Any) -> int:
    """The kind's strategy decides (pods bound to a node get one); without one, 0."""
    if kind.strategy.grace_period is None:
        return 0
    try:
        return kind.strategy.grace_period(obj, requested)
    except Rejected as exc:
        raise StatusError(exc.code, exc.message) from exc


def deletion_finalizers(
    meta: Mapping[str, Any], options: Mapping[str, Any], added: str | None
) -> list[str]:
    """The object's finalizers plus those its deletion asks for: ``orphan`` or
    ``foregroundDeletion`` from the propagation policy (``orphanDependents: true`` is the
    old spelling of Orphan), and the one the kind adds on every delete (``added``)."""
    finalizers = list(meta.get("finalizers") or [])
    policy = options.get("propagationPolicy")
    if options.get("orphanDependents") is True:
        policy = "Orphan"
    if policy == "Orphan" and "orphan" not in finalizers:
        finalizers.append("orphan")
    elif policy == "Foreground" and "foregroundDeletion" not in finalizers:
        finalizers.append("foregroundDeletion")
    if added is not None and added not in finalizers:
        finalizers.append(added)
    return finalizers


def marked_for_deletion(
    obj: Mapping[str, Any], grace: int, finalizers: list[str], now: datetime.datetime
) -> dict[str, Any] | None:
    """A copy of ``obj`` with its deletion timestamp ``grace`` seconds from ``now``; None when
    it is already marked with a grace period no longer than this one (a second delete only
    ever shortens it, as upstream's)."""
    meta = obj.get("metadata", {})
    if meta.get("deletionTimestamp"):
        current = meta.get("deletionGracePeriodSeconds")
        if current is None or grace >= current:
            return None
    updated: dict[str, Any] = copy_json(obj)
    umeta = updated["metadata"]
    umeta["deletionTimestamp"] = rfc3339(now + datetime.timedelta(seconds=grace))
    umeta["deletionGracePeriodSeconds"] = grace
    if finalizers:
        umeta["finalizers"] = finalizers
    return updated


def terminating_namespace(name: str, obj: Mapping[str, Any], now: str) -> dict[str, Any] | None:
    """A copy of the namespace marked Terminating at ``now``; None when it already is.
    Refuses (403) the namespaces the cluster cannot do without."""
    if name in PROTECTED_NAMESPACES:
        raise StatusError(
            403, f'namespaces "{name}" is forbidden: this namespace may not be deleted'
        )
    if obj.get("metadata", {}).get("deletionTimestamp"):
        return None
    updated: dict[str, Any] = copy_json(obj)
    meta = updated["metadata"]
    meta["deletionTimestamp"] = now
    meta["deletionGracePeriodSeconds"] = 0
    updated.setdefault("status", {})["phase"] = "Terminating"
    return updated
