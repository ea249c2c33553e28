"""What a Service is given: cluster IPs, node ports, IP families; what an update keeps."""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.api.validation import ValidationError
from inplace.registry.services import (
    KUBERNETES_SERVICE_IP,
    NODE_PORT_RANGE,
    SERVICE_CIDR,
    allocate_service,
    pick_free,
    prepare_service_for_update,
)


class Objects:
    """An ObjectReader over a list of stored services."""

    def __init__(self, services: Iterable[dict[str, Any]] = ()) -> None:
        self.services = list(services)

    def get(
        self, group: str, kind: str, name: str, namespace: str | None = None
    ) -> Mapping[str, Any] | None:
        return None

    def list(self, group: str, kind: str) -> list[dict[str, Any]]:
        return self.services if kind == "Service" else []


def svc(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}], **spec},
    }


def errors(obj: dict[str, Any], objects: Objects) -> list[str]:
    with pytest.raises(ValidationError) as info:
        allocate_service(obj, objects)
    return [e.message() for e in info.value.errors]


def test_a_new_service_gets_an_address_of_the_range_and_its_families() -> None:
    obj = svc()
    allocate_service(obj, Objects(), rng=random.Random(1))
    spec = obj["spec"]
    assert ipaddress.ip_address(spec["clusterIP"]) in SERVICE_CIDR
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert obj["status"] == {"loadBalancer": {}}
    # Handed out above the static band, which is kept for addresses asked for by value.
    static_top = int(SERVICE_CIDR.network_address) + 256
    assert int(ipaddress.ip_address(spec["clusterIP"])) > static_top


def test_an_address_asked_for_is_checked() -> None:
    taken = svc("kubernetes", clusterIP=KUBERNETES_SERVICE_IP, clusterIPs=[KUBERNETES_SERVICE_IP])
    assert errors(svc(clusterIP=KUBERNETES_SERVICE_IP), Objects([taken])) == [
        'spec.clusterIPs: Invalid value: []string{"10.96.0.1"}: failed to allocate IP '
        "10.96.0.1: provided IP is already allocated"
    ]
    assert errors(svc(clusterIP="192.168.0.1"), Objects()) == [
        'spec.clusterIPs: Invalid value: []string{"192.168.0.1"}: failed to allocate IP '
        "192.168.0.1: the provided IP (192.168.0.1) is not in the valid range. The range of "
        "valid IPs is 10.96.0.0/12"
    ]
    mine = svc(clusterIP="10.96.0.42")
    allocate_service(mine, Objects())
    assert mine["spec"]["clusterIPs"] == ["10.96.0.42"]


def test_headless_and_external_name_services_get_no_address() -> None:
    headless = svc(clusterIP="None")
    allocate_service(headless, Objects())
    assert headless["spec"]["clusterIPs"] == ["None"]
    external = svc(type="ExternalName", externalName="db.example.com")
    allocate_service(external, Objects())
    assert "clusterIP" not in external["spec"] and "ipFamilies" not in external["spec"]


def test_node_ports() -> None:
    first = svc(type="NodePort", ports=[{"port": 80}, {"port": 443, "nodePort": 30443}])
    allocate_service(first, Objects())
    ports = [p["nodePort"] for p in first["spec"]["ports"]]
    assert ports[1] == 30443 and NODE_PORT_RANGE[0] <= ports[0] <= NODE_PORT_RANGE[1]
    again = svc("other", type="NodePort", ports=[{"port": 80, "nodePort": 30443}])
    assert errors(again, Objects([first])) == [
        "spec.ports[0].nodePort: Invalid value: 30443: provided port is already allocated"
    ]
    outside = svc("other", type="NodePort", ports=[{"port": 80, "nodePort": 8080}])
    assert errors(outside, Objects()) == [
        "spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. "
        "The range of valid ports is 30000-32767"
    ]


def test_dual_stack_is_refused_on_this_cluster() -> None:
    assert errors(svc(ipFamilyPolicy="RequireDualStack"), Objects()) == [
        'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not '
        "configured for dual-stack services"
    ]


def test_replace_keeps_what_was_allocated() -> None:
    """``kubectl replace -f`` of the original manifest: no clusterIP, no nodePort."""
    stored = svc(type="NodePort", ports=[{"name": "http", "port": 80}])
    allocate_service(stored, Objects())
    replaced = svc(type="NodePort", ports=[{"name": "http", "port": 80}])
    prepare_service_for_update(replaced, stored)
    allocate_service(replaced, Objects([stored]), stored)
    assert replaced["spec"]["clusterIP"] == stored["spec"]["clusterIP"]
    assert replaced["spec"]["ports"] == stored["spec"]["ports"]


def test_becoming_external_name_drops_the_address() -> None:
    stored = svc()
    allocate_service(stored, Objects())
    changed = {**stored, "spec": {**stored["spec"], "type": "ExternalName"}}
    changed["spec"]["externalName"] = "db.example.com"
    prepare_service_for_update(changed, stored)
    assert not {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"} & set(changed["spec"])


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=64), st.integers(min_value=0, max_value=2**32))
def test_pick_free_never_hands_out_a_used_value(count: int, seed: int) -> None:
    rng = random.Random(seed)
    used: set[int] = set()
    for _ in range(count):
        value = pick_free(0, 63, used, rng)
        assert value is not None and value not in used and 0 <= value <= 63
        used.add(value)
    if count == 64:
        assert pick_free(0, 63, used, rng) is None


def test_allocations_in_sequence_are_unique() -> None:
    stored: list[dict[str, Any]] = []
    rng = random.Random(7)
    for i in range(200):
        obj = svc(f"s{i}", type="NodePort")
        allocate_service(obj, Objects(stored), rng=rng)
        stored.append(obj)
    ips = [s["spec"]["clusterIP"] for s in stored]
    ports = [s["spec"]["ports"][0]["nodePort"] for s in stored]
    assert len(set(ips)) == len(ips) and len(set(ports)) == len(ports)
