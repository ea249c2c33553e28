"""The server itself: authentication, health, /metrics, errors, and a kind served from its
registry entry alone, on a real socket."""

from __future__ import annotations

from pathlib import Path

from inplace.apiserver.auth import MASTERS_GROUP, TokenFile
from inplace.apiserver.server import APIServer, APIServerConfig
from tests.apiserver.gizmo import GIZMO_REGISTRY, gizmo
from tests.apiserver.support import PODS, make_api
from tests.conftest import InProcessServer

GIZMOS = "/apis/example.inplace.dev/v1/namespaces/default/gizmos"


async def test_health_and_metrics(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        async with session.get(apiserver.url + "/readyz") as response:
            assert await response.text() == "ok"
        async with session.get(apiserver.url + "/livez?verbose") as response:
            assert "livez check passed" in await response.text()
        await api.call("GET", PODS)
        async with session.get(apiserver.url + "/metrics", headers=apiserver.headers()) as response:
            text = await response.text()
        assert 'apiserver_request_total{code="200"' in text
        assert "apiserver_request_duration_seconds_bucket" in text


async def test_an_unknown_token_is_401_no_token_anonymous_and_health_needs_none(
    apiserver: InProcessServer,
) -> None:
    _, session = await make_api(apiserver)
    async with session:
        bad = {"Authorization": "Bearer not-a-token"}
        async with session.get(apiserver.url + PODS, headers=bad) as response:
            assert response.status == 401
            body = await response.json()
        assert body["kind"] == "Status" and body["reason"] == "Unauthorized"
        async with session.get(apiserver.url + PODS) as response:
            assert response.status == 403  # system:anonymous may read no pods
            body = await response.json()
        assert 'User "system:anonymous" cannot list resource "pods"' in body["message"]
        async with session.get(apiserver.url + "/healthz") as response:
            assert response.status == 200


async def test_unknown_paths_and_methods_answer_a_status(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, body = await api.call("GET", "/api/v1/widgets")
        assert status == 404 and body["kind"] == "Status"
        assert body["message"] == (
            'the server could not find the requested resource ("/api/v1/widgets")'
        )
        status, body = await api.call("PUT", PODS, {})
        assert status == 405 and body["reason"] == "MethodNotAllowed"


async def test_a_body_over_3_mib_is_413_and_one_at_the_limit_is_read(
    apiserver: InProcessServer,
) -> None:
    """Upstream's limit (MaxRequestBodyBytes): 3 MiB is read, one byte more is refused with
    its Status, for every verb with a body; nothing is stored."""
    limit = 3 * 1024 * 1024
    _, session = await make_api(apiserver)
    headers = {**apiserver.headers(), "Content-Type": "application/json"}
    async with session:
        at_limit = b"{" + b" " * (limit - 1)  # read in full, then refused as malformed JSON
        async with session.post(apiserver.url + PODS, data=at_limit, headers=headers) as response:
            assert response.status == 400
        for method, path in (("POST", PODS), ("PUT", f"{PODS}/big"), ("PATCH", f"{PODS}/big")):
            over = b"{" + b" " * limit
            async with session.request(
                method, apiserver.url + path, data=over, headers=headers
            ) as response:
                assert response.status == 413, method
                body = await response.json()
            assert body == {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "Request entity too large: limit is 3145728",
                "reason": "RequestEntityTooLarge",
                "code": 413,
            }
        async with session.get(apiserver.url + f"{PODS}/big", headers=headers) as response:
            assert response.status == 404


async def test_a_kind_is_served_from_its_registry_entry_alone(tmp_path: Path) -> None:
    """Routing, discovery, OpenAPI, storage, REST and tables for a kind no code knows: one
    `Kind(...)` entry with its strategy (`tests.apiserver.gizmo`) is all it takes."""
    tokens = TokenFile(tmp_path / "tokens.csv")
    admin = tokens.token_for("admin", (MASTERS_GROUP,))
    config = APIServerConfig(data_dir=tmp_path / "apiserver", port=0, tokens=tokens)
    server = APIServer(config, registry=GIZMO_REGISTRY)
    await server.start()
    try:
        api, session = await make_api(
            InProcessServer(server, f"http://127.0.0.1:{server.port}", admin, tokens)
        )
        async with session:
            status, discovery = await api.call("GET", "/apis/example.inplace.dev/v1")
            assert status == 200
            resources = {r["name"]: r for r in discovery["resources"]}
            assert set(resources) == {"gizmos", "gizmos/status", "gizmos/tune"}
            assert resources["gizmos"]["shortNames"] == ["gz"]
            status, openapi = await api.call("GET", "/openapi/v3/apis/example.inplace.dev/v1")
            assert status == 200
            tune = "/apis/example.inplace.dev/v1/namespaces/{namespace}/gizmos/{name}/tune"
            assert set(openapi["paths"][tune]) >= {"get", "put", "patch"}

            status, created = await api.call("POST", GIZMOS, gizmo())
            assert (status, created["spec"], created["status"]) == (
                201,
                {"replicas": 1},
                {"replicas": 0},
            )
            status, table = await api.call(
                "GET", GIZMOS, Accept="application/json;as=Table;v=v1;g=meta.k8s.io"
            )
            assert status == 200
            assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Replicas"]
            assert [r["cells"] for r in table["rows"]] == [["g", 1]]
            status, tuned = await api.call(
                "PATCH",
                f"{GIZMOS}/g/tune",
                {"spec": {"replicas": 4}, "metadata": {"labels": {"x": "y"}}},
                "application/merge-patch+json",
            )
            assert (status, tuned["spec"], tuned["metadata"].get("labels")) == (
                200,
                {"replicas": 4},
                None,
            )
            status, listed = await api.call("GET", f"{GIZMOS}?fieldSelector=spec.replicas%3D4")
            assert (status, [g["metadata"]["name"] for g in listed["items"]]) == (200, ["g"])
            status, listed = await api.call("GET", f"{GIZMOS}?fieldSelector=spec.replicas%3D5")
            assert (status, listed["items"]) == (200, [])
            status, error = await api.call("GET", f"{GIZMOS}?fieldSelector=spec.paused%3Dtrue")
            assert (status, error["message"]) == (400, "field label not supported: spec.paused")
            status, error = await api.call(
                "PUT", f"{GIZMOS}/g/status", tuned | {"status": {"readyReplicas": 9}}
            )
            assert (status, error["reason"]) == (422, "Invalid")
            assert error["details"]["causes"] == [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: 9: must not exceed spec.replicas",
                    "field": "status.readyReplicas",
                }
            ]
    finally:
        await server.stop()
