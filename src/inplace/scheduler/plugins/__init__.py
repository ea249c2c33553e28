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
from .restrictions import VolumeRestrictions
from .volumes import BIND_TIMEOUT_SECONDS, VolumeBinding, VolumeObjects

__all__ = [
    "BIND_TIMEOUT_SECONDS",
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
    "VolumeRestrictions",
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
    volume_bind_timeout: float = BIND_TIMEOUT_SECONDS,
) -> list[object]:
    """Filters in upstream's order, then scores, then the binder (when a client is given).

    ``scoring`` is ``LeastAllocated`` (spread, the default) or ``MostAllocated`` (pack);
    ``volumes`` (the claims, volumes and classes the scheduler follows) adds
    VolumeRestrictions and VolumeBinding, whose PreBind waits at most
    ``volume_bind_timeout`` seconds for a claim to be bound."""
    strategy: object = MostAllocated() if scoring == "MostAllocated" else LeastAllocated()
    plugins: list[object] = [
        NodeUnschedulable(),
        NodeName(),
        TaintToleration(),
        NodeAffinity(),
        NodeResourcesFit(),
    ]
    if volumes is not None:
        plugins.append(VolumeRestrictions(volumes))
        plugins.append(VolumeBinding(volumes, client, bind_timeout=volume_bind_timeout))
    plugins += [
        strategy,
        BalancedAllocation(),
    ]
    if client is not None:
        plugins.append(DefaultBinder(client))
    return plugins
