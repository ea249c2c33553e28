"""pods/exec in the API server: upstream's checks and messages, authorization as `create`,
and the proxy to a node agent (here a fake one that records what it is asked and echoes),
with the node's credentials, relaying refusals and upgraded bytes both ways."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from inplace.apiserver.errors import StatusError
from inplace.apiserver.streaming import container_for
from tests.apiserver.support import API, PODS, make_api, pod
from tests.conftest import InProcessServer, free_port

GUARD = 30


def spec(*names: str, init: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": n} for n in names],
            "initContainers": [{"name": n} for n in init],
        },
    }


@pytest.mark.parametrize(
    ("pod_", "asked", "answer"),
    [
        (spec("main"), "", "main"),
        (spec("main", "side"), "side", "side"),
        (spec("main", init=("setup",)), "setup", "setup"),
        (spec("main"), "nope", "container nope is not valid for pod p"),
        (spec(), "", "a container name must be specified for pod p"),
        (spec("a", "b"), "", "a container name must be specified for pod p, choose one of: [a b]"),
        (
            spec("a", "b", init=("i",)),
            "",
            "a container name must be specified for pod p, choose one of: [a b] or one of the "
            "init containers: [i]",
        ),
    ],
)
def test_which_container(pod_: dict[str, Any], asked: str, answer: str) -> None:
    if " " not in answer:
        assert container_for(pod_, asked) == answer
        return
    with pytest.raises(StatusError) as refused:
        container_for(pod_, asked)
    assert (refused.value.code, str(refused.value)) == (400, answer)


@dataclass
class FakeAgent:
    port: int
    seen: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
async def fake_agent() -> AsyncIterator[FakeAgent]:
    """Answers /exec like the real agent's transport: a WebSocket that echoes every message
    back on stdout, or kubelet's plain-text refusal for the container `refuse`."""
    agent = FakeAgent(0)

    async def handle(request: web.Request) -> web.StreamResponse:
        agent.seen.append(
            {
                "path": request.path,
                "query": list(request.query.items()),
                "authorization": request.headers.get("Authorization"),
            }
        )
        if request.match_info["container"] == "refuse":
            return web.Response(status=500, text='container not found ("refuse")')
        ws = web.WebSocketResponse(protocols=("v5.channel.k8s.io",))
        await ws.prepare(request)
        async for message in ws:
            await ws.send_bytes(b"\x01" + message.data[1:])
            if message.data[1:] == b"bye":
                break
        await ws.close()
        return ws

    app = web.Application()
    app.router.add_route("*", "/exec/{namespace}/{pod}/{uid}/{container}", handle)
    app.router.add_route("*", "/attach/{namespace}/{pod}/{uid}/{container}", handle)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    agent.port = runner.addresses[0][1]
    try:
        yield agent
    finally:
        await runner.cleanup()


async def add_node(api: API, name: str, port: int, *, simulated: bool = False) -> None:
    labels = {"inplace.dev/simulated": "true"} if simulated else {}
    status, body = await api.call(
        "POST",
        "/api/v1/nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            },
        },
    )
    assert status == 201, body


@pytest.fixture
async def cluster(
    apiserver: InProcessServer, fake_agent: FakeAgent
) -> AsyncIterator[tuple[API, aiohttp.ClientSession]]:
    api, session = await make_api(apiserver)
    try:
        await add_node(api, "n1", fake_agent.port)
        for name, node in (("p", "n1"), ("unbound", None), ("lost", "absent")):
            status, body = await api.call("POST", PODS, pod(name, node=node))
            assert status == 201, body
        yield api, session
    finally:
        await session.close()


async def test_exec_is_proxied_with_the_nodes_credentials(
    apiserver: InProcessServer,
    fake_agent: FakeAgent,
    cluster: tuple[API, aiohttp.ClientSession],
) -> None:
    api, session = cluster
    node_token = apiserver.tokens.token_for("system:node:n1", ("system:nodes",))
    _, p = await api.call("GET", PODS + "/p")
    url = apiserver.url + PODS + "/p/exec?command=sh&command=-c&command=echo+hi&stdin=true"
    url += "&stdout=true&stderr=true&tty=false&container=main"
    async with asyncio.timeout(GUARD):
        ws = await session.ws_connect(
            url, protocols=("v5.channel.k8s.io",), headers=apiserver.headers()
        )
        assert ws.protocol == "v5.channel.k8s.io"
        await ws.send_bytes(b"\x00" + b"x" * 300_000)  # larger than any one read
        await ws.send_bytes(b"\x00bye")
        echoed = [bytes(m.data) async for m in ws]
        assert echoed == [b"\x01" + b"x" * 300_000, b"\x01bye"]
        assert ws.close_code == 1000
    [seen] = fake_agent.seen
    assert seen["path"] == f"/exec/default/p/{p['metadata']['uid']}/main"
    assert seen["query"] == [
        ("input", "1"),
        ("output", "1"),
        ("error", "1"),
        ("command", "sh"),
        ("command", "-c"),
        ("command", "echo hi"),
    ]
    assert seen["authorization"] == f"Bearer {node_token}"


async def test_refusals_before_the_node(
    fake_agent: FakeAgent, cluster: tuple[API, aiohttp.ClientSession]
) -> None:
    api, _ = cluster
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket"}
    for path, expected in (
        ("/gone/exec?command=true", (404, 'pods "gone" not found')),
        ("/p/exec?command=true&container=nope", (400, "container nope is not valid for pod p")),
        ("/unbound/exec?command=true", (400, "pod unbound does not have a host assigned")),
        ("/lost/exec?command=true", (404, 'nodes "absent" not found')),
    ):
        status, body = await api.call("GET", PODS + path, **upgrade)
        assert (status, body["message"]) == expected
        assert body["kind"] == "Status"
    status, body = await api.call("POST", PODS + "/p/exec?command=true&stdout=true")
    assert (status, body["message"]) == (400, "Upgrade request required")
    assert fake_agent.seen == []


async def test_a_simulated_node_has_nothing_to_exec_into(
    cluster: tuple[API, aiohttp.ClientSession],
) -> None:
    api, _ = cluster
    await add_node(api, "sim-1", free_port(), simulated=True)
    assert (await api.call("POST", PODS, pod("s", node="sim-1")))[0] == 201
    status, body = await api.call(
        "GET", PODS + "/s/exec?command=true", Connection="Upgrade", Upgrade="websocket"
    )
    assert (status, body["message"]) == (
        400,
        "node sim-1 is simulated: its pods have no processes to run a command in",
    )


async def test_the_agents_refusal_reaches_the_client_as_it_is(
    apiserver: InProcessServer, cluster: tuple[API, aiohttp.ClientSession]
) -> None:
    """kubelet's plain-text answer, which kubectl prints as `unable to upgrade connection:`."""
    api, _ = cluster
    refused = pod("r", node="n1")
    refused["spec"]["containers"][0]["name"] = "refuse"
    assert (await api.call("POST", PODS, refused))[0] == 201
    reader, writer = await asyncio.open_connection("127.0.0.1", apiserver.server.port)
    writer.write(
        (
            f"POST {PODS}/r/exec?command=true&stdout=true HTTP/1.1\r\n"
            f"Host: x\r\nAuthorization: Bearer {apiserver.token}\r\nConnection: Upgrade\r\n"
            "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
            "Content-Length: 0\r\n\r\n"
        ).encode()
    )
    async with asyncio.timeout(GUARD):
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        length = int(head.lower().split("content-length:")[1].split("\r\n")[0])
        body = await reader.readexactly(length)
    writer.close()
    assert head.startswith("HTTP/1.1 500")
    assert body == b'container not found ("refuse")'


async def test_a_node_may_not_exec(
    apiserver: InProcessServer, cluster: tuple[API, aiohttp.ClientSession]
) -> None:
    _, session = cluster
    token = apiserver.tokens.token_for("system:node:n1", ("system:nodes",))
    async with session.get(
        apiserver.url + PODS + "/p/exec?command=true&stdout=true",
        headers={"Authorization": f"Bearer {token}", "Connection": "Upgrade", "Upgrade": "x"},
    ) as response:
        body = await response.json()
    assert response.status == 403
    assert body["message"] == (
        'pods "p" is forbidden: User "system:node:n1" cannot create resource "pods/exec" in API '
        'group "" in the namespace "default"'
    )


async def test_an_agent_that_does_not_answer(
    apiserver: InProcessServer, cluster: tuple[API, aiohttp.ClientSession]
) -> None:
    api, _ = cluster
    await add_node(api, "n2", free_port())  # nothing listens there
    assert (await api.call("POST", PODS, pod("q", node="n2")))[0] == 201
    status, body = await api.call(
        "GET", PODS + "/q/exec?command=true", Connection="Upgrade", Upgrade="websocket"
    )
    assert status == 500
    assert body["message"].startswith("error dialing backend: ")


async def test_attach_goes_the_same_way(
    apiserver: InProcessServer,
    fake_agent: FakeAgent,
    cluster: tuple[API, aiohttp.ClientSession],
) -> None:
    _, session = cluster
    async with asyncio.timeout(GUARD):
        ws = await session.ws_connect(
            apiserver.url + PODS + "/p/attach?stdout=true&stdin=true",
            protocols=("v5.channel.k8s.io",),
            headers=apiserver.headers(),
        )
        await ws.send_bytes(b"\x00bye")
        assert [bytes(m.data) async for m in ws] == [b"\x01bye"]
    [seen] = fake_agent.seen
    assert seen["path"].startswith("/attach/default/p/")
    assert seen["query"] == [("input", "1"), ("output", "1")]


async def test_discovery_lists_pods_exec_and_attach(
    cluster: tuple[API, aiohttp.ClientSession],
) -> None:
    api, _ = cluster
    _, body = await api.call("GET", "/api/v1")
    entries = {r["name"]: r for r in body["resources"]}
    assert entries["pods/exec"] == {
        "name": "pods/exec",
        "singularName": "",
        "namespaced": True,
        "kind": "PodExecOptions",
        "verbs": ["create", "get"],
    }
    assert entries["pods/attach"]["kind"] == "PodAttachOptions"
    assert entries["pods/attach"]["verbs"] == ["create", "get"]


async def test_other_methods_are_405_and_never_touch_the_pod(
    cluster: tuple[API, aiohttp.ClientSession],
) -> None:
    """DELETE on any subresource once deleted the pod itself."""
    api, _ = cluster
    for method, path in (("PUT", "/p/exec"), ("DELETE", "/p/exec"), ("DELETE", "/p/status")):
        status, body = await api.call(method, PODS + path, {})
        assert (status, body["reason"]) == (405, "MethodNotAllowed"), (method, path)
    assert (await api.call("GET", PODS + "/p"))[0] == 200
