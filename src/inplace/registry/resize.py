"""The API server's half of a resize: what a write to ``pods/NAME/resize`` keeps of its request.

The path of a resize, by file: this module prepares the request (only the containers'
``resources`` and ``resizePolicy`` count), :mod:`inplace.api.validation.resize` validates it
(upstream's ``ValidatePodResize``), the store commits it and the watch carries it to the node
agent, whose :mod:`inplace.node.resize` plans and actuates it down to the cgroup files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inplace.registry.strategy import copy_json

__all__ = ["prepare_pod_resize"]


#: What ``pods/resize`` takes from a container in the request (upstream's reset-fields filter).
_RESIZE_FIELDS = ("resources", "resizePolicy")
#: The metadata a subresource write never changes (upstream ``ResetObjectMetaForStatus``,
#: beyond the identity and timestamps every update keeps).
_RESET_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


def _resize_containers(new: Any, old: Any) -> Any:
    """Upstream ``dropNonResizeUpdatesForContainers``: the stored containers with each one's
    ``resources`` and ``resizePolicy`` from the request; the request's list as sent when a
    container was renamed or moved (validation refuses that)."""
    if not isinstance(new, list) or not isinstance(old, list) or not new:
        return new
    merged = []
    for new_c, old_c in zip(new, old, strict=True):
        if not isinstance(new_c, Mapping) or not isinstance(old_c, Mapping):
            return new
        if new_c.get("name") != old_c.get("name"):
            return new
        container = copy_json(old_c)
        for key in _RESIZE_FIELDS:
            if new_c.get(key) is not None:
                container[key] = copy_json(new_c[key])
            else:
                container.pop(key, None)
        merged.append(container)
    return merged


def prepare_pod_resize(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """Upstream's ``podResizeStrategy.PrepareForUpdate`` (``dropNonResizeUpdates``): of the
    request, only the containers' (and init containers') ``resources`` and ``resizePolicy``
    count; the rest of the spec, the status, labels, annotations, finalizers and owner
    references stay as stored. So ``kubectl replace --subresource resize -f pod.json`` of an
    applied pod works whatever else the file says (its last-applied annotation included). A
    request that adds, removes, renames or reorders containers is kept as sent, for
    validation to refuse."""
    new_spec = new.get("spec")
    old_spec = old.get("spec")
    if not isinstance(new_spec, dict) or not isinstance(old_spec, Mapping):
        return
    for key in ("containers", "initContainers"):
        sent, stored = new_spec.get(key) or [], old_spec.get(key) or []
        if not isinstance(sent, list) or not isinstance(stored, list) or len(sent) != len(stored):
            return
    containers = _resize_containers(new_spec.get("containers"), old_spec.get("containers"))
    init = _resize_containers(new_spec.get("initContainers"), old_spec.get("initContainers"))
    spec = copy_json(old_spec)
    if containers is not None:
        spec["containers"] = containers
    if init is not None:
        spec["initContainers"] = init
    new["spec"] = spec
    new["status"] = copy_json(old.get("status", {}))
    meta = new.setdefault("metadata", {})
    old_meta = old.get("metadata") or {}
    for key in _RESET_METADATA:
        if key in old_meta:
            meta[key] = copy_json(old_meta[key])
        else:
            meta.pop(key, None)
