"""The agent's endpoint as upstream's kube-apiserver calls a kubelet: HTTPS that only a client
certificate of the client CA gets through, and ``/containerLogs`` with kubelet's query and
answers.

A real agent (``none`` cgroup driver, real processes) against an in-process API server, over
real HTTPS and HTTP. The certificates are the client tests' throwaway PKI: the agent serves
``server`` and trusts ``ca``; a second PKI's ``client`` is a certificate from another CA.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import ssl
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from inplace.client import NODES, PODS, APINotFoundError, Client, ClusterConfig
from inplace.node.agent import AgentConfig, NodeAgent
from inplace.node.cgroups import NoneDriver
from tests.client.certs import PKI, Pair, make_pki
from tests.conftest import InProcessServer, reap_mounts
from tests.node.test_agent import NODE, pod_body
from tests.poll import await_until


@dataclass
class Node:
    admin: Client
    agent: NodeAgent
    token: str
    pki: PKI
    files: Path

    @property
    def scheme(self) -> str:
        return "https" if self.agent.config.tls_cert_file else "http"

    def url(self, path: str) -> str:
        return f"{self.scheme}://{self.agent.config.http_host}:{self.agent.stats.port}{path}"

    def client_context(self, pair: Pair | None) -> ssl.SSLContext:
        """A client that verifies the agent against the CA and presents ``pair``."""
        context = ssl.create_default_context(cadata=self.pki.ca.cert_pem.decode())
        if pair is not None:
            cert, key = self.files / "client.crt", self.files / "client.key"
            cert.write_bytes(pair.cert_pem)
            key.write_bytes(pair.key_pem)
            context.load_cert_chain(cert, key)
        return context

    async def get(
        self, path: str, *, pair: Pair | None = None, token: str | None = None
    ) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        tls = self.client_context(pair) if self.scheme == "https" else None
        async with (
            aiohttp.ClientSession() as session,
            session.get(self.url(path), ssl=tls or False, headers=headers) as response,
        ):
            return response.status, await response.read()


NodeFactory = Callable[..., "contextlib.AbstractAsyncContextManager[Node]"]


@pytest.fixture
async def start_node(apiserver: InProcessServer, tmp_path: Path) -> AsyncIterator[NodeFactory]:
    """Start an agent with ``tls`` (serving the PKI's certificate, trusting its CA) or plain
    HTTP, on ``address``."""
    pki = make_pki()
    files = tmp_path / "pki"
    files.mkdir()
    for name, data in {
        "ca.crt": pki.ca.cert_pem,
        "node.crt": pki.server.cert_pem,
        "node.key": pki.server.key_pem,
    }.items():
        (files / name).write_bytes(data)
    token = apiserver.tokens.token_for(f"system:node:{NODE}", ("system:nodes",))

    @contextlib.asynccontextmanager
    async def start(*, tls: bool, address: str = "127.0.0.1") -> AsyncIterator[Node]:
        admin = Client(ClusterConfig(server=apiserver.url, token=apiserver.token))
        node_client = Client(ClusterConfig(server=apiserver.url, token=token))
        config = AgentConfig(
            node_name=NODE,
            cpu_milli=1000,
            memory_bytes=2**30,
            data_dir=tmp_path / "node",
            log_root=tmp_path / "logs",
            admit_without_scheduler=True,
            http_host=address,
            tls_cert_file=files / "node.crt" if tls else None,
            tls_private_key_file=files / "node.key" if tls else None,
            client_ca_file=files / "ca.crt" if tls else None,
        )
        agent = NodeAgent(node_client, config, driver=NoneDriver())
        stop = asyncio.Event()
        task = asyncio.create_task(agent.run(stop))
        try:
            await await_until(lambda: _node(admin), what="node registered")
            yield Node(admin, agent, token, pki, files)
        finally:
            pids = [p.pid for w in agent.workers.values() for p in w.procs.values()]
            stop.set()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 10)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
            await admin.close()
            await node_client.close()

    try:
        yield start
    finally:
        reap_mounts(tmp_path)


async def _node(admin: Client) -> dict[str, Any] | None:
    try:
        return await admin.get(NODES, NODE)
    except APINotFoundError:
        return None


# -- who may call ----------------------------------------------------------------------------


async def test_https_lets_only_a_certificate_of_the_client_ca_through(
    start_node: NodeFactory,
) -> None:
    async with start_node(tls=True) as node:
        status, body = await node.get("/healthz", pair=node.pki.client)
        assert (status, body) == (200, b"ok")
        tls12 = node.client_context(node.pki.client)
        tls12.maximum_version = ssl.TLSVersion.TLSv1_2
        _, writer = await asyncio.open_connection(
            node.agent.config.http_host, node.agent.stats.port, ssl=tls12
        )
        writer.close()
        stranger = make_pki().client  # a client certificate from another CA
        for pair in (stranger, None):
            # TLS 1.2 checks the client's certificate before the handshake completes (the
            # client sees the server's alert, or the reset that follows it)...
            context = node.client_context(pair)
            context.maximum_version = ssl.TLSVersion.TLSv1_2
            with pytest.raises((ssl.SSLError, ConnectionResetError)):
                await asyncio.open_connection(
                    node.agent.config.http_host, node.agent.stats.port, ssl=context
                )
            # ...TLS 1.3 right after it: the server hangs up before reading a request.
            with pytest.raises(aiohttp.ClientError):
                await node.get("/healthz", pair=pair)
            with pytest.raises(aiohttp.ClientError):
                # the node's own token does not replace the certificate
                await node.get("/containerLogs/default/p/main", pair=pair, token=node.token)
        with pytest.raises(aiohttp.ClientError):  # and nobody speaks plain HTTP to it
            async with (
                aiohttp.ClientSession() as session,
                session.get(node.url("/healthz").replace("https:", "http:")) as response,
            ):
                await response.read()
        # The verified certificate is the authentication: no bearer token asked for.
        status, body = await node.get("/containerLogs/default/p/main", pair=node.pki.client)
        assert (status, body) == (404, b'pod "p" does not exist')
        status, _ = await node.get("/exec/default/p/main?command=true", pair=node.pki.client)
        assert status != 401


async def test_plain_http_wants_the_nodes_token_and_reports_its_address(
    start_node: NodeFactory,
) -> None:
    async with start_node(tls=False, address="127.0.0.2") as node:
        found = await node.admin.get(NODES, NODE)
        assert {"type": "InternalIP", "address": "127.0.0.2"} in found["status"]["addresses"]
        assert (
            found["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == node.agent.stats.port
        )
        status, body = await node.get("/containerLogs/default/p/main")
        assert (status, body) == (401, b"Unauthorized")
        status, body = await node.get("/containerLogs/default/p/main", token="not-the-token")
        assert status == 401
        status, body = await node.get("/containerLogs/default/p/main", token=node.token)
        assert (status, body) == (404, b'pod "p" does not exist')


# -- the logs ---------------------------------------------------------------------------------

TALKER = [
    sys.executable,
    "-I",
    "-S",
    "-c",
    "import os, time; print('pid', os.getpid(), flush=True); print('two', flush=True); "
    "time.sleep(600)",
]
FLAKY = [
    sys.executable,
    "-I",
    "-S",
    "-c",
    "import os, sys, time\n"
    "marker = sys.argv[1]\n"
    "first = not os.path.exists(marker)\n"
    "open(marker, 'a').close()\n"
    "print('first run' if first else 'second run', flush=True)\n"
    "sys.exit(3) if first else time.sleep(600)\n",
]


async def test_container_logs_as_kubelet_serves_them(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    async with start_node(tls=True) as node:
        certificate = node.pki.client

        async def get(path: str) -> tuple[int, bytes]:
            return await node.get(path, pair=certificate)

        await node.admin.create(PODS, pod_body("talker", TALKER))
        await await_until(lambda: running(node, "talker"), what="talker Running")

        async def logged() -> bytes | None:
            status, text = await get("/containerLogs/default/talker/main")
            return text if status == 200 and b"two" in text else None

        text = await await_until(logged, what="talker's lines")
        assert text.startswith(b"pid ") and text.endswith(b"\ntwo\n")
        assert await get("/containerLogs/default/talker/main?tailLines=1") == (200, b"two\n")
        assert await get("/containerLogs/default/talker/main?tail=1") == (200, b"two\n")
        assert await get("/containerLogs/default/talker/main?limitBytes=3") == (200, b"pid")
        assert await get("/containerLogs/default/talker/main?previous=true") == (
            400,
            b'previous terminated container "main" in pod "talker" not found',
        )
        # kubelet's refusals, before any log is read
        assert await get("/containerLogs/default/nobody/main") == (
            404,
            b'pod "nobody" does not exist',
        )
        assert await get("/containerLogs/default/talker/other") == (
            404,
            b'container "other" not found in pod "talker"',
        )
        assert await get("/containerLogs/default/talker/main?tailLines=x") == (
            400,
            b'{"message": "Unable to decode query."}',
        )
        assert await get("/containerLogs/default/talker/main?tailLines=-1") == (
            422,
            b'{"message": "Invalid request."}',
        )
        status, text = await get("/containerLogs/default/talker/main?stream=Stderr")
        assert status == 400 and b"PodLogsQuerySplitStreams" in text

        # previous: the run before the one that runs now
        # (the marker is on a hostPath volume: a restarted container's own files are gone)
        shared = tmp_path / "shared"
        shared.mkdir()
        marker = shared / "ran-once"
        flaky = pod_body("flaky", [*FLAKY, str(marker)])
        flaky["spec"]["volumes"] = [{"name": "m", "hostPath": {"path": str(shared)}}]
        flaky["spec"]["containers"][0]["volumeMounts"] = [{"name": "m", "mountPath": str(shared)}]
        await node.admin.create(PODS, flaky)

        async def second_run() -> dict[str, Any] | None:
            pod = await running(node, "flaky")
            statuses = (pod or {}).get("status", {}).get("containerStatuses") or [{}]
            return pod if statuses[0].get("restartCount") == 1 else None

        await await_until(second_run, what="flaky restarted once")

        async def second_logged() -> bool:
            return await get("/containerLogs/default/flaky/main") == (200, b"second run\n")

        await await_until(second_logged, what="the second run's line")
        assert await get("/containerLogs/default/flaky/main?previous=true") == (
            200,
            b"first run\n",
        )

        # follow: lines as they come, until the client goes
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                node.url("/containerLogs/default/flaky/main?follow=true"),
                ssl=node.client_context(certificate),
            ) as response,
        ):
            assert response.status == 200
            assert response.headers["Transfer-Encoding"] == "chunked"
            line = await asyncio.wait_for(response.content.readline(), 10)
            assert line == b"second run\n"
        for name in ("flaky", "talker"):
            await delete_and_wait(node, name)


async def running(node: Node, name: str) -> dict[str, Any] | None:
    pod = await node.admin.get(PODS, name, namespace="default")
    statuses = pod.get("status", {}).get("containerStatuses") or []
    if statuses and all("running" in s["state"] for s in statuses):
        return pod
    return None


async def delete_and_wait(node: Node, name: str) -> None:
    await node.admin.delete(PODS, name, namespace="default")

    async def gone() -> bool:
        try:
            await node.admin.get(PODS, name, namespace="default")
        except APINotFoundError:
            return True
        return False

    await await_until(gone, what=f"{name} deleted")
