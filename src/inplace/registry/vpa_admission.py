"""The VPA admission step: a new pod of a VPA's target starts at the recommendation.

Upstream runs this as the ``vpa-admission-controller`` webhook; here it is one of the API
server's pod admission steps (:func:`inplace.registry.lifecycle.admit_pod`, after the built-in
plugins, where a mutating webhook runs). It reads the VPA objects and the pod's owners from
the API server's own cache and applies the recommendation in ``status`` exactly as the
updater does (:func:`~inplace.api.vpa_policy.pod_container_resources`: capped to
min/maxAllowed, limits kept in proportion under ``RequestsAndLimits``), so a pod the updater
evicted comes back at the size the updater wanted.

As upstream: the controlling VPA is chosen by :func:`~inplace.api.vpa_targets.controlling_vpa`;
a VPA in ``Off`` mode changes nothing; every other mode (``Initial``, ``Recreate``,
``InPlaceOrRecreate``, ``InPlace``, ``Auto``) sets the requests (and limits) of the containers
it has a recommendation for, records what it changed in ``vpaUpdates`` and the container
names in ``vpaObservedContainers``. A pod is never refused here: a VPA without a
recommendation, or a bad one, leaves the pod as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inplace.api.annotations import VPA_OBSERVED_CONTAINERS, VPA_UPDATES
from inplace.api.resources import parse_resource_list
from inplace.api.vpa_policy import OFF, pod_container_resources, update_mode
from inplace.api.vpa_targets import controlling_vpa
from inplace.registry.strategy import ObjectReader

__all__ = ["admit_pod_vpa", "apply_recommendation"]

_VPA = ("autoscaling.k8s.io", "VerticalPodAutoscaler")


def apply_recommendation(pod: dict[str, Any], vpa: Mapping[str, Any]) -> bool:
    """Write ``vpa``'s recommendation into ``pod``'s containers and the two annotations
    (pure; ``pod`` is changed in place). False when the VPA is ``Off``."""
    if update_mode(vpa) == OFF:
        return False
    meta = pod.setdefault("metadata", {})
    spec = pod.get("spec") or {}
    containers = [c for c in spec.get("containers") or () if isinstance(c, dict)]
    by_name = {str(c.get("name")): (i, c) for i, c in enumerate(containers)}
    updates: list[str] = []
    for wanted in pod_container_resources(pod, vpa):
        found = by_name.get(wanted.name)
        if found is None:
            continue
        index, container = found
        resources = container.setdefault("resources", {})
        changed: list[str] = []
        for field, values in (("requests", wanted.requests), ("limits", wanted.limits)):
            if not values:
                continue
            current = resources.setdefault(field, {})
            try:
                before = parse_resource_list(current)
            except ValueError:
                before = {}
            for name, quantity in sorted(values.items()):
                if before.get(name) != quantity:
                    current[name] = str(quantity)
                    changed.append(f"{name} {field[:-1]}")
        if changed:
            updates.append(f"container {index}: " + ", ".join(changed))
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    if updates:
        vpa_name = (vpa.get("metadata") or {}).get("name", "")
        annotations[VPA_UPDATES] = f"Pod resources updated by {vpa_name}: " + "; ".join(updates)
    annotations[VPA_OBSERVED_CONTAINERS] = ", ".join(str(c.get("name", "")) for c in containers)
    return True


def admit_pod_vpa(pod: dict[str, Any], objects: ObjectReader) -> None:
    """The admission step (see the module docstring)."""
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    vpas = [
        v for v in objects.list(*_VPA) if (v.get("metadata") or {}).get("namespace") == namespace
    ]
    if not vpas:
        return

    def lookup(group: str, kind: str, name: str, ns: str) -> Mapping[str, Any] | None:
        return objects.get(group, kind, name, ns)

    probe = pod
    if not (pod.get("metadata") or {}).get("namespace"):
        probe = {**pod, "metadata": {**(pod.get("metadata") or {}), "namespace": namespace}}
    vpa = controlling_vpa(probe, vpas, lookup)
    if vpa is not None:
        apply_recommendation(pod, vpa)
