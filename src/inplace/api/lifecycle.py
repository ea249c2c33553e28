"""Create- and delete-time rules of the kinds that have them, named by their strategies.

Upstream's ``PrepareForCreate`` and ``CheckGracefulDelete`` of a resource's strategy, and the
admission plugins that belong to one kind (``Priority`` for pods). Each takes plain JSON and
raises :class:`~inplace.api.strategy.Rejected` to refuse a request, so the API server runs
them without knowing which kind they are for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inplace.api.resources import qos_class
from inplace.api.strategy import ObjectReader, Rejected

__all__ = ["admit_pod_priority", "pod_grace_period", "prepare_pod_for_create"]

_PRIORITY_CLASS = ("scheduling.k8s.io", "PriorityClass")


def admit_pod_priority(pod: dict[str, Any], objects: ObjectReader) -> None:
    """Upstream's ``Priority`` admission plugin: a pod's priority (and preemption policy) come
    from the PriorityClass it names, else from the global default class, else 0."""
    spec = pod.setdefault("spec", {})
    class_name = spec.get("priorityClassName")
    if class_name:
        priority_class = objects.get(*_PRIORITY_CLASS, class_name)
        if priority_class is None:
            raise Rejected(
                403,
                f'pods "{pod["metadata"].get("name", "")}" is forbidden: no PriorityClass '
                f"with name {class_name} was found",
            )
        spec["priority"] = priority_class.get("value", 0)
        spec.setdefault(
            "preemptionPolicy", priority_class.get("preemptionPolicy", "PreemptLowerPriority")
        )
    elif "priority" not in spec:
        for value in objects.list(*_PRIORITY_CLASS):
            if value.get("globalDefault"):
                spec["priorityClassName"] = value["metadata"]["name"]
                spec["priority"] = value.get("value", 0)
                break
        else:
            spec["priority"] = 0


def prepare_pod_for_create(pod: dict[str, Any]) -> None:
    """Upstream's pod ``PrepareForCreate``: the status is the server's (``Pending``, and the
    QoS class the resources give), whatever the request said."""
    status: dict[str, Any] = {"phase": "Pending"}
    try:
        status["qosClass"] = qos_class(pod)
    except ValueError:
        pass  # invalid quantities: validation reports them by field
    pod["status"] = status


def pod_grace_period(pod: Mapping[str, Any], requested: Any) -> int:
    """Upstream's pod ``CheckGracefulDelete``: a pod bound to a node and not finished gets the
    requested grace period (default: its ``terminationGracePeriodSeconds``); any other goes at
    once, as no node has to stop it."""
    spec = pod.get("spec", {})
    if not spec.get("nodeName") or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    if requested is None:
        requested = spec.get("terminationGracePeriodSeconds", 30)
    try:
        grace = int(requested)
    except (TypeError, ValueError):
        raise Rejected(400, f"gracePeriodSeconds: invalid value {requested!r}") from None
    return max(grace, 0)
