"""What the API server assigns a Service: its cluster IP, its node ports, its IP families.

Upstream's service registry (``pkg/registry/core/service/storage``) allocates before it
validates: a ClusterIP from the service range (``--service-cluster-ip-range``, default
``10.96.0.0/12``), node ports from ``30000-32767``, and fills ``clusterIPs``,
``ipFamilies`` and ``ipFamilyPolicy``. This cluster is single-stack IPv4. An address or port
is in use while a stored Service holds it, so deleting the Service releases it; the API
server runs one allocation at a time against an up-to-date cache, which makes every address
unique. Nothing routes traffic to these addresses: Services here are stored objects for the
tools and manifests that expect them (see docs/user-guide.md).

Upstream reserves the low part of each range for addresses users ask for by name and hands
out the rest at random first; so do we. The ``kubernetes`` Service gets the first address.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable, Mapping
from typing import Any, Final

from inplace.api.validation import ValidationError
from inplace.api.validation.errors import FieldError, invalid
from inplace.api.validation.services import (
    CLUSTER_IP_NONE,
    go_string_list,
    is_headless,
    needs_cluster_ip,
    needs_node_ports,
)
from inplace.registry.strategy import ObjectReader

__all__ = [
    "KUBERNETES_SERVICE_IP",
    "NODE_PORT_RANGE",
    "SERVICE_CIDR",
    "allocate_service",
    "normalize_cluster_ips",
    "pick_free",
    "prepare_service_for_update",
]

SERVICE_CIDR: Final = ipaddress.ip_network("10.96.0.0/12")
#: The first address of the range: the ``kubernetes`` Service's.
KUBERNETES_SERVICE_IP: Final = str(SERVICE_CIDR.network_address + 1)
NODE_PORT_RANGE: Final = (30000, 32767)
_NODE_PORT_TEXT: Final = f"{NODE_PORT_RANGE[0]}-{NODE_PORT_RANGE[1]}"
_RNG: Final = random.SystemRandom()


def _static_band(size: int) -> int:
    """Upstream's static sub-range: min(max(16, size/16), 256) values (IPs) or
    min(max(16, size/32), 128) (ports) at the bottom, handed out only when asked for."""
    return min(max(16, size // 16), 256)


def pick_free(lo: int, hi: int, used: set[int], rng: random.Random = _RNG) -> int | None:
    """A free value of ``[lo, hi]``: at random in the dynamic band above the static one,
    then anywhere. None when every value is taken."""
    size = hi - lo + 1
    dynamic_lo = min(lo + _static_band(size), hi)
    for band_lo in (dynamic_lo, lo):
        span = hi - band_lo + 1
        start = rng.randrange(span)
        for step in range(span):
            value = band_lo + (start + step) % span
            if value not in used:
                return value
    return None


# -- what other services hold ------------------------------------------------------------------


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    am, bm = a.get("metadata") or {}, b.get("metadata") or {}
    return bool(am.get("namespace") == bm.get("namespace") and am.get("name") == bm.get("name"))


def _held(
    obj: Mapping[str, Any], services: Iterable[Mapping[str, Any]]
) -> tuple[set[int], set[int]]:
    """The cluster IPs (as ints) and node ports every other stored Service holds."""
    ips: set[int] = set()
    ports: set[int] = set()
    for other in services:
        if _same(other, obj):
            continue
        spec = other.get("spec") or {}
        for ip in spec.get("clusterIPs") or ():
            try:
                ips.add(int(ipaddress.ip_address(ip)))
            except ValueError:
                continue
        for port in spec.get("ports") or ():
            if isinstance(port, Mapping) and isinstance(port.get("nodePort"), int):
                ports.add(port["nodePort"])
        if isinstance(spec.get("healthCheckNodePort"), int):
            ports.add(spec["healthCheckNodePort"])
    return ips, ports


# -- the strategy hooks --------------------------------------------------------------------------


def normalize_cluster_ips(spec: dict[str, Any], old: Mapping[str, Any] | None = None) -> None:
    """Upstream ``NormalizeClusterIPs``: keep ``clusterIP`` and ``clusterIPs[0]`` in step,
    whichever of the two the request set."""
    cluster_ip = spec.get("clusterIP") or ""
    ips = spec.get("clusterIPs")
    ips = ips if isinstance(ips, list) else []
    if old is not None and isinstance(cluster_ip, str):
        old_ip = old.get("clusterIP") or ""
        old_ips = old.get("clusterIPs") or []
        if cluster_ip != old_ip and ips == old_ips:
            # The request changed only clusterIP: clusterIPs follows (validation decides).
            spec["clusterIPs"] = [cluster_ip] if cluster_ip else []
            return
    if not cluster_ip and not ips:
        return
    if cluster_ip and not ips:
        spec["clusterIPs"] = [cluster_ip]
    elif not cluster_ip and ips and isinstance(ips[0], str):
        spec["clusterIP"] = ips[0]


def prepare_service_for_update(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """Upstream's service ``PrepareForUpdate``: the status stays, what the request left out
    of what was allocated is kept (``patchAllocatedValues``: ``kubectl replace`` of the
    original manifest keeps the address), and what a type change makes meaningless goes."""
    new_spec = new.get("spec")
    old_spec = old.get("spec")
    if not isinstance(new_spec, dict) or not isinstance(old_spec, Mapping):
        return
    if needs_cluster_ip(old_spec) and needs_cluster_ip(new_spec):
        if not new_spec.get("clusterIP"):
            new_spec["clusterIP"] = old_spec.get("clusterIP")
        if not new_spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            new_spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if needs_node_ports(old_spec) and needs_node_ports(new_spec):
        _keep_node_ports(new_spec, old_spec)
    keeps_health_port = new_spec.get("type") == old_spec.get("type") == "LoadBalancer"
    previous = old_spec.get("healthCheckNodePort")
    if keeps_health_port and previous and not new_spec.get("healthCheckNodePort"):
        new_spec["healthCheckNodePort"] = previous
    normalize_cluster_ips(new_spec, old_spec)
    _drop_type_dependent(new_spec, old_spec)


def _ports(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [p for p in spec.get("ports") or () if isinstance(p, dict)]


def _keep_node_ports(new_spec: dict[str, Any], old_spec: Mapping[str, Any]) -> None:
    def used(spec: Mapping[str, Any]) -> set[int]:
        return {p["nodePort"] for p in _ports(spec) if p.get("nodePort")}

    taken = used(old_spec) & used(new_spec)
    by_name = {p.get("name") or "": p.get("nodePort") for p in _ports(old_spec)}
    for port in _ports(new_spec):
        if not port.get("nodePort"):
            previous = by_name.get(port.get("name") or "")
            if previous and previous not in taken:
                port["nodePort"] = previous


def _drop_type_dependent(new_spec: dict[str, Any], old_spec: Mapping[str, Any]) -> None:
    """Upstream ``dropTypeDependentFields``: a field the new type does not use and the
    request did not change is dropped."""
    if not needs_cluster_ip(new_spec) and needs_cluster_ip(old_spec):
        if new_spec.get("clusterIPs") == old_spec.get("clusterIPs"):
            for key in ("clusterIP", "clusterIPs"):
                new_spec.pop(key, None)
        for key in ("ipFamilies", "ipFamilyPolicy"):
            if new_spec.get(key) == old_spec.get(key):
                new_spec.pop(key, None)
    if not needs_node_ports(new_spec) and needs_node_ports(old_spec):
        old_ports = {p.get("nodePort") for p in _ports(old_spec)}
        for port in _ports(new_spec):
            if port.get("nodePort") in old_ports:
                port.pop("nodePort", None)
    local = (
        new_spec.get("type") == "LoadBalancer" and new_spec.get("externalTrafficPolicy") == "Local"
    )
    if not local and new_spec.get("healthCheckNodePort") == old_spec.get("healthCheckNodePort"):
        new_spec.pop("healthCheckNodePort", None)


def _ip_families(spec: dict[str, Any], errs: list[FieldError]) -> None:
    """Upstream ``initIPFamilyFields`` on a single-stack IPv4 cluster."""
    if not needs_cluster_ip(spec):
        return
    policy = spec.get("ipFamilyPolicy")
    if policy == "RequireDualStack":
        errs.append(
            invalid(
                "spec.ipFamilyPolicy",
                policy,
                "this cluster is not configured for dual-stack services",
            )
        )
    families = spec.get("ipFamilies")
    if isinstance(families, list):
        for i, family in enumerate(families):
            if family == "IPv6":
                errs.append(
                    invalid(f"spec.ipFamilies[{i}]", family, "not configured on this cluster")
                )
    if policy is None:
        spec["ipFamilyPolicy"] = "SingleStack"
    if not families:
        spec["ipFamilies"] = ["IPv4"]


def allocate_service(
    obj: dict[str, Any],
    objects: ObjectReader,
    old: Mapping[str, Any] | None = None,
    *,
    rng: random.Random = _RNG,
) -> None:
    """Give a Service what it needs and does not have (a cluster IP, node ports, a health
    check port, its IP families), and check that what it asks for by value is free and in
    range. A refusal is a 422 naming the field, with upstream's words."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if old is None:
        normalize_cluster_ips(spec)
        obj["status"] = {"loadBalancer": {}}
    errs: list[FieldError] = []
    used_ips, used_ports = _held(obj, objects.list("", "Service"))
    old_spec = (old or {}).get("spec") or {}
    _ip_families(spec, errs)
    if needs_cluster_ip(spec) and not is_headless(spec):
        _cluster_ip(spec, old_spec, used_ips, errs, rng)
    if needs_node_ports(spec):
        _node_ports(spec, old_spec, used_ports, errs, rng)
    if spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local":
        _health_check_port(spec, old_spec, used_ports, errs, rng)
    if errs:
        name = (obj.get("metadata") or {}).get("name") or ""
        raise ValidationError("Service", str(name), errs)


def _cluster_ip(
    spec: dict[str, Any],
    old_spec: Mapping[str, Any],
    used: set[int],
    errs: list[FieldError],
    rng: random.Random,
) -> None:
    wanted = spec.get("clusterIP") or ""
    if not isinstance(wanted, str):
        return
    if wanted and wanted == old_spec.get("clusterIP"):
        return
    lo = int(SERVICE_CIDR.network_address) + 1
    hi = int(SERVICE_CIDR.broadcast_address) - 1
    if not wanted:
        free = pick_free(lo, hi, used, rng)
        if free is None:
            errs.append(
                invalid(
                    "spec.clusterIPs",
                    go_string_list([]),
                    "failed to allocate a serviceIP: range is full",
                )
            )
            return
        address = str(ipaddress.ip_address(free))
        spec["clusterIP"] = address
        spec["clusterIPs"] = [address]
        return
    if wanted == CLUSTER_IP_NONE:
        return
    try:
        ip = ipaddress.ip_address(wanted)
    except ValueError:
        return  # validation names the bad address
    shown = go_string_list(spec.get("clusterIPs") or [wanted])
    if not lo <= int(ip) <= hi or ip.version != 4:
        errs.append(
            invalid(
                "spec.clusterIPs",
                shown,
                f"failed to allocate IP {wanted}: the provided IP ({wanted}) is not in the valid "
                f"range. The range of valid IPs is {SERVICE_CIDR}",
            )
        )
    elif int(ip) in used:
        errs.append(
            invalid(
                "spec.clusterIPs",
                shown,
                f"failed to allocate IP {wanted}: provided IP is already allocated",
            )
        )


def _node_port(
    wanted: object,
    held_before: set[int],
    used: set[int],
    path: str,
    errs: list[FieldError],
    rng: random.Random,
) -> int | None:
    if not wanted:
        free = pick_free(NODE_PORT_RANGE[0], NODE_PORT_RANGE[1], used, rng)
        if free is None:
            errs.append(invalid(path, 0, "range is full"))
        return free
    if not isinstance(wanted, int) or isinstance(wanted, bool):
        return None
    if wanted in held_before:
        return wanted
    if not NODE_PORT_RANGE[0] <= wanted <= NODE_PORT_RANGE[1]:
        errs.append(
            invalid(
                path,
                wanted,
                "provided port is not in the valid range. The range of valid ports is "
                + _NODE_PORT_TEXT,
            )
        )
    elif wanted in used:
        errs.append(invalid(path, wanted, "provided port is already allocated"))
    return wanted


def _node_ports(
    spec: dict[str, Any],
    old_spec: Mapping[str, Any],
    used: set[int],
    errs: list[FieldError],
    rng: random.Random,
) -> None:
    held_before = {p["nodePort"] for p in _ports(old_spec) if isinstance(p.get("nodePort"), int)}
    taken = set(used)
    for i, port in enumerate(spec.get("ports") or ()):
        if not isinstance(port, dict):
            continue
        value = _node_port(
            port.get("nodePort"), held_before, taken, f"spec.ports[{i}].nodePort", errs, rng
        )
        if value is not None:
            port["nodePort"] = value
            taken.add(value)
    used.update(taken)


def _health_check_port(
    spec: dict[str, Any],
    old_spec: Mapping[str, Any],
    used: set[int],
    errs: list[FieldError],
    rng: random.Random,
) -> None:
    held = {old_spec.get("healthCheckNodePort")} - {None}
    value = _node_port(
        spec.get("healthCheckNodePort"),
        {v for v in held if isinstance(v, int)},
        used,
        "spec.healthCheckNodePort",
        errs,
        rng,
    )
    if value is not None:
        spec["healthCheckNodePort"] = value
