"""ControllerRevisions: the snapshots of a StatefulSet's or DaemonSet's pod template that
rollouts, ``kubectl rollout history`` and ``kubectl rollout undo`` read (upstream's
``pkg/controller/history``).

A revision's ``data`` is the patch that restores its template,
``{"spec": {"template": {..., "$patch": "replace"}}}`` (upstream's ``getPatch``): kubectl's
``rollout undo`` sends it back as a strategic merge patch. Revisions are named
``<parent>-<hash>`` and labelled with the hash (``controller-revision-hash``); a name taken by
different data bumps the parent's ``status.collisionCount`` until the name is free, as
upstream's ``CreateControllerRevision`` does.

The pure functions (hashing, building, sorting, equality, which history to drop) are used by
both workload controllers; :func:`create_revision` and :func:`renumber_revision` are the two
writes that need the API server's answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import orjson

from inplace.api.timestamps import parse_rfc3339
from inplace.api.validation.equality import semantic
from inplace.client import CONTROLLERREVISIONS, APIAlreadyExistsError, Client

from .pods import controller_ref

__all__ = [
    "REVISION_HASH_LABEL",
    "create_revision",
    "equal_revision",
    "find_equal",
    "hash_revision",
    "history_to_delete",
    "new_revision",
    "next_revision_number",
    "renumber_revision",
    "revision_data",
    "revision_name",
    "sort_revisions",
    "template_of",
]

Obj = dict[str, Any]

REVISION_HASH_LABEL: Final = "controller-revision-hash"
"""On a revision: its hash. On a pod: its revision's name (StatefulSet) or hash (DaemonSet)."""

_SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_MAX_PREFIX: Final = 223
"""Upstream's ``ControllerRevisionName`` keeps a name within 253 characters."""


def revision_data(template: Mapping[str, Any]) -> Obj:
    """The revision data that restores ``template`` (upstream's ``getPatch``)."""
    return {"spec": {"template": {**template, "$patch": "replace"}}}


def template_of(revision: Mapping[str, Any]) -> Obj:
    """The pod template a revision restores (its data without the ``$patch`` directive)."""
    data = revision.get("data") or {}
    template = dict(((data.get("spec") or {}).get("template")) or {})
    template.pop("$patch", None)
    return template


def hash_revision(data: Mapping[str, Any], collision_count: int | None = None) -> str:
    """Upstream's ``HashControllerRevision``: FNV-1 (32-bit) of the data, then of the
    collision count's decimal digits, mapped through ``rand.SafeEncodeString``'s alphabet.
    The data is hashed as canonical JSON (sorted keys, semantic values), so equal templates
    hash alike however they were written."""
    payload = orjson.dumps(semantic(dict(data)), option=orjson.OPT_SORT_KEYS, default=str)
    if collision_count is not None:
        payload += str(collision_count).encode()
    value = 0x811C9DC5
    for byte in payload:
        value = (value * 0x01000193) & 0xFFFFFFFF
        value ^= byte
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in str(value))


def revision_name(parent_name: str, hash_: str) -> str:
    return f"{parent_name[:_MAX_PREFIX]}-{hash_}"


def new_revision(
    parent: Mapping[str, Any],
    template: Mapping[str, Any],
    number: int,
    collision_count: int | None = None,
    *,
    hash_: str | None = None,
) -> Obj:
    """A ControllerRevision of ``parent`` (which carries ``apiVersion`` and ``kind``) for
    ``template`` as revision ``number``: labelled with the template's labels and the hash,
    annotated with the parent's annotations, controlled by the parent (upstream's
    ``NewControllerRevision``). ``hash_`` overrides the data's hash (a DaemonSet names its
    revisions by its pod template hash)."""
    meta = parent.get("metadata") or {}
    data = revision_data(template)
    hash_ = hash_ or hash_revision(data, collision_count)
    labels = dict(((template.get("metadata") or {}).get("labels")) or {})
    labels[REVISION_HASH_LABEL] = hash_
    revision_meta: Obj = {
        "name": revision_name(str(meta.get("name") or ""), hash_),
        "namespace": meta.get("namespace"),
        "labels": labels,
        "ownerReferences": [controller_ref(parent)],
    }
    if meta.get("annotations"):
        revision_meta["annotations"] = dict(meta["annotations"])
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": revision_meta,
        "data": data,
        "revision": number,
    }


def _hash_label(revision: Mapping[str, Any]) -> str | None:
    return ((revision.get("metadata") or {}).get("labels") or {}).get(REVISION_HASH_LABEL)


def equal_revision(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Upstream's ``EqualRevision``: the same hash label and the same data (compared
    semantically: absent, null and zero alike, quantities by value)."""
    if _hash_label(a) != _hash_label(b):
        return False
    return bool(semantic(a.get("data") or {}) == semantic(b.get("data") or {}))


def find_equal(revisions: Iterable[Obj], needle: Mapping[str, Any]) -> list[Obj]:
    """The revisions equal to ``needle``, in the order given."""
    return [r for r in revisions if equal_revision(r, needle)]


def _created(obj: Mapping[str, Any]) -> float:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_rfc3339(stamp).timestamp() if stamp else 0.0
    except ValueError:
        return 0.0


def sort_revisions(revisions: Iterable[Obj]) -> list[Obj]:
    """Oldest first: by revision number, then creation time, then name (upstream's
    ``SortControllerRevisions``)."""
    return sorted(
        revisions,
        key=lambda r: (
            int(r.get("revision") or 0),
            _created(r),
            str((r.get("metadata") or {}).get("name") or ""),
        ),
    )


def next_revision_number(revisions: Sequence[Mapping[str, Any]]) -> int:
    """One more than the highest revision number (1 for the first)."""
    return max((int(r.get("revision") or 0) for r in revisions), default=0) + 1


def history_to_delete(revisions: Iterable[Obj], live: Iterable[str], limit: int) -> list[Obj]:
    """The revisions to delete to keep at most ``limit`` that no pod or status names:
    the oldest first (upstream's ``truncateHistory``). ``live`` are revision names in use."""
    in_use = set(live)
    history = [
        r for r in sort_revisions(revisions) if (r.get("metadata") or {}).get("name") not in in_use
    ]
    excess = len(history) - max(limit, 0)
    return history[:excess] if excess > 0 else []


async def create_revision(
    client: Client, parent: Mapping[str, Any], revision: Obj, collision_count: int
) -> tuple[Obj, int]:
    """Create ``revision`` under a name free for it: a name taken by equal data is that
    revision (returned); taken by other data, the collision count is bumped and the name
    recomputed (upstream's ``CreateControllerRevision``). Returns the stored revision and
    the collision count to record in the parent's status."""
    namespace = (parent.get("metadata") or {}).get("namespace")
    parent_name = str((parent.get("metadata") or {}).get("name") or "")
    body = dict(revision)
    while True:
        name = revision_name(parent_name, hash_revision(revision["data"], collision_count))
        body["metadata"] = {**revision["metadata"], "name": name}
        try:
            created = await client.create(CONTROLLERREVISIONS, body, namespace=namespace)
            return created, collision_count
        except APIAlreadyExistsError:
            existing = await client.get(CONTROLLERREVISIONS, name, namespace=namespace)
            if semantic(existing.get("data") or {}) == semantic(body["data"]):
                return existing, collision_count
            collision_count += 1


async def renumber_revision(client: Client, revision: Mapping[str, Any], number: int) -> Obj:
    """Give an existing revision a new number (a rollback to an older template makes it
    the newest, as upstream's ``UpdateControllerRevision``)."""
    if int(revision.get("revision") or 0) == number:
        return dict(revision)
    meta = revision.get("metadata") or {}
    body = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "revision": number}
    return await client.patch(
        CONTROLLERREVISIONS, str(meta.get("name")), body, namespace=meta.get("namespace")
    )
