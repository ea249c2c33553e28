"""The workload objects a VerticalPodAutoscaler's target and a pod's owners are read from:
one :data:`inplace.api.vpa_targets.Lookup` over the shared informers, so the VPA controller
and the memory-pause responder resolve coverage from the same caches by the same rule."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inplace.client import WORKLOAD_RESOURCES, Informer, Resource

from .base import Context

__all__ = ["WORKLOAD_KINDS", "WorkloadLookup"]

WORKLOAD_KINDS: Final[Mapping[str, Resource]] = WORKLOAD_RESOURCES
"""The kinds this cluster serves that a VPA can target (``vpa_targets.SELECTOR_KINDS``)."""


class WorkloadLookup:
    """``(group, kind, name, namespace)`` → the object from the shared informer of its kind."""

    def __init__(self, ctx: Context) -> None:
        self.informers: dict[str, Informer] = {
            kind: ctx.informer(res) for kind, res in WORKLOAD_KINDS.items()
        }

    def __call__(self, group: str, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
        informer = self.informers.get(kind)
        if informer is None or WORKLOAD_KINDS[kind].group != group:
            return None
        return informer.get(f"{namespace}/{name}")
