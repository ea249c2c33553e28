"""The garbage collector's decisions (upstream ``pkg/controller/garbagecollector``), pure.

An object's owner references are classified by what the owners are now (:class:`Owner`):
*solid* (exists, not deleting its dependents), *dangling* (gone, or a different object of the
same name), or *waiting* (being deleted in the foreground: ``foregroundDeletion``). Then
(:func:`decide`):

* a solid owner keeps the object; dangling and waiting references are removed from it, so a
  foreground owner is not blocked by an object that has another owner;
* no solid owner, a waiting one, and dependents of its own: the object is deleted in the
  foreground too, so the whole chain waits for the leaves;
* otherwise the object is garbage and is deleted with the propagation its own finalizers ask
  for (``orphan``, ``foregroundDeletion``, else background).

An owner being deleted in the foreground loses its ``foregroundDeletion`` finalizer once no
dependent that blocks it (``blockOwnerDeletion: true``) exists any more
(:func:`blocking_dependents`); one being deleted with ``orphan`` first has its reference
removed from every dependent.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "FOREGROUND",
    "ORPHAN",
    "Action",
    "Decision",
    "Owner",
    "blocking_dependents",
    "decide",
    "deleting_with",
]

FOREGROUND: Final = "foregroundDeletion"
ORPHAN: Final = "orphan"


class Owner(enum.Enum):
    SOLID = "solid"
    DANGLING = "dangling"
    WAITING = "waiting"
    UNKNOWN = "unknown"
    """Its kind cannot be resolved: treated as solid (never delete what we cannot check)."""


class Action(enum.Enum):
    NOTHING = "nothing"
    REMOVE_REFERENCES = "remove-references"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    propagation: str = ""
    """``Background``, ``Foreground`` or ``Orphan`` for DELETE."""
    remove_uids: tuple[str, ...] = ()
    """Owner uids to drop from the object's references (REMOVE_REFERENCES)."""


def deleting_with(obj: Mapping[str, Any], finalizer: str) -> bool:
    meta = obj.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or ())


def decide(
    obj: Mapping[str, Any], owners: Mapping[str, Owner], *, has_dependents: bool
) -> Decision:
    """What to do with ``obj`` given its owners' states (by owner uid)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    if not refs:
        return Decision(Action.NOTHING)
    solid, dangling, waiting = [], [], []
    for ref in refs:
        state = owners.get(str(ref.get("uid")), Owner.UNKNOWN)
        if state in (Owner.SOLID, Owner.UNKNOWN):
            solid.append(ref)
        elif state is Owner.DANGLING:
            dangling.append(ref)
        else:
            waiting.append(ref)
    if solid:
        if not dangling and not waiting:
            return Decision(Action.NOTHING)
        uids = tuple(str(r.get("uid")) for r in [*dangling, *waiting])
        return Decision(Action.REMOVE_REFERENCES, remove_uids=uids)
    if waiting and has_dependents:
        return Decision(Action.DELETE, "Foreground")
    if deleting_with(obj, ORPHAN) or ORPHAN in (
        (obj.get("metadata") or {}).get("finalizers") or ()
    ):
        return Decision(Action.DELETE, "Orphan")
    if FOREGROUND in ((obj.get("metadata") or {}).get("finalizers") or ()):
        return Decision(Action.DELETE, "Foreground")
    return Decision(Action.DELETE, "Background")


def blocking_dependents(
    owner_uid: str, dependents: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The dependents whose reference to ``owner_uid`` has ``blockOwnerDeletion: true``."""
    out = []
    for dep in dependents:
        for ref in (dep.get("metadata") or {}).get("ownerReferences") or ():
            if ref.get("uid") == owner_uid and ref.get("blockOwnerDeletion"):
                out.append(dep)
                break
    return out
