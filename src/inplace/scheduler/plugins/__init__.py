"""The default plugins; :func:`default_plugins` is upstream's default profile, in order."""

from __future__ import annotations

from inplace.client import Client

from .binder import DefaultBinder, binding_body
from .placement import (
    NodeAffinity,
    NodeName,
    NodeUnschedulable,
    TaintToleration,
    match_node_selector_terms,
    tolerates,
)
from .resources import (
    BalancedAllocation,
    Insufficient,
    LeastAllocated,
    MostAllocated,
    NodeResourcesFit,
    fit_reasons,
    format_cpu,
    format_memory,
)
from .volumes import VolumeBinding, VolumeObjects

__all__ = [
    "BalancedAllocation",
    "DefaultBinder",
    "Insufficient",
    "LeastAllocated",
    "MostAllocated",
    "NodeAffinity",
    "NodeName",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "TaintToleration",
    "VolumeBinding",
    "VolumeObjects",
    "binding_body",
    "default_plugins",
    "fit_reasons",
    "format_cpu",
    "format_memory",
    "match_node_selector_terms",
    "tolerates",
]


def default_plugins(
    client: Client | None,
    *,
    scoring: str = "LeastAllocated",
    volumes: VolumeObjects | None = None,
) -> list[object]:
    """Filters in upstream's order, then scores, then the binder (when a client is given).

    ``scoring`` is ``LeastAllocated`` (spread, the default) or ``MostAllocated`` (pack);
    ``volumes`` (the claims, volumes and classes the scheduler follows) adds VolumeBinding."""
    strategy: object = MostAllocated() if scoring == "MostAllocated" else LeastAllocated()
    plugins: list[object] = [
        NodeUnschedulable(),
        NodeName(),
        TaintToleration(),
        NodeAffinity(),
        NodeResourcesFit(),
    ]
    if volumes is not None:
        plugins.append(VolumeBinding(volumes, client))
    plugins += [
        strategy,
        BalancedAllocation(),
    ]
    if client is not None:
        plugins.append(DefaultBinder(client))
    return plugins
