"""The cluster as the rescuer sees it at one moment, and what it would do about it.

One function, :func:`snapshot`, shared by the controller (over its informers' caches) and
``inplace rescue --dry-run`` (over one LIST of each kind): the pending pods, every node's
free room, the donors and why the other opted-in pods are not donors. :func:`plan_of` then
runs :func:`~.model.plan` over it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from inplace.api.vpa_targets import SELECTOR_KINDS, Lookup

from .model import Donor, NodeRoom, Pending, Plan, plan
from .usage import UsagePeaks
from .view import (
    RescueSettings,
    allows_shrinking,
    donor_of,
    node_rooms,
    pending_of,
    pod_key,
    vpa_of,
)

__all__ = ["Snapshot", "plan_of", "snapshot", "workload_lookup"]

Obj = Mapping[str, Any]


@dataclass
class Snapshot:
    pending: list[Pending] = field(default_factory=list)
    rooms: list[NodeRoom] = field(default_factory=list)
    donors: list[Donor] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """Pods that allow shrinking but are not donors now, and why."""
    pods: dict[str, Obj] = field(default_factory=dict)
    """Every pod considered, by key (what the patches are computed from)."""
    vpas: dict[str, Obj] = field(default_factory=dict)
    """The VPA controlling each pod that has one, by pod key."""


def workload_lookup(objects: Mapping[str, Iterable[Obj]]) -> Lookup:
    """A :data:`~inplace.api.vpa_targets.Lookup` over workloads listed by kind
    (``{"Deployment": [...], "ReplicaSet": [...], "Job": [...]}``): what ``inplace rescue
    --dry-run`` reads VPA targets and pod owners from, one LIST of each kind."""
    table: dict[tuple[str, str, str, str], Obj] = {}
    for kind, items in objects.items():
        group = SELECTOR_KINDS.get(kind, "")
        for obj in items:
            meta = obj.get("metadata") or {}
            table[(group, kind, str(meta.get("name") or ""), str(meta.get("namespace") or ""))] = (
                obj
            )

    def lookup(group: str, kind: str, name: str, namespace: str) -> Obj | None:
        return table.get((group, kind, name, namespace))

    return lookup


def snapshot(
    pods: Iterable[Obj],
    nodes: Iterable[Obj],
    vpas: Iterable[Obj],
    lookup: Lookup,
    peaks: UsagePeaks,
    *,
    now: float,
    settings: RescueSettings,
    busy: Collection[str] = (),
) -> Snapshot:
    """Pending pods, rooms and donors. ``busy`` pods (being resized by the rescuer already)
    are neither donors nor reasons to skip."""
    pod_list = list(pods)
    node_list = list(nodes)
    vpa_list = list(vpas)
    out = Snapshot(rooms=node_rooms(node_list, pod_list))
    for pod in pod_list:
        key = pod_key(pod)
        out.pods[key] = pod
        pending = pending_of(pod, node_list)
        if pending is not None:
            out.pending.append(pending)
            continue
        if not (pod.get("spec") or {}).get("nodeName") or key in busy:
            continue
        vpa = vpa_of(pod, vpa_list, lookup) if vpa_list else None
        if vpa is not None:
            out.vpas[key] = vpa
        donor = donor_of(pod, vpa=vpa, peaks=peaks, now=now, settings=settings)
        if isinstance(donor, Donor):
            out.donors.append(donor)
        elif allows_shrinking(pod, vpa):
            out.skipped[key] = donor
    return out


def plan_of(state: Snapshot, *, search_limit: int | None = None) -> Plan:
    if search_limit is None:
        return plan(state.pending, state.rooms, state.donors)
    return plan(state.pending, state.rooms, state.donors, search_limit=search_limit)
