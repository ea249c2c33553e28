"""Which pods a VerticalPodAutoscaler controls: its targetRef, the target's selector, and the
controlling VPA of a pod (upstream's ``target`` and ``controller_fetcher`` packages).

Shared by the recommender and updater (controller manager) and by the API server's pod
admission, so all three agree on the pods of a VPA. The rule, as upstream's:

* the targetRef must name an object this cluster serves whose kind has a label selector:
  a Deployment, ReplicaSet, StatefulSet, DaemonSet or Job (``spec.selector``), or a CronJob
  (its job template's pod labels, as upstream's fetcher reads them), and must be the
  top-most controller (a ReplicaSet owned by a Deployment is not a valid target); otherwise
  the VPA gets ``ConfigUnsupported`` with upstream's message (``Cannot read targetRef``,
  ``Unhandled targetRef``, ``... should point to a topmost well-known or scalable
  controller``). Other kinds (ReplicationController, which this cluster does not serve) are
  reported the same way. Upstream reads any other kind's selector from its ``scale``
  subresource; every kind this cluster serves with one is in the list above;
* a pod is controlled by a VPA when it is in the VPA's namespace, its labels match the
  target's selector, and its top-most well-known controller (owner references walked up)
  is the target; when several VPAs control one pod, the oldest wins (then by name), as
  upstream's ``GetControllingVPAForPod`` decides (:func:`controlling_vpa`).

This is the one rule of coverage: the recommender (whose history a pod feeds), the updater
(which pods a VPA updates), the API server's admission, the memory-pause responder and the
dashboard all call :func:`controlling_vpa`. A pod paused at its memory limit is answered by
exactly one of the VPA updater and the memory-pause responder: by the updater when
:func:`answering_vpa` names a VPA (the controlling VPA's mode lets it touch running pods:
not ``Off`` nor ``Initial``), by the responder when it returns None. A VPA whose target
cannot be read controls no pod, so it never keeps the responder away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from inplace.api.objects import get_path
from inplace.api.selectors import LabelSelector, SelectorError
from inplace.api.vpa_policy import updates_running_pods

__all__ = [
    "SELECTOR_KINDS",
    "WELL_KNOWN",
    "Lookup",
    "Target",
    "answering_vpa",
    "controlling_vpa",
    "pod_matches",
    "resolve_target",
    "top_controller",
]

Lookup = Callable[[str, str, str, str], Mapping[str, Any] | None]
"""``(group, kind, name, namespace)`` → the object from a cache, or None when unknown."""

SELECTOR_KINDS: Final[Mapping[str, str]] = {
    "Deployment": "apps",
    "ReplicaSet": "apps",
    "StatefulSet": "apps",
    "DaemonSet": "apps",
    "Job": "batch",
    "CronJob": "batch",
}
"""The target kinds this cluster serves and reads a selector from, with their API group."""

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
"""Upstream's well-known controller kinds (its controller fetcher walks owners through these)."""

_GROUPS: Final[Mapping[str, str]] = {**SELECTOR_KINDS, "ReplicationController": ""}


@dataclass(frozen=True)
class Target:
    """A VPA's target as resolved: its selector, or why it cannot be used."""

    selector: LabelSelector | None
    unsupported: str | None = None
    """The ``ConfigUnsupported`` message (None: the target is fine)."""
    kind: str = ""
    name: str = ""


def _controller_ref(obj: Mapping[str, Any] | None) -> tuple[str, str] | None:
    for ref in get_path(obj, "metadata", "ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("kind", "")), str(ref.get("name", ""))
    return None


def _selector_of(kind: str, obj: Mapping[str, Any]) -> Any:
    """A target's selector: ``spec.selector``, or for a CronJob the labels of its job
    template's pods (upstream's ``vpaTargetSelectorFetcher``)."""
    if kind == "CronJob":
        labels = get_path(obj, "spec", "jobTemplate", "spec", "template", "metadata", "labels")
        return {"matchLabels": dict(labels)} if isinstance(labels, Mapping) and labels else None
    return get_path(obj, "spec", "selector")


def resolve_target(vpa: Mapping[str, Any], lookup: Lookup) -> Target:
    """The selector of ``vpa``'s target, or upstream's ``ConfigUnsupported`` message."""
    namespace = str(get_path(vpa, "metadata", "namespace") or "")
    ref = get_path(vpa, "spec", "targetRef")
    if not isinstance(ref, Mapping):
        return Target(None, "Cannot read targetRef")
    kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    api_version = str(ref.get("apiVersion") or "")
    group = SELECTOR_KINDS.get(kind)
    if group is None:
        return Target(
            None,
            f"Cannot read targetRef. Reason: Unhandled targetRef {api_version} / {kind} / "
            f"{name}, last error {kind} is not served by this cluster and has no scale "
            "subresource with a selector",
            kind,
            name,
        )
    obj = lookup(group, kind, name, namespace)
    if obj is None:
        return Target(
            None, f"Cannot read targetRef. Reason: {kind} {namespace}/{name} does not exist"
        )
    raw = _selector_of(kind, obj)
    if not isinstance(raw, Mapping) or not raw:
        return Target(None, "Cannot read targetRef", kind, name)
    try:
        selector = LabelSelector.from_dict(raw)
    except SelectorError as exc:
        return Target(None, f"Cannot read targetRef. Reason: {exc}", kind, name)
    parent = _controller_ref(obj)
    if parent is not None and parent[0] in WELL_KNOWN:
        return Target(
            None,
            f"The target {api_version}.{kind}/{name} has a parent controller but it should "
            "point to a topmost well-known or scalable controller",
            kind,
            name,
        )
    return Target(selector, None, kind, name)


def top_controller(pod: Mapping[str, Any], lookup: Lookup) -> tuple[str, str] | None:
    """``(kind, name)`` of the pod's top-most well-known controller (its own controller when
    that is not well-known, or when an owner is not in the cache); None without one."""
    ref = _controller_ref(pod)
    if ref is None:
        return None
    namespace = str(get_path(pod, "metadata", "namespace") or "")
    kind, name = ref
    seen = {ref}
    while kind in WELL_KNOWN:
        owner = lookup(_GROUPS[kind], kind, name, namespace)
        parent = _controller_ref(owner) if owner is not None else None
        # A parent of another kind is not followed: nothing here can tell whether it has a
        # scale subresource (upstream follows only those), so the last well-known one stands.
        if parent is None or parent[0] not in WELL_KNOWN or parent in seen:
            break
        seen.add(parent)
        kind, name = parent
    return kind, name


def pod_matches(
    pod: Mapping[str, Any], vpa: Mapping[str, Any], target: Target, lookup: Lookup
) -> bool:
    """``pod`` belongs to ``vpa`` (whose target resolved to ``target``)."""
    if target.selector is None:
        return False
    if get_path(pod, "metadata", "namespace") != get_path(vpa, "metadata", "namespace"):
        return False
    labels = get_path(pod, "metadata", "labels")
    if not target.selector.matches(labels if isinstance(labels, Mapping) else {}):
        return False
    return top_controller(pod, lookup) == (target.kind, target.name)


def _order(vpa: Mapping[str, Any]) -> tuple[str, str]:
    return (
        str(get_path(vpa, "metadata", "creationTimestamp") or ""),
        str(get_path(vpa, "metadata", "name") or ""),
    )


def controlling_vpa(
    pod: Mapping[str, Any],
    vpas: Iterable[Mapping[str, Any]],
    lookup: Lookup,
    targets: Mapping[tuple[str, str], Target] | None = None,
) -> Mapping[str, Any] | None:
    """The VPA that controls ``pod`` (the oldest of those that match), whatever its mode.
    ``targets`` caches resolved targets by ``(namespace, name)`` of the VPA."""
    namespace = get_path(pod, "metadata", "namespace")
    best: Mapping[str, Any] | None = None
    for vpa in vpas:
        if get_path(vpa, "metadata", "namespace") != namespace:
            continue
        key = (str(namespace), str(get_path(vpa, "metadata", "name") or ""))
        target = targets.get(key) if targets is not None else None
        if target is None:
            target = resolve_target(vpa, lookup)
        if not pod_matches(pod, vpa, target, lookup):
            continue
        if best is None or _order(vpa) < _order(best):
            best = vpa
    return best


def answering_vpa(
    pod: Mapping[str, Any],
    vpas: Iterable[Mapping[str, Any]],
    lookup: Lookup,
    targets: Mapping[tuple[str, str], Target] | None = None,
) -> Mapping[str, Any] | None:
    """The VPA whose updater answers ``pod`` (its pauses at the memory limit, its drift from
    the recommendation): the controlling VPA when its mode updates running pods; None when
    there is none, or it only recommends (then the memory-pause responder answers)."""
    vpa = controlling_vpa(pod, vpas, lookup, targets)
    return vpa if vpa is not None and updates_running_pods(vpa) else None
