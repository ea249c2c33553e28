"""The in-place rule for workloads that roll out by ControllerRevision (StatefulSets and
DaemonSets): a pod at an older revision whose template differs from the update revision's
only in what a resize can change is *moved* to the update revision — its revision labels are
rewritten — instead of being replaced. The workload-resize controller then resizes it to the
workload's template through ``pods/resize``.

Upstream's controllers count a pod as updated when its ``controller-revision-hash`` label
names the update revision (a DaemonSet also accepts ``pod-template-generation``), so
relabelling is all they need to leave the pod running. The embedded StatefulSet and DaemonSet
controllers call :func:`in_place_labels` in their update step before replacing any pod; the
same two functions serve wherever upstream's controllers own the pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from inplace.client import PODS, Client

from ..history import REVISION_HASH_LABEL, template_of
from .model import in_place_verdict

__all__ = ["adopt_revision", "in_place_labels", "revision_of_pod"]

Obj = dict[str, Any]


def revision_of_pod(pod: Mapping[str, Any], revisions: Iterable[Mapping[str, Any]]) -> Obj | None:
    """The revision ``pod`` was made from: the one its ``controller-revision-hash`` label
    names, by name (a StatefulSet's pods) or by hash (a DaemonSet's)."""
    value = ((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_HASH_LABEL)
    if not value:
        return None
    for revision in revisions:
        meta = revision.get("metadata") or {}
        hash_ = (meta.get("labels") or {}).get(REVISION_HASH_LABEL)
        if value in (meta.get("name"), hash_):
            return dict(revision)
    return None


def in_place_labels(
    pod: Mapping[str, Any],
    revisions: Iterable[Mapping[str, Any]],
    update_revision: Mapping[str, Any],
    labels: Mapping[str, str],
) -> dict[str, str] | None:
    """The ``labels`` to write on ``pod`` so it counts as made from ``update_revision``
    without being replaced, or None when it must be replaced: its revision is unknown, or
    the two templates differ in more than a resize can change
    (:func:`.model.in_place_verdict`). ``labels`` are the update revision's values of the
    keys the owner's controller compares (``controller-revision-hash``, and
    ``pod-template-generation`` for a DaemonSet); only those that differ are returned, so
    ``{}`` means the pod is already there."""
    current = ((pod.get("metadata") or {}).get("labels")) or {}
    changed = {k: v for k, v in labels.items() if current.get(k) != v}
    if not changed:
        return {}
    revision = revision_of_pod(pod, revisions)
    if revision is None:
        return None
    old, new = (_as_made(template_of(r), pod) for r in (revision, update_revision))
    if not in_place_verdict(old, new).in_place:
        return None
    return changed


def _as_made(template: Obj, pod: Mapping[str, Any]) -> Obj:
    """``template`` with the volumes its pod was given beside it (a StatefulSet's claims):
    judged as a pod, a template alone mounts volumes it does not have."""
    spec = dict(template.get("spec") or {})
    named = {v.get("name") for v in spec.get("volumes") or () if isinstance(v, Mapping)}
    extra = [
        v
        for v in (pod.get("spec") or {}).get("volumes") or ()
        if isinstance(v, Mapping) and v.get("name") not in named
    ]
    if not extra:
        return template
    spec["volumes"] = [*(spec.get("volumes") or ()), *extra]
    return {**template, "spec": spec}


async def adopt_revision(client: Client, pod: Mapping[str, Any], labels: Mapping[str, str]) -> Obj:
    """Write ``labels`` on ``pod``, guarded by its resourceVersion (a pod changed since it
    was judged is judged again on the next sync: the 409 reaches the caller)."""
    meta = pod.get("metadata") or {}
    body = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "labels": dict(labels)}}
    return await client.patch(PODS, str(meta.get("name")), body, namespace=meta.get("namespace"))
