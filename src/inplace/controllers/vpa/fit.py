"""Capping a resize to what fits the pod's node, so a reaction to an OOM kill or a pause is
granted at once rather than refused as ``Infeasible`` or left ``Deferred``.

The room a pod may grow into is the node's allocatable minus what every other live pod on
it is charged (:func:`~inplace.api.resources.resize_accounting_requests`, as the scheduler's
arbiter charges them). A container's new request is lowered to its current request plus its
share of that room (never below its current request); limits are left as the policy made
them (a limit above the request is valid), except one equal to the request, which follows
it so the pod keeps its QoS class, and a memory limit above the node's allocatable memory,
which is lowered to it (the ceiling from the node: past it a limit protects nothing).
Without a node in the cache nothing is capped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from inplace.api.quantity import Format, Quantity
from inplace.api.resources import (
    CPU,
    MEMORY,
    parse_resource_list,
    resize_accounting_requests,
)
from inplace.api.vpa_policy import ContainerResources, actual_requests_and_limits

__all__ = ["fit_to_node", "free_room"]


def _milli(resources: Mapping[str, Quantity], name: str) -> int:
    value = resources.get(name)
    return value.milli_value() if value is not None else 0


def free_room(node: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Millicores and milli-bytes of ``node``'s allocatable no other live pod is charged."""
    status = node.get("status") or {}
    allocatable = parse_resource_list(status.get("allocatable") or status.get("capacity"))
    room = {CPU: _milli(allocatable, CPU), MEMORY: _milli(allocatable, MEMORY)}
    for pod in others:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        charged = resize_accounting_requests(pod)
        for name in room:
            room[name] -= _milli(charged, name)
    return {name: max(value, 0) for name, value in room.items()}


def fit_to_node(
    wanted: Sequence[ContainerResources],
    pod: Mapping[str, Any],
    node: Mapping[str, Any] | None,
    others: Iterable[Mapping[str, Any]],
) -> tuple[ContainerResources, ...]:
    """``wanted`` with each request capped so that the pod fits ``node`` beside ``others``."""
    if node is None:
        return tuple(wanted)
    room = free_room(node, others)
    ceiling = free_room(node, ())[MEMORY]
    containers = {
        str(c.get("name")): c
        for c in (pod.get("spec") or {}).get("containers") or ()
        if isinstance(c, Mapping)
    }
    current: dict[str, dict[str, int]] = {}
    for name, container in containers.items():
        held, _ = actual_requests_and_limits(pod, container)
        current[name] = {CPU: _milli(held, CPU), MEMORY: _milli(held, MEMORY)}
    # What the pod holds now is already charged; growth comes out of what is left.
    for held_milli in current.values():
        for resource in room:
            room[resource] -= held_milli[resource]
    out = []
    for res in wanted:
        requests, limits = dict(res.requests), dict(res.limits)
        for resource in (CPU, MEMORY):
            quantity = requests.get(resource)
            if quantity is None:
                continue
            have = current.get(res.name, {}).get(resource, 0)
            growth = quantity.milli_value() - have
            if growth <= 0:
                continue
            allowed = max(min(growth, room[resource]), 0)
            room[resource] -= allowed
            if allowed < growth:
                milli = have + allowed
                capped = (
                    Quantity.from_milli(milli, Format.DECIMAL_SI)
                    if resource == CPU
                    else Quantity.from_int(milli // 1000, Format.BINARY_SI)
                )
                if limits.get(resource) == quantity:
                    limits[resource] = capped  # limit == request stays so (the QoS class)
                requests[resource] = capped
        limit, request = limits.get(MEMORY), requests.get(MEMORY)
        if limit is not None and 0 < ceiling < limit.milli_value():
            floor = request.milli_value() if request is not None else 0
            limits[MEMORY] = Quantity.from_int(max(ceiling, floor) // 1000, Format.BINARY_SI)
        out.append(ContainerResources(res.name, requests, limits))
    return tuple(out)
