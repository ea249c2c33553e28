"""What the cluster has before anyone creates anything, and what the API server puts back:
the kubernetes Service with its Endpoints and EndpointSlice, a default ServiceAccount in
every namespace. And the kinds built on them over real HTTP: Secrets decode as Go decodes,
Services are allocated, pods need their ServiceAccount."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from tests.apiserver.support import PODS, make_api, pod
from tests.conftest import InProcessServer
from tests.poll import await_until

SERVICES = "/api/v1/namespaces/default/services"
SECRETS = "/api/v1/namespaces/default/secrets"


async def test_the_kubernetes_service_points_at_the_api_server(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, svc = await api.call("GET", f"{SERVICES}/kubernetes")
        assert status == 200
        assert svc["spec"]["clusterIP"] == "10.96.0.1"
        assert svc["spec"]["ports"] == [
            {"name": "https", "port": 443, "protocol": "TCP", "targetPort": apiserver.server.port}
        ]
        status, ep = await api.call("GET", "/api/v1/namespaces/default/endpoints/kubernetes")
        assert status == 200
        assert ep["subsets"] == [
            {
                "addresses": [{"ip": "127.0.0.1"}],
                "ports": [{"name": "https", "port": apiserver.server.port, "protocol": "TCP"}],
            }
        ]
        path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"
        status, eps = await api.call("GET", path)
        assert status == 200 and eps["endpoints"][0]["addresses"] == ["127.0.0.1"]
        # Deleted, it comes back.
        status, _ = await api.call("DELETE", "/api/v1/namespaces/default/endpoints/kubernetes")
        assert status == 200

        async def restored() -> bool:
            code, _ = await api.call("GET", "/api/v1/namespaces/default/endpoints/kubernetes")
            return code == 200

        await await_until(restored, timeout=10)


async def test_every_namespace_has_a_default_service_account(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            status, _ = await api.call("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")
            assert status == 200, ns
        status, _ = await api.call("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
        assert status == 201
        # Right away: a pod created just after its namespace finds its account.
        status, created = await api.call(
            "POST", "/api/v1/namespaces/team/pods", {**pod("p"), "metadata": {"name": "p"}}
        )
        assert status == 201, created
        assert created["spec"]["serviceAccountName"] == "default"
        assert created["spec"]["serviceAccount"] == "default"
        sa = "/api/v1/namespaces/team/serviceaccounts/default"
        assert (await api.call("DELETE", sa))[0] == 200

        async def recreated() -> bool:
            return (await api.call("GET", sa))[0] == 200

        await await_until(recreated, timeout=10)


async def test_a_pod_naming_a_missing_account_is_forbidden(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        body = pod("robot")
        body["spec"]["serviceAccountName"] = "robot"
        status, answer = await api.call("POST", PODS, body)
        assert status == 403
        assert answer["message"] == (
            'pods "robot" is forbidden: error looking up service account default/robot: '
            'serviceaccount "robot" not found'
        )
        account = {"metadata": {"name": "robot"}}
        assert (await api.call("POST", "/api/v1/namespaces/default/serviceaccounts", account))[
            0
        ] == 201
        status, created = await api.call("POST", PODS, body)
        assert status == 201 and created["spec"]["serviceAccount"] == "robot"


async def test_secrets_decode_as_go_does(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        bad = {"metadata": {"name": "s"}, "data": {"k": "abcde"}}
        status, answer = await api.call("POST", SECRETS, bad)
        assert status == 400
        assert answer["message"] == (
            'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input '
            "byte 4"
        )
        good = {"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}
        status, created = await api.call("POST", SECRETS, good)
        assert status == 201
        assert created["data"] == {"password": base64.b64encode(b"hunter2").decode()}
        assert "stringData" not in created and created["type"] == "Opaque"
        status, listed = await api.call("GET", f"{SECRETS}?fieldSelector=type%3DOpaque")
        assert [s["metadata"]["name"] for s in listed["items"]] == ["s"]


async def test_concurrent_services_get_distinct_addresses(apiserver: InProcessServer) -> None:
    """Many creates at once: one allocation at a time, so no address or port is handed out
    twice."""
    api, session = await make_api(apiserver)
    async with session:

        async def create(i: int) -> dict[str, Any]:
            body = {
                "metadata": {"name": f"s{i}"},
                "spec": {"type": "NodePort", "ports": [{"port": 80}]},
            }
            status, created = await api.call("POST", SERVICES, body)
            assert status == 201, created
            return created  # type: ignore[no-any-return]

        created = await asyncio.gather(*(create(i) for i in range(30)))
        ips = {s["spec"]["clusterIP"] for s in created}
        ports = {s["spec"]["ports"][0]["nodePort"] for s in created}
        assert len(ips) == 30 and len(ports) == 30 and "10.96.0.1" not in ips
        taken = created[0]["spec"]["clusterIP"]
        status, answer = await api.call(
            "POST",
            SERVICES,
            {"metadata": {"name": "dup"}, "spec": {"clusterIP": taken, "ports": [{"port": 1}]}},
        )
        assert status == 422
        assert answer["details"]["causes"] == [
            {
                "reason": "FieldValueInvalid",
                "message": f'Invalid value: []string{{"{taken}"}}: failed to allocate IP {taken}: '
                "provided IP is already allocated",
                "field": "spec.clusterIPs",
            }
        ]
        # Deleting releases the address.
        assert (await api.call("DELETE", f"{SERVICES}/s0"))[0] == 200
        status, _ = await api.call(
            "POST",
            SERVICES,
            {"metadata": {"name": "dup"}, "spec": {"clusterIP": taken, "ports": [{"port": 1}]}},
        )
        assert status == 201
