"""The agent's exec endpoint over real HTTP: who may call, kubelet's refusals, WebSocket
sessions in every protocol version, SPDY sessions, terminals, and a client that hangs up.

Commands run for real in a container of the ``exec_container`` fixture (a real cgroup v1).
The SPDY client here is the tests' own, built on the same framing module, and speaks as
kubectl's executor does (streams opened one by one, each after the previous reply).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import psutil
import pytest
from aiohttp import web

from inplace.api.remotecommand import NODE_STREAM_PARAMS, exit_status, internal_error_status
from inplace.node import spdy
from inplace.node.cgroups import V1Driver
from inplace.node.execproc import ExecTarget
from inplace.node.streaming import StreamingServer, TargetError
from tests.node.conftest import exited
from tests.poll import await_until

TOKEN = "node-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
GUARD = 30


@dataclass
class Agent:
    url: str
    port: int


@pytest.fixture
async def agent(v1_driver: V1Driver, exec_container: ExecTarget) -> AsyncIterator[Agent]:
    def lookup(namespace: str, pod: str, uid: str, container: str) -> ExecTarget:
        if (namespace, pod) != ("default", "p") or uid not in ("", "uid-1"):
            raise TargetError(404, "pod does not exist")
        if container != "main":
            raise TargetError(500, f'container not found ("{container}")')
        return exec_container

    server = StreamingServer(v1_driver, lookup, lambda: TOKEN)
    app = web.Application()
    for method, path, handler in server.routes():
        app.router.add_route(method, path, handler)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield Agent(f"http://127.0.0.1:{port}", port)
    finally:
        await runner.cleanup()


def exec_path(command: list[str], container: str = "main", **flags: str) -> str:
    """A kubelet exec path; ``flags`` by stream name (``stdout="1"``), sent under the
    parameter names upstream's API server uses (``output=1``)."""
    names = dict(NODE_STREAM_PARAMS)
    query = [*((names[k], v) for k, v in flags.items()), *(("command", c) for c in command)]
    return f"/exec/default/p/uid-1/{container}?{urlencode(query)}"


@dataclass
class WSResult:
    messages: list[tuple[int, bytes]] = field(default_factory=list)
    close_code: int | None = None

    def channel(self, number: int) -> bytes:
        return b"".join(data for ch, data in self.messages if ch == number)


async def websocket(
    agent: Agent,
    path: str,
    protocol: str,
    send: list[bytes | str] = (),  # type: ignore[assignment]
) -> WSResult:
    result = WSResult()
    async with (
        asyncio.timeout(GUARD),
        aiohttp.ClientSession() as session,
        session.ws_connect(agent.url + path, protocols=(protocol,), headers=AUTH) as ws,
    ):
        assert ws.protocol == protocol
        for outgoing in send:
            if isinstance(outgoing, str):
                await ws.send_str(outgoing)
            else:
                await ws.send_bytes(outgoing)
        async for message in ws:
            raw = message.data if isinstance(message.data, bytes) else message.data.encode()
            if protocol.startswith(("base64.", "v4.base64.")):
                result.messages.append((raw[0] - ord("0"), base64.b64decode(raw[1:])))
            else:
                result.messages.append((raw[0], raw[1:]))
        result.close_code = ws.close_code
    return result


async def test_only_the_api_server_may_exec(agent: Agent) -> None:
    async with aiohttp.ClientSession() as session:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            async with session.get(
                agent.url + exec_path(["true"], stdout="1"), headers=headers
            ) as r:
                assert (r.status, await r.text()) == (401, "Unauthorized")


async def test_refusals_are_kubelets(agent: Agent) -> None:
    async with aiohttp.ClientSession() as session:

        async def call(path: str, **headers: str) -> tuple[int, str, Any]:
            async with session.post(agent.url + path, headers={**AUTH, **headers}) as r:
                return r.status, await r.text(), r.headers

        assert (await call(exec_path(["true"])))[:2] == (
            400,
            "you must specify at least 1 of stdin, stdout, stderr",
        )
        assert (await call(exec_path(["true"], stdout="1")))[:2] == (
            400,
            "Upgrade request required",
        )
        spdy_upgrade = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1"}
        assert (await call(exec_path(["true"], stdout="1"), **spdy_upgrade))[:2] == (
            400,
            "unable to upgrade: X-Stream-Protocol-Version is required",
        )
        status, text, headers = await call(
            exec_path(["true"], stdout="1"),
            **spdy_upgrade,
            **{"X-Stream-Protocol-Version": "v9.channel.k8s.io"},
        )
        assert status == 403
        assert text == (
            "unable to upgrade: unable to negotiate protocol: client supports "
            "[v9.channel.k8s.io], server accepts [v4.channel.k8s.io v3.channel.k8s.io "
            "v2.channel.k8s.io channel.k8s.io]"
        )
        assert "v4.channel.k8s.io" in headers["X-Accepted-Stream-Protocol-Versions"]
        # before any upgrade, for every protocol but version 5
        for path, expected in (
            ("/exec/default/gone/uid-1/main?output=1&command=true", (404, "pod does not exist")),
            (exec_path(["true"], "stopped", stdout="1"), (500, 'container not found ("stopped")')),
        ):
            assert (
                await call(path, **spdy_upgrade, **{"X-Stream-Protocol-Version": "channel.k8s.io"})
            )[:2] == expected
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(
                    agent.url + path, protocols=("v4.channel.k8s.io",), headers=AUTH
                )
            assert refused.value.status == expected[0]


async def test_version_5_reports_refusals_on_the_error_channel(agent: Agent) -> None:
    """As upstream's API server, which translates version 5 to SPDY for the kubelet."""
    result = await websocket(agent, exec_path(["true"], "stopped", stdout="1"), "v5.channel.k8s.io")
    assert json.loads(result.channel(3)) == internal_error_status(
        'unable to upgrade connection: container not found ("stopped")'
    )
    assert result.close_code == 1000


async def test_a_version_5_session(agent: Agent) -> None:
    """stdin to its end with the close signal, stdout and stderr apart, Success, a normal
    close; the first message is kubelet's empty "connection established" on stdout."""
    result = await websocket(
        agent,
        exec_path(["sh", "-c", "cat; echo done >&2"], stdin="1", stdout="1", stderr="1"),
        "v5.channel.k8s.io",
        send=[b"\x00hello ", b"\x00world", b"\xff\x00"],
    )
    assert result.messages[0] == (1, b"")
    assert result.channel(1) == b"hello world"
    assert result.channel(2) == b"done\n"
    assert json.loads(result.channel(3)) == {"metadata": {}, "status": "Success"}
    assert result.close_code == 1000


async def test_version_4_exit_codes_in_base64(agent: Agent) -> None:
    command = ["sh", "-c", "echo out; exit 3"]
    result = await websocket(
        agent, exec_path(command, stdout="1", stderr="1"), "v4.base64.channel.k8s.io"
    )
    assert result.channel(1) == b"out\n"
    assert json.loads(result.channel(3)) == exit_status(3, command)


async def test_version_1_reports_a_failure_as_text(agent: Agent) -> None:
    result = await websocket(agent, exec_path(["false"], stdout="1"), "channel.k8s.io")
    assert result.channel(3) == (
        b"command terminated with non-zero exit code: error executing command [false], exit code 1"
    )
    ok = await websocket(agent, exec_path(["true"], stdout="1"), "channel.k8s.io")
    assert ok.channel(3) == b""


async def test_a_terminal_over_websocket(agent: Agent) -> None:
    result = await websocket(
        agent,
        exec_path(["sh", "-c", "read go; stty size"], stdin="1", stdout="1", tty="1"),
        "v5.channel.k8s.io",
        send=[b'\x04{"Width":100,"Height":30}\n', b"\x00go\n"],
    )
    assert b"30 100" in result.channel(1)
    assert json.loads(result.channel(3))["status"] == "Success"


class SpdyClient:
    """The tests' SPDY client, shaped as kubectl's executor."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.headers = spdy.HeaderCodec()
        self.parser = spdy.FrameParser()
        self.pending: list[spdy.ControlFrame | spdy.DataFrame] = []
        self.next_id = 1

    @classmethod
    async def connect(cls, agent: Agent, path: str) -> tuple[SpdyClient, str]:
        reader, writer = await asyncio.open_connection("127.0.0.1", agent.port)
        head = [
            f"POST {path} HTTP/1.1",
            "Host: agent",
            f"Authorization: Bearer {TOKEN}",
            "Connection: Upgrade",
            "Upgrade: SPDY/3.1",
            "X-Stream-Protocol-Version: v4.channel.k8s.io",
            "X-Stream-Protocol-Version: channel.k8s.io",
            "Content-Length: 0",
        ]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        response = (await reader.readuntil(b"\r\n\r\n")).decode()
        return cls(reader, writer), response

    async def frame(self) -> spdy.ControlFrame | spdy.DataFrame | None:
        while not self.pending:
            data = await self.reader.read(65536)
            if not data:
                return None
            self.pending += self.parser.feed(data)
        return self.pending.pop(0)

    async def open(self, kind: str) -> int:
        stream_id, self.next_id = self.next_id, self.next_id + 2
        self.writer.write(spdy.syn_stream(stream_id, self.headers.encode({"streamtype": [kind]})))
        reply = await self.frame()
        assert isinstance(reply, spdy.ControlFrame) and reply.type == spdy.SYN_REPLY
        assert int.from_bytes(reply.payload[:4], "big") == stream_id
        assert self.headers.decode(reply.payload[4:]) == {}
        return stream_id


async def test_a_spdy_session(agent: Agent) -> None:
    command = ["sh", "-c", "cat; echo err >&2; exit 4"]
    async with asyncio.timeout(GUARD):
        client, response = await SpdyClient.connect(
            agent, exec_path(command, stdin="1", stdout="1", stderr="1")
        )
        assert response.startswith("HTTP/1.1 101 Switching Protocols")
        assert "X-Stream-Protocol-Version: v4.channel.k8s.io" in response
        ids = {kind: await client.open(kind) for kind in ("error", "stdin", "stdout", "stderr")}
        client.writer.write(spdy.control_frame(spdy.PING, 0, b"\x00\x00\x00\x01"))
        client.writer.write(spdy.data_frame(ids["stdin"], b"through spdy"))
        client.writer.write(spdy.data_frame(ids["stdin"], b"", fin=True))
        data: dict[int, bytes] = {i: b"" for i in ids.values()}
        finished: set[int] = set()
        pings = 0
        while (frame := await client.frame()) is not None:
            if isinstance(frame, spdy.DataFrame):
                data[frame.stream_id] += frame.data
                if frame.fin:
                    finished.add(frame.stream_id)
            elif frame.type == spdy.PING:
                pings += 1
            elif frame.type == spdy.GOAWAY:
                client.writer.close()  # kubectl hangs up once it has everything
    assert data[ids["stdout"]] == b"through spdy"
    assert data[ids["stderr"]] == b"err\n"
    assert json.loads(data[ids["error"]]) == exit_status(4, command)
    assert finished == set(ids.values())
    assert pings == 1


async def test_a_client_that_hangs_up_takes_the_command_with_it(agent: Agent) -> None:
    async with asyncio.timeout(GUARD), aiohttp.ClientSession() as session:
        ws = await session.ws_connect(
            agent.url + exec_path(["sh", "-c", "echo $$; exec sleep 300"], stdout="1"),
            protocols=("v5.channel.k8s.io",),
            headers=AUTH,
        )
        pid = 0
        async for message in ws:
            if message.data[0] == 1 and message.data[1:].strip():
                pid = int(message.data[1:])
                break
        assert psutil.pid_exists(pid)
        await ws.close()

    await await_until(lambda: exited(pid), what="the command killed when its client left")


async def test_attach_streams_the_containers_output_until_it_exits(
    agent: Agent, exec_container: ExecTarget
) -> None:
    """From the moment of attaching (earlier output is `kubectl logs`' business); stdin sent
    to a container without one is dropped; the container's exit ends the session."""
    log = Path(exec_container.process.log_path)
    log.write_bytes(b"before attaching\n")
    async with asyncio.timeout(GUARD), aiohttp.ClientSession() as session:
        ws = await session.ws_connect(
            agent.url + "/attach/default/p/uid-1/main?input=1&output=1&error=1",
            protocols=("v5.channel.k8s.io",),
            headers=AUTH,
        )
        assert await ws.receive_bytes() == b"\x01"  # connection established
        await ws.send_bytes(b"\x00ignored")
        with log.open("ab") as out:
            out.write(b"after attaching\n")
        received = b""
        while b"after attaching\n" not in received:
            message = await ws.receive_bytes()
            assert message[0] == 1
            received += message[1:]
        os.kill(exec_container.process.pid, signal.SIGKILL)
        rest = [bytes(m.data) async for m in ws]
        assert json.loads(rest[-1][1:]) == {"metadata": {}, "status": "Success"}
        assert rest[-1][0] == 3
    assert b"before attaching" not in received
