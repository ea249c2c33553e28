"""Services, Endpoints and EndpointSlices: upstream's rules and messages (the cases of
upstream's ``TestValidateServiceCreate`` / ``TestValidateServiceUpdate`` that apply to a
single-stack cluster)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inplace.registry.kinds import REGISTRY
from inplace.registry.strategy import apply_defaults
from inplace.registry.validation import validate_create, validate_update
from tests.api.validation.builders import create_messages, messages, mutate

SERVICE = REGISTRY.by_kind("", "Service")
ENDPOINTS = REGISTRY.by_kind("", "Endpoints")
SLICE = REGISTRY.by_kind("discovery.k8s.io", "EndpointSlice")
assert SERVICE is not None and ENDPOINTS is not None and SLICE is not None

Change = Callable[[dict[str, Any]], object]


def service(change: Change | None = None) -> dict[str, Any]:
    """A valid ClusterIP service as the API server stores it (defaulted, allocated)."""
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "default", "uid": "u", "creationTimestamp": "t"},
        "spec": {
            "selector": {"app": "web"},
            "ports": [{"port": 80, "targetPort": 8080}],
            "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
        },
    }
    if change is not None:
        change(obj["spec"])
    return apply_defaults(SERVICE, obj)  # type: ignore[arg-type]


def test_valid_services() -> None:
    validate_create(SERVICE, service())
    validate_create(SERVICE, service(lambda s: s.update(type="NodePort")))
    validate_create(
        SERVICE,
        service(lambda s: s.update(ports=None, clusterIP="None", clusterIPs=["None"])),
    )
    validate_create(
        SERVICE,
        service(
            lambda s: s.update(
                type="ExternalName",
                externalName="db.example.com.",
                clusterIP=None,
                clusterIPs=None,
                ipFamilies=None,
                ipFamilyPolicy=None,
            )
        ),
    )
    validate_create(
        SERVICE,
        service(lambda s: s.update(sessionAffinity="ClientIP", externalIPs=["192.0.2.1"])),
    )


PORT_RANGE = "must be between 1 and 65535, inclusive"
CASES: list[tuple[str, Change, list[str]]] = [
    ("missing ports", lambda s: s.update(ports=[]), ["spec.ports: Required value"]),
    (
        "a missing target port is the port",
        lambda s: s.update(ports=[{"port": 443, "targetPort": 0}]),
        [],
    ),
    (
        "invalid port and target port",
        lambda s: s.update(ports=[{"port": 65536, "targetPort": 70000, "protocol": "TCP"}]),
        [
            f"spec.ports[0].port: Invalid value: 65536: {PORT_RANGE}",
            f"spec.ports[0].targetPort: Invalid value: 70000: {PORT_RANGE}",
        ],
    ),
    (
        "several ports need names, unique ones",
        lambda s: s.update(
            ports=[
                {"port": 80, "protocol": "TCP", "targetPort": 80},
                {"name": "p", "port": 81, "protocol": "TCP", "targetPort": 81},
                {"name": "p", "port": 82, "protocol": "TCP", "targetPort": 82},
            ]
        ),
        ["spec.ports[0].name: Required value", 'spec.ports[2].name: Duplicate value: "p"'],
    ),
    (
        "protocol",
        lambda s: s.update(ports=[{"port": 80, "protocol": "ICMP", "targetPort": 80}]),
        [
            'spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", '
            '"TCP", "UDP"'
        ],
    ),
    (
        "same port and protocol twice",
        lambda s: s.update(
            ports=[
                {"name": "a", "port": 80, "protocol": "TCP", "targetPort": 80},
                {"name": "b", "port": 80, "protocol": "TCP", "targetPort": 81},
            ]
        ),
        [
            'spec.ports[1]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", '
            "AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, "
            'IntVal:0, StrVal:""}, NodePort:0}'
        ],
    ),
    (
        "node port on a ClusterIP service",
        lambda s: s["ports"][0].update(nodePort=30080),
        ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"],
    ),
    (
        "type",
        lambda s: s.update(type="Bogus"),
        [
            'spec.type: Unsupported value: "Bogus": supported values: "ClusterIP", '
            '"ExternalName", "LoadBalancer", "NodePort"'
        ],
    ),
    (
        "session affinity",
        lambda s: s.update(sessionAffinity="Sticky"),
        ['spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"'],
    ),
    (
        "client IP affinity timeout",
        lambda s: s.update(
            sessionAffinity="ClientIP",
            sessionAffinityConfig={"clientIP": {"timeoutSeconds": 90000}},
        ),
        [
            "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 90000: must be "
            "greater than 0 and less than 86400"
        ],
    ),
    (
        "cluster IPs must follow clusterIP",
        lambda s: s.update(clusterIPs=["10.96.0.11"]),
        [
            'spec.clusterIPs: Invalid value: []string{"10.96.0.11"}: first value must match '
            "`clusterIP`"
        ],
    ),
    (
        "not an IP",
        lambda s: s.update(clusterIP="ten", clusterIPs=["ten"]),
        [
            'spec.clusterIPs[0]: Invalid value: "ten": must be a valid IP address, (e.g. '
            "10.9.8.7 or 2001:db8::ffff)"
        ],
    ),
    (
        "IP family must match the address",
        lambda s: s.update(clusterIP="fd00::10", clusterIPs=["fd00::10"]),
        [
            'spec.clusterIPs[0]: Invalid value: "fd00::10": expected an IPv4 value as indicated '
            "by `ipFamilies[0]`"
        ],
    ),
    (
        "external IPs may not be loopback",
        lambda s: s.update(externalIPs=["127.0.0.1"]),
        [
            'spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range '
            "(127.0.0.0/8, ::1/128)"
        ],
    ),
    (
        "headless NodePort",
        lambda s: s.update(type="NodePort", clusterIP="None", clusterIPs=["None"]),
        [
            "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort "
            "services"
        ],
    ),
    (
        "ExternalName needs a name and no cluster IP",
        lambda s: s.update(type="ExternalName", ipFamilies=None, ipFamilyPolicy=None),
        [
            "spec.clusterIPs: Forbidden: may not be set for ExternalName services",
            "spec.externalName: Required value",
        ],
    ),
    (
        "external traffic policy only for externally accessible services",
        lambda s: s.update(externalTrafficPolicy="Local"),
        [
            'spec.externalTrafficPolicy: Invalid value: "Local": may only be set for '
            "externally-accessible services"
        ],
    ),
    (
        "internal traffic policy",
        lambda s: s.update(internalTrafficPolicy="Nearby"),
        [
            'spec.internalTrafficPolicy: Unsupported value: "Nearby": supported values: '
            '"Cluster", "Local"'
        ],
    ),
]


@pytest.mark.parametrize(("change", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_service_rules(change: Change, expected: list[str]) -> None:
    obj = service(change)
    if not expected:
        validate_create(SERVICE, obj)
        return
    assert sorted(create_messages(SERVICE, obj)) == sorted(expected)


def test_service_name_is_a_dns_1035_label() -> None:
    obj = mutate(service(), lambda o: o["metadata"].update(name="1web"))
    assert create_messages(SERVICE, obj) == [
        'metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case '
        "alphanumeric characters or '-', start with an alphabetic character, and end with an "
        "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
        "'[a-z]([-a-z0-9]*[a-z0-9])?')"
    ]


def test_cluster_ip_may_not_change() -> None:
    old = service()
    new = service(lambda s: s.update(clusterIP="10.96.0.11", clusterIPs=["10.96.0.11"]))
    assert messages(lambda: validate_update(SERVICE, new, old)) == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.96.0.11"}: may not change once set'
    ]
    validate_update(SERVICE, service(lambda s: s.update(selector={"app": "api"})), old)


def test_endpoints() -> None:
    ok = {
        "metadata": {"name": "web", "namespace": "default"},
        "subsets": [
            {
                "addresses": [{"ip": "10.0.0.5", "hostname": "a"}],
                "ports": [{"port": 8080, "protocol": "TCP"}],
            }
        ],
    }
    validate_create(ENDPOINTS, ok)
    bad = mutate(
        ok,
        lambda o: o["subsets"].append(
            {"ports": [{"port": 1, "protocol": "TCP"}, {"port": 2, "protocol": "TCP"}]}
        ),
    )
    bad["subsets"][0]["addresses"][0]["ip"] = "127.0.0.1"
    assert create_messages(ENDPOINTS, bad) == [
        'subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback '
        "range (127.0.0.0/8, ::1/128)",
        "subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`",
        "subsets[1].ports[0].name: Required value",
        "subsets[1].ports[1].name: Required value",
    ]


def test_endpoint_slices() -> None:
    ok = apply_defaults(
        SLICE,
        {
            "metadata": {"name": "web-abc", "namespace": "default"},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.5"]}],
            "ports": [{"port": 8080}],
        },
    )
    validate_create(SLICE, ok)
    assert ok["ports"] == [{"port": 8080, "name": "", "protocol": "TCP"}]
    bad = mutate(ok, lambda o: o.update(endpoints=[{"addresses": ["fd00::1"]}, {"addresses": []}]))
    assert create_messages(SLICE, bad) == [
        'endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address',
        "endpoints[1].addresses: Required value: must contain at least 1 address",
    ]
    stored = mutate(ok, lambda o: o["metadata"].update(uid="u", creationTimestamp="t"))
    changed = mutate(stored, lambda o: o.update(addressType="IPv6", endpoints=[]))
    assert messages(lambda: validate_update(SLICE, changed, stored)) == [
        'addressType: Invalid value: "IPv6": field is immutable'
    ]
