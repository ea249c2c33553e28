from __future__ import annotations

import base64
import socket
import ssl
from pathlib import Path

import orjson
import pytest
import yaml

from inplace import __version__
from inplace.client import (
    DEPLOYMENTS,
    NODES,
    PODMETRICS,
    PODS,
    VERTICALPODAUTOSCALERS,
    APIAlreadyExistsError,
    APIConflictError,
    APIConnectionError,
    APIGoneError,
    APIInvalidError,
    APINotFoundError,
    APIServerError,
    APITooManyRequestsError,
    APIUnauthorizedError,
    Client,
    ClusterConfig,
    load_kubeconfig,
)

from .certs import PKI
from .fakeserver import FakeAPIServer, pod, status_body


def test_resource_paths() -> None:
    assert PODS.path() == "/api/v1/pods"
    assert PODS.path(namespace="ns") == "/api/v1/namespaces/ns/pods"
    assert PODS.path(namespace="ns", name="p", subresource="resize") == (
        "/api/v1/namespaces/ns/pods/p/resize"
    )
    assert NODES.path(name="n1", subresource="status") == "/api/v1/nodes/n1/status"
    assert DEPLOYMENTS.path(namespace="d") == "/apis/apps/v1/namespaces/d/deployments"
    assert DEPLOYMENTS.api_version == "apps/v1"
    assert VERTICALPODAUTOSCALERS.base_path == "/apis/autoscaling.k8s.io/v1"
    assert PODMETRICS.path(namespace="x") == "/apis/metrics.k8s.io/v1beta1/namespaces/x/pods"
    assert PODS.path(namespace="a b", name="x/y") == "/api/v1/namespaces/a%20b/pods/x%2Fy"
    with pytest.raises(ValueError, match="cluster-scoped"):
        NODES.path(namespace="ns")
    with pytest.raises(ValueError, match="subresource"):
        PODS.path(namespace="ns", subresource="status")


async def test_crud_round_trip(server: FakeAPIServer, client: Client) -> None:
    created = await client.create(PODS, pod("ns", "p1", nodeName="n1"))
    assert created["metadata"]["resourceVersion"]
    got = await client.get(PODS, "p1", namespace="ns")
    assert got == created

    got["spec"]["nodeName"] = "n2"
    updated = await client.update(PODS, got)
    assert updated["spec"]["nodeName"] == "n2"

    patched = await client.patch(PODS, "p1", {"metadata": {"labels": {"a": "b"}}}, namespace="ns")
    assert patched["metadata"]["labels"] == {"a": "b"}
    assert server.objects["ns/p1"]["metadata"]["labels"] == {"a": "b"}

    deleted = await client.delete(
        PODS,
        "p1",
        namespace="ns",
        grace_period_seconds=0,
        propagation_policy="Background",
        preconditions={"uid": created["metadata"]["uid"]},
    )
    assert deleted["metadata"]["name"] == "p1"
    method, _, _, _ = server.requests[-1]
    assert method == "DELETE"
    with pytest.raises(APINotFoundError) as info:
        await client.get(PODS, "p1", namespace="ns")
    assert info.value.reason == "NotFound"
    assert info.value.details == {"name": "p1", "kind": "pods"}


async def test_headers_and_params(server: FakeAPIServer, client: Client) -> None:
    await client.create(PODS, pod("ns", "p1"), field_manager="me", dry_run=True)
    method, path, query, headers = server.requests[-1]
    assert (method, path) == ("POST", "/api/v1/namespaces/ns/pods")
    assert query == {"fieldManager": "me", "dryRun": "All"}
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["User-Agent"] == f"inplace/{__version__}"
    assert headers["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("patch_type", "ctype"),
    [
        ("merge", "application/merge-patch+json"),
        ("strategic", "application/strategic-merge-patch+json"),
        ("json", "application/json-patch+json"),
        ("apply", "application/apply-patch+yaml"),
    ],
)
async def test_patch_content_types(
    server: FakeAPIServer, client: Client, patch_type: str, ctype: str
) -> None:
    server.put(pod("ns", "p"))
    body: object = [{"op": "add", "path": "/x", "value": 1}] if patch_type == "json" else {}
    await client.patch(
        PODS,
        "p",
        body,
        patch_type=patch_type,  # type: ignore[arg-type]
        namespace="ns",
        subresource=None,
    )
    _, _, query, headers = server.requests[-1]
    assert headers["Content-Type"] == ctype
    if patch_type == "apply":
        assert query["fieldManager"] == "inplace"


async def test_subresource_create(server: FakeAPIServer, client: Client) -> None:
    server.put(pod("ns", "victim"))
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "victim", "namespace": "ns"},
    }
    await client.create(PODS, eviction, subresource="eviction")
    assert server.requests[-1][1] == "/api/v1/namespaces/ns/pods/victim/eviction"
    assert "ns/victim" not in server.objects


async def test_namespace_required(client: Client) -> None:
    with pytest.raises(ValueError, match="namespaced"):
        await client.get(PODS, "x")
    with pytest.raises(ValueError, match="namespaced"):
        await client.create(PODS, {"metadata": {"name": "x"}})
    with pytest.raises(ValueError, match="cluster-scoped"):
        await client.get(NODES, "n", namespace="ns")


async def test_error_mapping_from_server(server: FakeAPIServer, client: Client) -> None:
    await client.create(PODS, pod("ns", "p"))
    with pytest.raises(APIAlreadyExistsError):
        await client.create(PODS, pod("ns", "p"))
    stale = await client.get(PODS, "p", namespace="ns")
    server.put(stale)  # someone else writes
    with pytest.raises(APIConflictError) as conflict:
        await client.update(PODS, stale)
    assert not isinstance(conflict.value, APIAlreadyExistsError)
    with pytest.raises(APIInvalidError) as invalid:
        await client.create(PODS, {"metadata": {}}, namespace="ns")
    assert invalid.value.causes[0]["field"] == "metadata.name"


async def test_error_bodies_and_headers(server: FakeAPIServer, client: Client) -> None:
    server.fail_next.append((429, status_body(429, "TooManyRequests", "PDB"), {"Retry-After": "4"}))
    with pytest.raises(APITooManyRequestsError) as tmr:
        await client.get(PODS, "p", namespace="ns")
    assert tmr.value.retry_after == 4.0
    server.fail_next.append((503, b"upstream unavailable", {}))
    with pytest.raises(APIServerError) as err:
        await client.get(PODS, "p", namespace="ns")
    assert err.value.status == 503
    assert err.value.message == "upstream unavailable"
    assert err.value.body is None


async def test_unauthorized(server: FakeAPIServer) -> None:
    async with Client(ClusterConfig(server=server.url, token="wrong")) as c:
        with pytest.raises(APIUnauthorizedError):
            await c.list(PODS)


async def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with Client(ClusterConfig(server=f"http://127.0.0.1:{port}")) as c:
        with pytest.raises(APIConnectionError) as info:
            await c.list(PODS)
    assert info.value.__cause__ is not None


async def test_list_pages_and_list_all(server: FakeAPIServer, client: Client) -> None:
    for i in range(5):
        server.put(pod("ns", f"p{i}"))
    server.put(pod("other", "q"))
    page = await client.list(PODS, namespace="ns", limit=2)
    assert [o["metadata"]["name"] for o in page["items"]] == ["p0", "p1"]
    assert page["metadata"]["continue"]
    page2 = await client.list(PODS, namespace="ns", limit=2, continue_=page["metadata"]["continue"])
    assert [o["metadata"]["name"] for o in page2["items"]] == ["p2", "p3"]

    n = len(server.requests)
    everything = await client.list_all(PODS, namespace="ns", page_size=2)
    assert len(server.requests) - n == 3
    assert [o["metadata"]["name"] for o in everything["items"]] == [f"p{i}" for i in range(5)]
    assert everything["kind"] == "PodList"
    assert everything["metadata"] == {"resourceVersion": str(server.rv)}
    assert len((await client.list_all(PODS))["items"]) == 6


async def test_list_all_restarts_when_continue_expires(
    server: FakeAPIServer, client: Client
) -> None:
    for i in range(5):
        server.put(pod("ns", f"p{i}"))
    first = await client.list(PODS, namespace="ns", limit=2)
    assert first["metadata"]["continue"]

    # Expire tokens right after the first page of list_all is served.
    original = server._list

    def expiring(request, namespace):  # type: ignore[no-untyped-def]
        resp = original(request, namespace)
        if request.query.get("limit"):
            server.snapshots.clear()
        return resp

    server._list = expiring  # type: ignore[method-assign]
    result = await client.list_all(PODS, namespace="ns", page_size=2)
    assert len(result["items"]) == 5
    last_query = server.requests[-1][2]
    assert "limit" not in last_query and "continue" not in last_query


async def test_watch_stream(server: FakeAPIServer, client: Client) -> None:
    start = str(server.rv)
    server.put(pod("ns", "a"))
    server.put(pod("ns", "a", nodeName="n"))
    server.remove("ns", "a")
    server.put(pod("other", "b"))
    events = []
    stream = client.watch(PODS, namespace="ns", resource_version=start, timeout_seconds=5)
    async for ev in stream:
        events.append(ev)
        if len(events) == 3:
            break
    await stream.aclose()
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert events[1].object["spec"] == {"nodeName": "n"}
    assert events[2].resource_version == str(server.rv - 1)
    query = server.watch_requests()[-1]
    assert query == {
        "watch": "true",
        "resourceVersion": start,
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "5",
    }


async def test_watch_ends_when_server_closes(server: FakeAPIServer, client: Client) -> None:
    got = []

    async def consume() -> None:
        async for ev in client.watch(PODS, resource_version=str(server.rv)):
            got.append(ev.type)
            server.close_watches()

    import asyncio

    task = asyncio.create_task(consume())
    async with asyncio.timeout(5):
        while not server.watches:
            await asyncio.sleep(0.001)
    server.put(pod("ns", "x"))
    await asyncio.wait_for(task, 5)
    assert got == ["ADDED"]


async def test_watch_large_event(server: FakeAPIServer, client: Client) -> None:
    start = str(server.rv)
    big = pod("ns", "big")
    big["metadata"]["annotations"] = {"blob": "x" * 600_000}
    server.put(big)
    stream = client.watch(PODS, resource_version=start, timeout_seconds=5)
    ev = await anext(stream)
    await stream.aclose()
    assert len(ev.object["metadata"]["annotations"]["blob"]) == 600_000


@pytest.mark.parametrize("mode", ["event", "http"])
async def test_watch_gone(server: FakeAPIServer, client: Client, mode: str) -> None:
    server.gone_mode = mode  # type: ignore[assignment]
    old = str(server.rv)
    server.put(pod("ns", "a"))
    server.compact()
    with pytest.raises(APIGoneError) as info:
        async for _ in client.watch(PODS, resource_version=old, timeout_seconds=5):
            pass
    assert info.value.reason == "Expired"
    assert info.value.status == 410


async def test_watch_error_event_other_than_gone(server: FakeAPIServer, client: Client) -> None:
    body = orjson.dumps({"type": "ERROR", "object": status_body(500, "InternalError", "x")})
    server.fail_next.append((200, body + b"\n", {"Content-Type": "application/json"}))
    with pytest.raises(APIServerError):
        async for _ in client.watch(PODS, resource_version="1"):
            pass


async def test_raw_request_and_text_stream(server: FakeAPIServer, client: Client) -> None:
    server.put(pod("ns", "p"))
    raw = await client.request("GET", "/api/v1/namespaces/ns/pods/p")
    assert raw["metadata"]["name"] == "p"
    text = await client.request("GET", "/api/v1/namespaces/ns/pods/p/log")
    assert isinstance(text, str) and text.startswith("one\ntwo\n") and text.endswith("tail")
    lines = [line async for line in client.stream("/api/v1/namespaces/ns/pods/p/log")]
    assert lines[0] == "one\n"
    assert lines[1] == "two\n"
    assert lines[2] == "x" * 200_000 + "\n"
    assert lines[3] == "tail"
    assert len(lines) == 4


async def test_tls_with_kubeconfig(tmp_path: Path, pki: PKI) -> None:
    for name, data in [
        ("ca.crt", pki.ca.cert_pem),
        ("server.crt", pki.server.cert_pem),
        ("server.key", pki.server.key_pem),
    ]:
        (tmp_path / name).write_bytes(data)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    server_ctx.load_verify_locations(tmp_path / "ca.crt")
    server_ctx.verify_mode = ssl.CERT_REQUIRED  # mutual TLS
    srv = FakeAPIServer(token="tok", ssl_context=server_ctx)
    url = await srv.start()
    try:
        srv.put(pod("ns", "p"))
        port = url.rsplit(":", 1)[1]

        def kubeconfig(server_url: str, **cluster_extra: object) -> Path:
            doc = {
                "current-context": "x",
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": server_url,
                            "certificate-authority-data": base64.b64encode(
                                pki.ca.cert_pem
                            ).decode(),
                            **cluster_extra,
                        },
                    }
                ],
                "users": [
                    {
                        "name": "u",
                        "user": {
                            "token": "tok",
                            "client-certificate-data": base64.b64encode(
                                pki.client.cert_pem
                            ).decode(),
                            "client-key-data": base64.b64encode(pki.client.key_pem).decode(),
                        },
                    }
                ],
            }
            path = tmp_path / "kubeconfig"
            path.write_text(yaml.safe_dump(doc))
            return path

        async with Client(load_kubeconfig(str(kubeconfig(url)))) as c:
            assert (await c.get(PODS, "p", namespace="ns"))["metadata"]["name"] == "p"

        # The URL names "localhost", which the certificate does not cover: tls-server-name fixes it.
        by_name = f"https://localhost:{port}"
        async with Client(load_kubeconfig(str(kubeconfig(by_name)))) as c:
            with pytest.raises(APIConnectionError):
                await c.get(PODS, "p", namespace="ns")
        cfg = load_kubeconfig(str(kubeconfig(by_name, **{"tls-server-name": "kubernetes.default"})))
        async with Client(cfg) as c:
            assert (await c.get(PODS, "p", namespace="ns"))["metadata"]["name"] == "p"
    finally:
        await srv.stop()
