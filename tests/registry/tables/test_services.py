"""Services, Endpoints and EndpointSlices, as upstream prints them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.tables.helpers import MINUTE, ago, by_name


def service(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "creationTimestamp": ago(2 * MINUTE)},
        "spec": {"type": "ClusterIP", "clusterIPs": ["10.96.4.2"], **spec},
        "status": {"loadBalancer": {}},
    }


@pytest.mark.parametrize(
    ("obj", "external", "ports"),
    [
        (service(ports=[{"port": 80, "protocol": "TCP"}]), "<none>", "80/TCP"),
        (
            service(
                type="NodePort",
                ports=[
                    {"port": 80, "protocol": "TCP", "nodePort": 30080},
                    {"port": 53, "protocol": "UDP"},
                ],
            ),
            "<none>",
            "80:30080/TCP,53/UDP",
        ),
        (service(externalIPs=["192.0.2.1", "192.0.2.2"]), "192.0.2.1,192.0.2.2", "<none>"),
        (service(type="LoadBalancer"), "<pending>", "<none>"),
        (service(type="ExternalName", externalName="db.example.com"), "db.example.com", "<none>"),
    ],
)
def test_service_rows(obj: dict[str, Any], external: str, ports: str) -> None:
    row = by_name("Service", obj)
    assert row["External-IP"] == external and row["Port(s)"] == ports


def test_service_row() -> None:
    obj = service(ports=[{"port": 80, "protocol": "TCP"}], selector={"tier": "web", "app": "shop"})
    assert by_name("Service", obj) == {
        "Name": "web",
        "Type": "ClusterIP",
        "Cluster-IP": "10.96.4.2",
        "External-IP": "<none>",
        "Port(s)": "80/TCP",
        "Age": "2m",
        "Selector": "app=shop,tier=web",
    }
    headless = service(clusterIPs=None)
    assert by_name("Service", headless)["Cluster-IP"] == "<none>"
    assert by_name("Service", headless)["Selector"] == "<none>"


def test_load_balancer_addresses_are_sorted_and_unique() -> None:
    obj = service(type="LoadBalancer")
    obj["status"]["loadBalancer"]["ingress"] = [
        {"ip": "203.0.113.9"},
        {"hostname": "lb.example.com"},
        {"ip": "203.0.113.9"},
    ]
    assert by_name("Service", obj)["External-IP"] == "203.0.113.9,lb.example.com"


def endpoints(*subsets: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "web", "creationTimestamp": ago(MINUTE)}, "subsets": list(subsets)}


def addresses(*ips: str) -> list[dict[str, str]]:
    return [{"ip": ip} for ip in ips]


@pytest.mark.parametrize(
    ("obj", "shown"),
    [
        (endpoints(), "<none>"),
        (
            endpoints({"addresses": addresses("10.0.0.1"), "ports": [{"port": 80}]}),
            "10.0.0.1:80",
        ),
        (endpoints({"addresses": addresses("10.0.0.1", "10.0.0.2")}), "10.0.0.1,10.0.0.2"),
        (
            endpoints(
                {
                    "addresses": addresses("10.0.0.1", "10.0.0.2"),
                    "ports": [{"port": 80}, {"port": 81}],
                }
            ),
            "10.0.0.1:80,10.0.0.2:80,10.0.0.1:81 + 1 more...",
        ),
        (endpoints({"addresses": addresses("fd00::1"), "ports": [{"port": 80}]}), "[fd00::1]:80"),
    ],
)
def test_endpoints(obj: dict[str, Any], shown: str) -> None:
    assert by_name("Endpoints", obj)["Endpoints"] == shown


def test_endpoint_slice() -> None:
    eps = {
        "metadata": {"name": "web-x1", "creationTimestamp": ago(MINUTE)},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [f"10.0.0.{i}"]} for i in range(1, 6)],
        "ports": [{"port": 80}, {"name": "metrics"}],
    }
    assert by_name("EndpointSlice", eps) == {
        "Name": "web-x1",
        "AddressType": "IPv4",
        "Ports": "80,metrics",
        "Endpoints": "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...",
        "Age": "60s",
    }
    eps.update(endpoints=[], ports=[])
    assert by_name("EndpointSlice", eps)["Ports"] == "<unset>"
    assert by_name("EndpointSlice", eps)["Endpoints"] == "<unset>"
