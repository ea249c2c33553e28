"""Pod templates compared with their resizable fields set aside: the in-place rule's shape.

A change to a workload's pod template that touches only its containers' ``resources`` and
``resizePolicy`` can be carried out by resizing the running pods in place; any other change
needs new pods. Validation (a Job's template accepts only such changes) and the controllers
(a Deployment resizes instead of rolling out) ask the same question here. Whether the
resize itself is allowed (cpu and memory only, no QoS change, ...) is the ``pods/resize``
validation's answer, asked separately.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

import orjson

from inplace.api.annotations import TEMPLATE_RESOURCES

__all__ = [
    "RESIZABLE_FIELDS",
    "effective_template",
    "only_resizable_changed",
    "recorded_resources",
    "without_resizable",
]

RESIZABLE_FIELDS: Final = ("resources", "resizePolicy")
"""The container fields a resize may change."""


def without_resizable(template: Any) -> Any:
    """A deep copy of ``template`` (a PodTemplateSpec dict) with every container's and init
    container's resizable fields removed; anything malformed is returned copied as is."""
    out = copy.deepcopy(template)
    spec = out.get("spec") if isinstance(out, dict) else None
    if not isinstance(spec, dict):
        return out
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        if not isinstance(containers, list):
            continue
        for container in containers:
            if isinstance(container, dict):
                for field in RESIZABLE_FIELDS:
                    container.pop(field, None)
    return out


def only_resizable_changed(old: Mapping[str, Any] | Any, new: Mapping[str, Any] | Any) -> bool:
    """``old`` and ``new`` differ, and only in their containers' resizable fields (the same
    containers, in the same order), compared as upstream's ``Semantic.DeepEqual`` (absent,
    null and zero alike, quantities by value)."""
    # Imported here: validation imports this module (its Job rules), so a module-level
    # import of the validation package would be circular.
    from inplace.api.validation.equality import semantic

    if semantic(old) == semantic(new):
        return False
    return bool(semantic(without_resizable(old)) == semantic(without_resizable(new)))


def recorded_resources(owner: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The containers' resources recorded on a Job whose immutable template could not take
    a resources-only change (:data:`~inplace.api.annotations.TEMPLATE_RESOURCES`, written by
    the operator's webhook): container name → resources; empty when none or malformed."""
    annotations = (owner.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(TEMPLATE_RESOURCES) if isinstance(annotations, Mapping) else None
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): dict(v) for k, v in value.items() if isinstance(v, dict)}


def effective_template(owner: Mapping[str, Any]) -> dict[str, Any]:
    """The pod template an owner's pods should match: its ``spec.template``, with the
    resources :func:`recorded_resources` holds put in place of its containers'."""
    template: dict[str, Any] = copy.deepcopy(dict((owner.get("spec") or {}).get("template") or {}))
    recorded = recorded_resources(owner)
    if not recorded:
        return template
    for container in (template.get("spec") or {}).get("containers") or ():
        if isinstance(container, dict) and container.get("name") in recorded:
            container["resources"] = copy.deepcopy(recorded[container["name"]])
    return template
