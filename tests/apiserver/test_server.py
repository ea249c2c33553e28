"""The server itself: authentication, health, /metrics and errors on a real socket."""

from __future__ import annotations

from tests.apiserver.support import PODS, make_api
from tests.conftest import InProcessServer


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


async def test_a_missing_or_unknown_token_is_401_and_health_needs_none(
    apiserver: InProcessServer,
) -> None:
    _, session = await make_api(apiserver)
    async with session:
        for headers in ({}, {"Authorization": "Bearer not-a-token"}):
            async with session.get(apiserver.url + PODS, headers=headers) as response:
                assert response.status == 401
                body = await response.json()
            assert body["kind"] == "Status" and body["reason"] == "Unauthorized"
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
