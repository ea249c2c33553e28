"""Services, Endpoints and EndpointSlices: upstream's printers (``printService``,
``printEndpoints``, ``printEndpointSlice``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from inplace.api.tables.printer import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Row,
    TablePrinter,
    age,
    format_labels,
    get_path,
    list_at,
    name_of,
    text_at,
)

__all__ = ["ENDPOINTS_TABLE", "ENDPOINT_SLICE_TABLE", "SERVICE_TABLE"]

_TYPE_DOC: Final = (
    "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are "
    'ExternalName, ClusterIP, NodePort, and LoadBalancer. "ClusterIP" allocates a cluster-'
    "internal IP address for load-balancing to endpoints. Endpoints are determined by the "
    "selector or if that is not specified, by manual construction of an Endpoints object or "
    'EndpointSlice objects. If clusterIP is "None", no virtual IP is allocated and the '
    'endpoints are published as a set of endpoints rather than a virtual IP. "NodePort" '
    "builds on ClusterIP and allocates a port on every node which routes to the same "
    'endpoints as the clusterIP. "LoadBalancer" builds on NodePort and creates an external '
    "load-balancer (if supported in the current cloud) which routes to the same endpoints as "
    'the clusterIP. "ExternalName" aliases this service to the specified externalName. '
    "Several other fields do not apply to ExternalName services. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-"
    "service-types"
)
_CLUSTER_IP_DOC: Final = (
    "clusterIP is the IP address of the service and is usually assigned randomly. If an "
    "address is specified manually, is in-range (as per system configuration), and is not in "
    "use, it will be allocated to the service; otherwise creation of the service will fail. "
    "This field may not be changed through updates unless the type field is also being "
    "changed to ExternalName (which requires this field to be blank) or the type field is "
    "being changed from ExternalName (in which case this field may optionally be specified, "
    'as describe above).  Valid values are "None", empty string (""), or a valid IP address. '
    'Setting this to "None" makes a "headless service" (no virtual IP), which is useful when '
    "direct endpoint connections are preferred and proxying is not required.  Only applies to"
    " types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a"
    " Service of type ExternalName, creation will fail. This field will be wiped when "
    "updating a Service to type ExternalName. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-"
    "service-proxies"
)
_EXTERNAL_IPS_DOC: Final = (
    "externalIPs is a list of IP addresses for which nodes in the cluster will also accept "
    "traffic for this service.  These IPs are not managed by Kubernetes.  The user is "
    "responsible for ensuring that traffic arrives at a node with this IP.  A common example "
    "is external load-balancers that are not part of the Kubernetes system."
)
_PORTS_DOC: Final = (
    "The list of ports that are exposed by this service. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-"
    "service-proxies"
)
_SELECTOR_DOC: Final = (
    "Route service traffic to pods with label keys and values matching this selector. If "
    "empty or not present, the service is assumed to have an external process managing its "
    "endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, "
    "and LoadBalancer. Ignored if type is ExternalName. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/"
)
_SUBSETS_DOC: Final = (
    "The set of all endpoints is the union of all subsets. Addresses are placed into subsets "
    "according to the IPs they share. A single address with multiple ports, some of which are"
    " ready and some of which are not (because they come from different containers) will "
    "result in the address being displayed in different subsets for the different ports. No "
    "address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of "
    "addresses and ports that comprise a service."
)
_ADDRESS_TYPE_DOC: Final = (
    "addressType specifies the type of address carried by this EndpointSlice. All addresses "
    "in this slice must be the same type. This field is immutable after creation. The "
    "following address types are currently supported: * IPv4: Represents an IPv4 Address. * "
    "IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. "
    "(Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes,"
    ' slices of addressType "IPv4" and "IPv6". No semantics are defined for the "FQDN" type.'
)
_SLICE_PORTS_DOC: Final = (
    "ports specifies the list of network ports exposed by each endpoint in this slice. Each "
    "port must have a unique name. Each slice may include a maximum of 100 ports. Services "
    "always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller"
    " will likewise always have at least 1 port. EndpointSlices used for other purposes may "
    "have an empty ports list."
)
_SLICE_ENDPOINTS_DOC: Final = (
    "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum "
    "of 1000 endpoints."
)
_MAX_LISTED: Final = 3


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _external_ip(spec: Mapping[str, Any], status: Any) -> str:
    """Upstream ``getServiceExternalIP`` (wide: load balancer addresses are not cut)."""
    kind = spec.get("type")
    external = _strings(spec.get("externalIPs"))
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        found = set()
        for ingress in list_at(status, "loadBalancer", "ingress"):
            address = ingress.get("ip") or ingress.get("hostname")
            if address:
                found.add(str(address))
        balancers = sorted(found)
        if external:
            return ",".join([*balancers, *external])
        return ",".join(balancers) if balancers else "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _ports(ports: list[Mapping[str, Any]]) -> str:
    """Upstream ``makePortString``: ``80/TCP``, ``80:30080/TCP``."""
    pieces = []
    for port in ports:
        protocol = port.get("protocol") or ""
        if port.get("nodePort"):
            pieces.append(f"{port.get('port')}:{port.get('nodePort')}/{protocol}")
        else:
            pieces.append(f"{port.get('port')}/{protocol}")
    return ",".join(pieces)


def _print_service(svc: Mapping[str, Any], now: datetime) -> Row:
    spec = get_path(svc, "spec")
    spec = spec if isinstance(spec, Mapping) else {}
    ips = _strings(spec.get("clusterIPs"))
    ports = _ports(list_at(svc, "spec", "ports")) or "<none>"
    cells = [
        name_of(svc),
        text_at(svc, "spec", "type"),
        ips[0] if ips else "<none>",
        _external_ip(spec, get_path(svc, "status")),
        ports,
        age(svc, now),
        format_labels(spec.get("selector")),
    ]
    return cells, None


def _more(listed: list[str], count: int, *, unset: str) -> str:
    """Upstream ``listWithMoreString``: three, then ``+ N more...``."""
    text = ",".join(listed)
    if count > len(listed):
        return f"{text} + {count - len(listed)} more..."
    return text or unset


def _host_port(ip: str, port: object) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _format_endpoints(endpoints: Mapping[str, Any]) -> str:
    """Upstream ``formatEndpoints``: up to three ``ip:port`` (``ip`` without ports)."""
    subsets = list_at(endpoints, "subsets")
    if not subsets:
        return "<none>"
    listed: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [str(a.get("ip") or "") for a in list_at(subset, "addresses")]
        ports = list_at(subset, "ports")
        if not ports:
            count += len(addresses)
            listed.extend(addresses[: max(0, _MAX_LISTED - len(listed))])
            continue
        for port in ports:
            count += len(addresses)
            for ip in addresses:
                if len(listed) < _MAX_LISTED:
                    listed.append(_host_port(ip, port.get("port")))
    return _more(listed, count, unset="")


def _print_endpoints(ep: Mapping[str, Any], now: datetime) -> Row:
    return [name_of(ep), _format_endpoints(ep), age(ep, now)], None


def _print_endpoint_slice(eps: Mapping[str, Any], now: datetime) -> Row:
    ports = []
    for port in list_at(eps, "ports"):
        number = port.get("port")
        ports.append(str(number) if number is not None else str(port.get("name") or "*"))
    addresses = [
        str(address)
        for endpoint in list_at(eps, "endpoints")
        for address in _strings(endpoint.get("addresses"))
    ]
    cells = [
        name_of(eps),
        text_at(eps, "addressType"),
        _more(ports[:_MAX_LISTED], len(ports), unset="<unset>"),
        _more(addresses[:_MAX_LISTED], len(addresses), unset="<unset>"),
        age(eps, now),
    ]
    return cells, None


SERVICE_TABLE: Final = TablePrinter(
    (
        NAME_COLUMN,
        Column("Type", "string", _TYPE_DOC),
        Column("Cluster-IP", "string", _CLUSTER_IP_DOC),
        Column("External-IP", "string", _EXTERNAL_IPS_DOC),
        Column("Port(s)", "string", _PORTS_DOC),
        AGE_COLUMN,
        Column("Selector", "string", _SELECTOR_DOC, priority=1),
    ),
    _print_service,
)
ENDPOINTS_TABLE: Final = TablePrinter(
    (NAME_COLUMN, Column("Endpoints", "string", _SUBSETS_DOC), AGE_COLUMN), _print_endpoints
)
ENDPOINT_SLICE_TABLE: Final = TablePrinter(
    (
        NAME_COLUMN,
        Column("AddressType", "string", _ADDRESS_TYPE_DOC),
        Column("Ports", "string", _SLICE_PORTS_DOC),
        Column("Endpoints", "string", _SLICE_ENDPOINTS_DOC),
        AGE_COLUMN,
    ),
    _print_endpoint_slice,
)
