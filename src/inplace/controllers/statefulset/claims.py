"""A StatefulSet's PersistentVolumeClaims: one per ``volumeClaimTemplates`` entry and ordinal,
named ``<template>-<set>-<ordinal>``, and the owner references that carry the set's
``persistentVolumeClaimRetentionPolicy`` (upstream's ``stateful_set_utils.go``).

The retention policy is enforced by the garbage collector, through owner references:

====================  ====================  ==========================================
``whenScaled``        ``whenDeleted``       the claim of an ordinal is owned by
====================  ====================  ==========================================
Retain                Retain                nobody
Retain                Delete                the set
Delete                Retain                its pod, once the ordinal is scaled away
Delete                Delete                the set; its pod instead once scaled away
====================  ====================  ==========================================

A claim referencing a set or pod of the same name but another uid (one that was deleted and
made again) is left alone, as is one another controller controls (its references to the set
and pod are removed, never added). Everything here reads plain dicts and never mutates them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = [
    "DELETE",
    "RETAIN",
    "claim_name",
    "claim_owners_up_to_date",
    "claims_for_ordinal",
    "owner_reference",
    "retention_policy",
    "stale_claim_for_new_pod",
    "updated_claim_owners",
]

Obj = dict[str, Any]

RETAIN: Final = "Retain"
DELETE: Final = "Delete"

_SET_API: Final = ("apps/v1", "StatefulSet")
_POD_API: Final = ("v1", "Pod")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def _uid(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or "")


def claim_name(set_name: str, template: Mapping[str, Any], ordinal: int) -> str:
    """Upstream's ``getPersistentVolumeClaimName``."""
    return f"{_name(template)}-{set_name}-{ordinal}"


def claims_for_ordinal(sts: Mapping[str, Any], ordinal: int) -> list[Obj]:
    """The claims the pod of ``ordinal`` mounts, as they are created: each template's
    metadata and spec under the ordinal's name, labelled with the selector's
    ``matchLabels`` (upstream's ``getPersistentVolumeClaims``), without owner references."""
    spec = sts.get("spec") or {}
    match_labels = dict(((spec.get("selector") or {}).get("matchLabels")) or {})
    set_meta = _meta(sts)
    out: list[Obj] = []
    for template in spec.get("volumeClaimTemplates") or ():
        meta = copy.deepcopy(dict(_meta(template)))
        for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "ownerReferences"):
            meta.pop(key, None)
        meta["name"] = claim_name(str(set_meta.get("name") or ""), template, ordinal)
        meta["namespace"] = set_meta.get("namespace") or "default"
        meta["labels"] = {**(meta.get("labels") or {}), **match_labels}
        if not meta["labels"]:
            del meta["labels"]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": meta,
                "spec": copy.deepcopy(template.get("spec") or {}),
            }
        )
    return out


def retention_policy(sts: Mapping[str, Any]) -> tuple[str, str]:
    """``(whenDeleted, whenScaled)``, Retain where unset."""
    policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get("whenDeleted") or RETAIN), str(policy.get("whenScaled") or RETAIN)


def owner_reference(owner: Mapping[str, Any], api: tuple[str, str]) -> Obj:
    """``metav1.NewControllerRef``: a controlling, deletion-blocking reference."""
    return {
        "apiVersion": api[0],
        "kind": api[1],
        "name": _name(owner),
        "uid": _uid(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _refs(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(_meta(claim).get("ownerReferences") or ())


def _matches_ref(ref: Mapping[str, Any], obj: Mapping[str, Any], api: tuple[str, str]) -> bool:
    """The reference names ``obj`` by kind and name (whatever its uid)."""
    return (ref.get("apiVersion"), ref.get("kind")) == api and ref.get("name") == _name(obj)


def _has_ref(claim: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = _uid(owner)
    return bool(uid) and any(ref.get("uid") == uid for ref in _refs(claim))


def _has_stale_ref(claim: Mapping[str, Any], obj: Mapping[str, Any], api: tuple[str, str]) -> bool:
    for ref in _refs(claim):
        if _matches_ref(ref, obj, api):
            return ref.get("uid") != _uid(obj)
    return False


def _has_unexpected_controller(
    claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]
) -> bool:
    if retention_policy(sts) == (RETAIN, RETAIN):
        return False  # under Retain, another controller of the claims is no concern
    for ref in _refs(claim):
        for owner, api in ((sts, _SET_API), (pod, _POD_API)):
            if _matches_ref(ref, owner, api):
                if ref.get("uid") != _uid(owner):
                    return True  # a stale reference: leave the claim to the collector
                break
        else:
            if ref.get("controller"):
                return True
    return False


def _has_non_controller_owner(
    claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]
) -> bool:
    uids = {_uid(sts), _uid(pod)} - {""}
    return any(ref.get("uid") in uids and not ref.get("controller") for ref in _refs(claim))


def claim_owners_up_to_date(
    claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any], scaled_down: bool
) -> bool:
    """Whether ``claim``'s owner references carry the set's retention policy for ``pod``
    (upstream's ``isClaimOwnerUpToDate``); ``scaled_down``: the pod's ordinal is out of the
    set's range."""
    if _has_stale_ref(claim, sts, _SET_API) or _has_stale_ref(claim, pod, _POD_API):
        return True
    if _has_unexpected_controller(claim, sts, pod):
        return not (_has_ref(claim, sts) or _has_ref(claim, pod))
    if _has_non_controller_owner(claim, sts, pod):
        return False
    when_deleted, when_scaled = retention_policy(sts)
    set_ref, pod_ref = _has_ref(claim, sts), _has_ref(claim, pod)
    if when_scaled == DELETE and when_deleted == DELETE:
        return set_ref != scaled_down and pod_ref == scaled_down
    if when_scaled == DELETE:
        return not set_ref and pod_ref == scaled_down
    if when_deleted == DELETE:
        return set_ref and not pod_ref
    return not set_ref and not pod_ref


def updated_claim_owners(
    claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any], scaled_down: bool
) -> list[Obj]:
    """``claim``'s owner references as the retention policy wants them (upstream's
    ``updateClaimOwnerRefForSetAndPod``): references to the set and the pod scrubbed, then
    the set's and/or the pod's added as controllers."""
    unexpected = _has_unexpected_controller(claim, sts, pod)
    refs = [
        dict(ref)
        for ref in _refs(claim)
        if not (_matches_ref(ref, sts, _SET_API) or _matches_ref(ref, pod, _POD_API))
    ]
    if unexpected:
        return refs
    when_deleted, when_scaled = retention_policy(sts)
    wanted: list[tuple[Mapping[str, Any], tuple[str, str]]] = []
    if when_deleted == DELETE and not (when_scaled == DELETE and scaled_down):
        wanted.append((sts, _SET_API))
    if when_scaled == DELETE and scaled_down:
        wanted.append((pod, _POD_API))
    for owner, api in wanted:
        if not any(ref.get("uid") == _uid(owner) for ref in refs):
            refs.append(owner_reference(owner, api))
    return refs


def stale_claim_for_new_pod(
    sts: Mapping[str, Any], ordinal_claims: Iterable[Mapping[str, Any]], pod_name: str
) -> str | None:
    """The claim that must go before the pod ``pod_name`` is made again, or None (upstream's
    ``PodClaimIsStale``): under ``whenScaled: Delete``, a claim still owned by the pod's
    previous incarnation is about to be collected; reusing it would lose it under the pod."""
    if retention_policy(sts)[1] == RETAIN:
        return None
    new_pod = {"metadata": {"name": pod_name}}
    for claim in ordinal_claims:
        if _has_stale_ref(claim, new_pod, _POD_API):
            return _name(claim)
    return None
