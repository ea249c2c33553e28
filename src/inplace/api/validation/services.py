"""Services, Endpoints and EndpointSlices.

Upstream ``ValidateService`` / ``ValidateServiceUpdate`` (ports, selector, session affinity,
the cluster IP fields and their IP families, node ports, traffic policies),
``ValidateEndpoints`` and discovery's ``ValidateEndpointSlice``, with upstream's paths and
messages. Allocation (a free cluster IP, free node ports) is not validation: the API server
does it before validating (:mod:`inplace.registry.services`), as upstream's service registry does.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any, Final

from inplace.api.names import dns1035_label_errors, dns1123_label_errors, qualified_name_errors
from inplace.api.validation.errors import (
    IMMUTABLE_MSG,
    Bare,
    FieldError,
    as_int,
    as_list,
    as_map,
    as_str,
    check_bool,
    child_path,
    duplicate,
    forbidden,
    go_quote,
    inclusive_range_error,
    index_path,
    invalid,
    name_is_dns_subdomain,
    not_supported,
    objects_in,
    port_name_errors,
    required,
)
from inplace.api.validation.meta import (
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
    validate_status_metadata,
)

__all__ = [
    "CLUSTER_IP_NONE",
    "externally_accessible",
    "go_string_list",
    "ip_errors",
    "is_headless",
    "needs_cluster_ip",
    "needs_node_ports",
    "validate_endpoint_slice",
    "validate_endpoint_slice_update",
    "validate_endpoints",
    "validate_service",
    "validate_service_status_update",
    "validate_service_update",
]

CLUSTER_IP_NONE: Final = "None"
_SERVICE_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_AFFINITIES: Final = ("ClientIP", "None")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_TRAFFIC_POLICIES: Final = ("Cluster", "Local")
_IP_FAMILIES: Final = ("IPv4", "IPv6")
_IP_FAMILY_POLICIES: Final = ("PreferDualStack", "RequireDualStack", "SingleStack")
_ADDRESS_TYPES: Final = ("FQDN", "IPv4", "IPv6")
_MAX_AFFINITY_SECONDS: Final = 86400
_VALID_IP_MSG: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_PORT_RANGE_MSG: Final = inclusive_range_error(1, 65535)


def go_string_list(values: Sequence[object]) -> Bare:
    """A ``[]string`` as Go's ``%#v`` prints it in a field error."""
    return Bare("[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}")


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def ip_errors(errs: list[FieldError], value: str, path: str) -> bool:
    """Upstream ``IsValidIP``; True when `value` is an IP address."""
    if _parse_ip(value) is None:
        errs.append(invalid(path, value, _VALID_IP_MSG))
        return False
    return True


def _special_ip_errors(errs: list[FieldError], value: str, path: str) -> None:
    """Upstream ``ValidateNonSpecialIP`` / ``ValidateEndpointIP``."""
    ip = _parse_ip(value)
    if ip is None:
        errs.append(invalid(path, value, "must be a valid IP address"))
        return
    if ip.is_unspecified:
        errs.append(invalid(path, value, f"may not be unspecified ({value})"))
    if ip.is_loopback:
        errs.append(invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if ip.is_link_local:
        errs.append(
            invalid(path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")
        )
    if ip in ipaddress.ip_network("224.0.0.0/24") or ip in ipaddress.ip_network("ff02::/16"):
        errs.append(
            invalid(
                path,
                value,
                "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
            )
        )


def _port_num_errors(errs: list[FieldError], value: object, path: str) -> None:
    number = as_int(errs, value, path)
    if number is not None and not 1 <= number <= 65535:
        errs.append(invalid(path, number, _PORT_RANGE_MSG))
    elif number is None and value is None:
        errs.append(invalid(path, 0, _PORT_RANGE_MSG))


def _port_num_or_name_errors(errs: list[FieldError], value: object, path: str) -> None:
    """Upstream ``ValidatePortNumOrName`` (a target port)."""
    if isinstance(value, str):
        errs.extend(invalid(path, value, msg) for msg in port_name_errors(value))
    elif isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= 65535:
            errs.append(invalid(path, value, _PORT_RANGE_MSG))
    elif value is not None:
        errs.append(invalid(path, value, "must contain an int or a string"))


# -- what kind of service --------------------------------------------------------------------


def is_headless(spec: Mapping[str, Any]) -> bool:
    """Upstream ``isHeadlessService``: ``clusterIP: None``."""
    ips = spec.get("clusterIPs")
    return spec.get("clusterIP") == CLUSTER_IP_NONE or (
        isinstance(ips, list) and len(ips) == 1 and ips[0] == CLUSTER_IP_NONE
    )


def needs_cluster_ip(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") != "ExternalName"


def needs_node_ports(spec: Mapping[str, Any]) -> bool:
    """NodePort services, and LoadBalancers that allocate them (the default)."""
    kind = spec.get("type")
    return kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False
    )


def externally_accessible(spec: Mapping[str, Any]) -> bool:
    """Upstream ``ExternallyAccessible``."""
    kind = spec.get("type")
    return kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs"))
    )


def _needs_health_check(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


# -- Service ---------------------------------------------------------------------------------


def _validate_service_port(
    errs: list[FieldError],
    port: Mapping[str, Any],
    path: str,
    *,
    require_name: bool,
    names: set[str],
) -> None:
    """Upstream ``validateServicePort``."""
    name = as_str(errs, port.get("name"), child_path(path, "name"))
    if require_name and not name:
        errs.append(required(child_path(path, "name")))
    elif name:
        errs.extend(
            invalid(child_path(path, "name"), name, msg) for msg in dns1123_label_errors(name)
        )
        if name in names:
            errs.append(duplicate(child_path(path, "name"), name))
        names.add(name)
    _port_num_errors(errs, port.get("port"), child_path(path, "port"))
    protocol = as_str(errs, port.get("protocol"), child_path(path, "protocol"))
    if not protocol:
        errs.append(required(child_path(path, "protocol")))
    elif protocol not in _PROTOCOLS:
        errs.append(not_supported(child_path(path, "protocol"), protocol, _PROTOCOLS))
    _port_num_or_name_errors(errs, port.get("targetPort"), child_path(path, "targetPort"))
    app_protocol = port.get("appProtocol")
    if app_protocol is not None:
        text = as_str(errs, app_protocol, child_path(path, "appProtocol"))
        errs.extend(
            invalid(child_path(path, "appProtocol"), text, msg)
            for msg in qualified_name_errors(text)
        )


def _go_service_port(protocol: str, port: object) -> Bare:
    """The ``core.ServicePort`` key of a duplicate port, as Go's ``%#v`` prints it."""
    return Bare(
        f'core.ServicePort{{Name:"", Protocol:{go_quote(protocol)}, AppProtocol:(*string)(nil), '
        f'Port:{port}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:""}}, '
        "NodePort:0}"
    )


def _validate_cluster_ips(errs: list[FieldError], spec: Mapping[str, Any]) -> None:
    """Upstream ``ValidateServiceClusterIPsRelatedFields``."""
    if spec.get("type") == "ExternalName":
        return
    ips_path = "spec.clusterIPs"
    cluster_ip = as_str(errs, spec.get("clusterIP"), "spec.clusterIP")
    ips = [
        as_str(errs, ip, index_path(ips_path, i))
        for i, ip in enumerate(as_list(errs, spec.get("clusterIPs"), ips_path))
    ]
    if cluster_ip:
        if not ips:
            errs.append(required(ips_path))
        elif ips[0] != cluster_ip:
            errs.append(
                invalid(ips_path, go_string_list(ips), "first value must match `clusterIP`")
            )
    elif ips:
        errs.append(
            invalid(
                ips_path, go_string_list(ips), "must be empty when `clusterIP` is not specified"
            )
        )
    families = as_list(errs, spec.get("ipFamilies"), "spec.ipFamilies")
    seen: set[object] = set()
    for i, family in enumerate(families):
        if family not in _IP_FAMILIES:
            errs.append(not_supported(index_path("spec.ipFamilies", i), family, _IP_FAMILIES))
        if family in seen:
            errs.append(duplicate(index_path("spec.ipFamilies", i), family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in _IP_FAMILY_POLICIES:
        errs.append(not_supported("spec.ipFamilyPolicy", policy, _IP_FAMILY_POLICIES))
    bad = False
    for i, ip in enumerate(ips):
        if i == 0 and ip == CLUSTER_IP_NONE:
            if len(ips) > 1:
                bad = True
                errs.append(
                    invalid(
                        ips_path, go_string_list(ips), "'None' must be the first and only value"
                    )
                )
            continue
        bad = not ip_errors(errs, ip, index_path(ips_path, i)) or bad
    if len(ips) > 2:
        errs.append(invalid(ips_path, go_string_list(ips), "may only hold up to 2 values"))
    if bad:
        return
    if len(ips) > 1:
        versions = {_parse_ip(ip).version for ip in ips}  # type: ignore[union-attr]
        if len(versions) != len(ips):
            errs.append(
                invalid(
                    ips_path,
                    go_string_list(ips),
                    "may specify no more than one IP for each IP family",
                )
            )
    if not is_headless(spec):
        for i, (ip, family) in enumerate(zip(ips, families, strict=False)):
            parsed = _parse_ip(ip)
            version = parsed.version if parsed is not None else 0
            if family == "IPv4" and version == 6:
                errs.append(
                    invalid(
                        index_path(ips_path, i),
                        ip,
                        f"expected an IPv4 value as indicated by `ipFamilies[{i}]`",
                    )
                )
            if family == "IPv6" and version != 6:
                errs.append(
                    invalid(
                        index_path(ips_path, i),
                        ip,
                        f"expected an IPv6 value as indicated by `ipFamilies[{i}]`",
                    )
                )


def validate_service(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateService``."""

    def service_name(name: str, prefix: bool) -> list[str]:
        if prefix and len(name) > 1 and name.endswith("-"):
            name = name[:-2] + "a"
        return dns1035_label_errors(name)

    validate_object_meta(errs, obj, namespaced=True, name_fn=service_name)
    spec = as_map(errs, obj.get("spec"), "spec")
    kind = as_str(errs, spec.get("type"), "spec.type")
    headless = is_headless(spec)
    ports = objects_in(as_list(errs, spec.get("ports"), "spec.ports"))
    if not ports and not headless and kind != "ExternalName":
        errs.append(required("spec.ports"))
    ips = spec.get("clusterIPs")
    first_ip = ips[0] if isinstance(ips, list) and ips else spec.get("clusterIP")
    if kind in ("LoadBalancer", "NodePort") and headless:
        errs.append(
            invalid(
                "spec.clusterIPs[0]",
                first_ip,
                f"may not be set to 'None' for {kind} services",
            )
        )
    elif kind == "ExternalName":
        if spec.get("clusterIPs"):
            errs.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if spec.get("ipFamilies"):
            errs.append(forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(
                forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services")
            )
        cname = as_str(errs, spec.get("externalName"), "spec.externalName").removesuffix(".")
        if cname:
            errs.extend(
                invalid("spec.externalName", cname, msg)
                for msg in name_is_dns_subdomain(cname, False)
            )
        else:
            errs.append(required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        _validate_service_port(
            errs, port, index_path("spec.ports", i), require_name=len(ports) > 1, names=names
        )
    if spec.get("selector") is not None:
        validate_labels(errs, spec.get("selector"), "spec.selector")
    affinity = as_str(errs, spec.get("sessionAffinity"), "spec.sessionAffinity")
    if not affinity:
        errs.append(required("spec.sessionAffinity"))
    elif affinity not in _AFFINITIES:
        errs.append(not_supported("spec.sessionAffinity", affinity, _AFFINITIES))
    config = spec.get("sessionAffinityConfig")
    if affinity == "ClientIP":
        _validate_client_ip_affinity(errs, config)
    elif affinity == "None" and config is not None:
        errs.append(
            forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None")
        )
    _validate_cluster_ips(errs, spec)
    for i, ip in enumerate(as_list(errs, spec.get("externalIPs"), "spec.externalIPs")):
        path = index_path("spec.externalIPs", i)
        text = as_str(errs, ip, path)
        if ip_errors(errs, text, path):
            _special_ip_errors(errs, text, path)
    if not kind:
        errs.append(required("spec.type"))
    elif kind not in _SERVICE_TYPES:
        errs.append(not_supported("spec.type", kind, _SERVICE_TYPES))
    node_ports: set[tuple[object, object]] = set()
    port_keys: set[tuple[object, object]] = set()
    for i, port in enumerate(ports):
        path = index_path("spec.ports", i)
        node_port = port.get("nodePort")
        if kind == "ClusterIP" and node_port:
            errs.append(
                forbidden(
                    child_path(path, "nodePort"), "may not be used when `type` is 'ClusterIP'"
                )
            )
        if node_port:
            key = (port.get("protocol"), node_port)
            if key in node_ports:
                errs.append(duplicate(child_path(path, "nodePort"), node_port))
            node_ports.add(key)
        port_key = (port.get("protocol"), port.get("port"))
        if port_key in port_keys:
            errs.append(duplicate(path, _go_service_port(str(port_key[0]), port_key[1])))
        port_keys.add(port_key)
    ranges = as_list(errs, spec.get("loadBalancerSourceRanges"), "spec.loadBalancerSourceRanges")
    if ranges:
        path = "spec.LoadBalancerSourceRanges"
        if kind != "LoadBalancer":
            errs.append(forbidden(path, "may only be used when `type` is 'LoadBalancer'"))
        for i, value in enumerate(ranges):
            text = str(value).strip()
            try:
                ipaddress.ip_network(text, strict=False)
                if "/" not in text:
                    raise ValueError(text)
            except ValueError:
                errs.append(
                    invalid(
                        index_path(path, i),
                        text,
                        "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                    )
                )
    allocate = spec.get("allocateLoadBalancerNodePorts")
    check_bool(errs, allocate, "spec.allocateLoadBalancerNodePorts")
    if allocate is not None and kind != "LoadBalancer":
        errs.append(
            forbidden(
                "spec.allocateLoadBalancerNodePorts",
                "may only be used when `type` is 'LoadBalancer'",
            )
        )
    if kind == "LoadBalancer" and allocate is None:
        errs.append(required("allocateLoadBalancerNodePorts"))
    _validate_traffic_policies(errs, spec)


def _validate_client_ip_affinity(errs: list[FieldError], config: object) -> None:
    """Upstream ``validateClientIPAffinityConfig``."""
    path = "spec.sessionAffinityConfig"
    detail = "when session affinity type is ClientIP"
    if config is None:
        errs.append(required(path, detail))
        return
    client_ip = as_map(errs, config, path).get("clientIP")
    if client_ip is None:
        errs.append(required(child_path(path, "clientIP"), detail))
        return
    timeout_path = child_path(path, "clientIP.timeoutSeconds")
    raw = as_map(errs, client_ip, child_path(path, "clientIP")).get("timeoutSeconds")
    if raw is None:
        errs.append(required(timeout_path, detail))
        return
    timeout = as_int(errs, raw, timeout_path)
    if timeout is not None and not 0 < timeout <= _MAX_AFFINITY_SECONDS:
        errs.append(
            invalid(
                timeout_path,
                timeout,
                f"must be greater than 0 and less than {_MAX_AFFINITY_SECONDS}",
            )
        )


def _validate_traffic_policies(errs: list[FieldError], spec: Mapping[str, Any]) -> None:
    external = spec.get("externalTrafficPolicy") or ""
    if not externally_accessible(spec):
        if external:
            errs.append(
                invalid(
                    "spec.externalTrafficPolicy",
                    external,
                    "may only be set for externally-accessible services",
                )
            )
    elif not external:
        errs.append(required("spec.externalTrafficPolicy"))
    elif external not in _TRAFFIC_POLICIES:
        errs.append(not_supported("spec.externalTrafficPolicy", external, _TRAFFIC_POLICIES))
    health = as_int(errs, spec.get("healthCheckNodePort"), "spec.healthCheckNodePort") or 0
    if not _needs_health_check(spec):
        if health:
            errs.append(
                invalid(
                    "spec.healthCheckNodePort",
                    health,
                    "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` "
                    "is 'Local'",
                )
            )
    elif not health:
        errs.append(required("spec.healthCheckNodePort"))
    elif not 1 <= health <= 65535:
        errs.append(invalid("spec.healthCheckNodePort", health, _PORT_RANGE_MSG))
    internal = spec.get("internalTrafficPolicy")
    if internal is None:
        if spec.get("type") in ("NodePort", "LoadBalancer", "ClusterIP"):
            errs.append(required("spec.internalTrafficPolicy"))
    elif internal not in _TRAFFIC_POLICIES:
        errs.append(not_supported("spec.internalTrafficPolicy", internal, _TRAFFIC_POLICIES))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution != "PreferClose":
        errs.append(not_supported("spec.trafficDistribution", distribution, ("PreferClose",)))


def _cluster_ips(spec: Mapping[str, Any]) -> list[str]:
    ips = spec.get("clusterIPs")
    return [str(ip) for ip in ips] if isinstance(ips, list) else []


def validate_service_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateServiceUpdate``: cluster IPs may be added or released, never
    changed; a health check node port stays."""
    validate_object_meta_update(errs, new, old)
    new_spec = new.get("spec") if isinstance(new.get("spec"), Mapping) else {}
    old_spec = old.get("spec") if isinstance(old.get("spec"), Mapping) else {}
    assert isinstance(new_spec, Mapping) and isinstance(old_spec, Mapping)
    if "ExternalName" not in (new_spec.get("type"), old_spec.get("type")) and not (
        is_headless(new_spec) and is_headless(old_spec)
    ):
        new_ips, old_ips = _cluster_ips(new_spec), _cluster_ips(old_spec)
        shown = go_string_list(new_ips)
        path = "spec.clusterIPs[0]"
        if len(old_ips) == len(new_ips):
            for i, ip in enumerate(old_ips):
                if ip != new_ips[i]:
                    errs.append(
                        invalid(index_path("spec.clusterIPs", i), shown, "may not change once set")
                    )
        elif len(old_ips) > len(new_ips):
            if not new_ips:
                errs.append(invalid(path, shown, "primary clusterIP can not be unset"))
            elif new_ips[0] != old_ips[0]:
                errs.append(invalid(path, shown, "may not change once set"))
            if len(new_ips) == 1 and new_spec.get("ipFamilyPolicy") != "SingleStack":
                errs.append(
                    invalid(
                        path,
                        shown,
                        "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the "
                        "secondary clusterIP",
                    )
                )
        elif old_ips and new_ips[0] != old_ips[0]:
            errs.append(invalid(path, shown, "may not change once set"))
    if (
        _needs_health_check(old_spec)
        and _needs_health_check(new_spec)
        and new_spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort")
    ):
        errs.append(forbidden("spec.healthCheckNodePort", IMMUTABLE_MSG))
    validate_service(errs, new)


def validate_service_status_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """Upstream ``ValidateServiceStatusUpdate``: the load balancer's ingress addresses."""
    validate_status_metadata(errs, new, old)
    status = as_map(errs, new.get("status"), "status")
    balancer = as_map(errs, status.get("loadBalancer"), "status.loadBalancer")
    path = "status.loadBalancer.ingress"
    for i, ingress in enumerate(objects_in(as_list(errs, balancer.get("ingress"), path))):
        ip = as_str(errs, ingress.get("ip"), child_path(index_path(path, i), "ip"))
        if ip:
            ip_errors(errs, ip, child_path(index_path(path, i), "ip"))


# -- Endpoints and EndpointSlices ------------------------------------------------------------


def _validate_endpoint_address(
    errs: list[FieldError], address: Mapping[str, Any], path: str
) -> None:
    ip = as_str(errs, address.get("ip"), child_path(path, "ip"))
    ip_errors(errs, ip, child_path(path, "ip"))
    hostname = as_str(errs, address.get("hostname"), child_path(path, "hostname"))
    if hostname:
        errs.extend(
            invalid(child_path(path, "hostname"), hostname, msg)
            for msg in dns1123_label_errors(hostname)
        )
    node = address.get("nodeName")
    if node is not None:
        text = as_str(errs, node, child_path(path, "nodeName"))
        errs.extend(
            invalid(child_path(path, "nodeName"), text, msg)
            for msg in name_is_dns_subdomain(text, False)
        )
    _special_ip_errors(errs, ip, child_path(path, "ip"))


def _validate_endpoint_port(
    errs: list[FieldError], port: Mapping[str, Any], path: str, *, require_name: bool
) -> None:
    name = as_str(errs, port.get("name"), child_path(path, "name"))
    if require_name and not name:
        errs.append(required(child_path(path, "name")))
    elif name:
        errs.extend(
            invalid(child_path(path, "name"), name, msg) for msg in dns1123_label_errors(name)
        )
    _port_num_errors(errs, port.get("port"), child_path(path, "port"))
    protocol = as_str(errs, port.get("protocol"), child_path(path, "protocol"))
    if not protocol:
        errs.append(required(child_path(path, "protocol")))
    elif protocol not in _PROTOCOLS:
        errs.append(not_supported(child_path(path, "protocol"), protocol, _PROTOCOLS))


def validate_endpoints(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Upstream ``ValidateEndpoints``: every subset has addresses; ports named when several."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    for i, subset in enumerate(objects_in(as_list(errs, obj.get("subsets"), "subsets"))):
        path = index_path("subsets", i)
        addresses = objects_in(
            as_list(errs, subset.get("addresses"), child_path(path, "addresses"))
        )
        not_ready = objects_in(
            as_list(errs, subset.get("notReadyAddresses"), child_path(path, "notReadyAddresses"))
        )
        if not addresses and not not_ready:
            errs.append(required(path, "must specify `addresses` or `notReadyAddresses`"))
        for j, address in enumerate(addresses):
            _validate_endpoint_address(errs, address, index_path(child_path(path, "addresses"), j))
        for j, address in enumerate(not_ready):
            _validate_endpoint_address(
                errs, address, index_path(child_path(path, "notReadyAddresses"), j)
            )
        ports = objects_in(as_list(errs, subset.get("ports"), child_path(path, "ports")))
        for j, port in enumerate(ports):
            _validate_endpoint_port(
                errs, port, index_path(child_path(path, "ports"), j), require_name=len(ports) > 1
            )


def validate_endpoint_slice(errs: list[FieldError], obj: Mapping[str, Any]) -> None:
    """Discovery's ``ValidateEndpointSlice``: the address type, addresses of that type, ports."""
    validate_object_meta(errs, obj, namespaced=True, name_fn=name_is_dns_subdomain)
    address_type = as_str(errs, obj.get("addressType"), "addressType")
    if not address_type:
        errs.append(required("addressType"))
    elif address_type not in _ADDRESS_TYPES:
        errs.append(not_supported("addressType", address_type, _ADDRESS_TYPES))
    endpoints = objects_in(as_list(errs, obj.get("endpoints"), "endpoints"))
    for i, endpoint in enumerate(endpoints):
        path = index_path("endpoints", i)
        addresses = as_list(errs, endpoint.get("addresses"), child_path(path, "addresses"))
        if not addresses:
            errs.append(required(child_path(path, "addresses"), "must contain at least 1 address"))
        for j, address in enumerate(addresses):
            apath = index_path(child_path(path, "addresses"), j)
            text = as_str(errs, address, apath)
            parsed = _parse_ip(text)
            if address_type == "IPv4" and (parsed is None or parsed.version != 4):
                errs.append(invalid(apath, text, "must be a valid IPv4 address"))
            elif address_type == "IPv6" and (parsed is None or parsed.version != 6):
                errs.append(invalid(apath, text, "must be a valid IPv6 address"))
            elif address_type == "FQDN":
                errs.extend(invalid(apath, text, msg) for msg in name_is_dns_subdomain(text, False))
        hostname = endpoint.get("hostname")
        if hostname is not None:
            text = as_str(errs, hostname, child_path(path, "hostname"))
            errs.extend(
                invalid(child_path(path, "hostname"), text, msg)
                for msg in dns1123_label_errors(text)
            )
    names: set[str] = set()
    for i, port in enumerate(objects_in(as_list(errs, obj.get("ports"), "ports"))):
        path = index_path("ports", i)
        name = as_str(errs, port.get("name"), child_path(path, "name"))
        if name:
            errs.extend(
                invalid(child_path(path, "name"), name, msg) for msg in dns1123_label_errors(name)
            )
        if name in names:
            errs.append(duplicate(child_path(path, "name"), name))
        names.add(name)
        protocol = port.get("protocol")
        if protocol is not None and protocol not in _PROTOCOLS:
            errs.append(not_supported(child_path(path, "protocol"), protocol, _PROTOCOLS))
        number = port.get("port")
        if number is not None:
            _port_num_errors(errs, number, child_path(path, "port"))


def validate_endpoint_slice_update(
    errs: list[FieldError], new: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """The address type never changes."""
    validate_object_meta_update(errs, new, old)
    validate_endpoint_slice(errs, new)
    if new.get("addressType") != old.get("addressType"):
        errs.append(invalid("addressType", new.get("addressType") or "", IMMUTABLE_MSG))
