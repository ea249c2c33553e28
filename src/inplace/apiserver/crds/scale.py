"""The `scale` subresource of a custom resource: its CRD's replica and selector paths.

Upstream's custom resource scale (apiextensions-apiserver `pkg/registry/customresource`
`scaleFromCustomResource`): `spec.replicas` and `status.replicas` are read from
`specReplicasPath` and `statusReplicasPath` (0 when absent), `status.selector` from
`labelSelectorPath` (a string, "" when absent), and a write of the Scale sets the value at
`specReplicasPath`, creating the objects on the way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inplace.registry.schema.custom import ScalePaths


def _steps(path: str) -> list[str]:
    return [p for p in path.split(".") if p]


def _read(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for step in _steps(path):
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def custom_scale(paths: ScalePaths, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The Scale's `spec` and `status` of a custom resource."""
    selector = _read(obj, paths.label_selector) if paths.label_selector else None
    return {
        "spec": {"replicas": _count(_read(obj, paths.spec_replicas))},
        "status": {
            "replicas": _count(_read(obj, paths.status_replicas)),
            "selector": selector if isinstance(selector, str) else "",
        },
    }


def set_replicas(paths: ScalePaths, obj: dict[str, Any], replicas: int) -> None:
    """Write a Scale's replicas into the custom resource, at `specReplicasPath`."""
    *parents, last = _steps(paths.spec_replicas)
    target = obj
    for step in parents:
        child = target.get(step)
        if not isinstance(child, dict):
            child = target[step] = {}
        target = child
    target[last] = replicas
