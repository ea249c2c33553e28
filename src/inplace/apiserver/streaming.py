"""``pods/exec`` and ``pods/attach``: checked here, then proxied, upgrade and all, to the agent
of the pod's node.

Upstream's API server does the same with the kubelet (``ExecLocation``, then an
upgrade-aware proxy), and so the rules and messages are its:

* the pod must exist (404), the container must be one of the pod's (400 ``container X is not
  valid for pod P``), or, when none is named, the pod must have exactly one (400 ``a container
  name must be specified for pod P, choose one of: [...]``); the pod must be bound (400 ``pod P
  does not have a host assigned``);
* the request must be an upgrade — to a WebSocket (kubectl ≥ 1.30: ``v5.channel.k8s.io``; the
  Python client: ``v4``) or to SPDY/3.1 (older kubectl, and the fallback of newer ones) —
  else 400 ``Upgrade request required``;
* authorization asks for ``create`` on ``pods/exec`` (``pods/attach``) whatever the HTTP
  method (upstream's rule since 1.31 for WebSocket GETs), so a node's token cannot exec into
  pods (403).

**The proxy.** The API server opens a TCP connection to the node agent's endpoint (the
Node's InternalIP and ``status.daemonEndpoints.kubeletEndpoint.Port``), sends the upgrade
request there with the node's own bearer token instead of the user's (the credentials upstream
gives its kubelet client), and relays the agent's answer: an error status and body as they
are, or the ``101 Switching Protocols`` and then every byte both ways until either side hangs
up. The API server never parses the stream, so WebSocket and SPDY, any channel protocol,
terminal resizes and exit codes pass through unchanged (:mod:`inplace.node.streaming` speaks
them). Both directions are flow-controlled: a slow reader slows the writer.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web

from inplace.api.annotations import SIMULATED
from inplace.api.remotecommand import ExecOptions, exec_options, node_query
from inplace.apiserver.auth import NODE_PREFIX, TokenFile
from inplace.apiserver.cache import WatchCache
from inplace.apiserver.errors import StatusError, bad_request, not_found
from inplace.apiserver.httputil import USER
from inplace.apiserver.nodemetrics import kubelet_endpoint
from inplace.apiserver.rest import REST
from inplace.apiserver.routing import RequestInfo
from inplace.apiserver.webhooks import connect_request
from inplace.registry.served import Registry
from inplace.upgrade import hijack, is_upgrade_request

__all__ = ["STREAMING_SUBRESOURCES", "PodStreams", "container_for"]

STREAMING_SUBRESOURCES = ("exec", "attach")
"""The pod subresources served by proxying an upgraded connection to the node."""

_FORWARDED = (
    "Connection",
    "Upgrade",
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Version",
    "Sec-WebSocket-Protocol",
    "Sec-WebSocket-Extensions",
    "X-Stream-Protocol-Version",
    "User-Agent",
)
"""What the agent needs of the client's request: the upgrade handshake."""
_RETURNED = (
    "Connection",
    "Upgrade",
    "Sec-WebSocket-Accept",
    "Sec-WebSocket-Protocol",
    "Sec-WebSocket-Extensions",
    "X-Stream-Protocol-Version",
)
"""What the client needs of the agent's 101."""
_CHUNK = 64 * 1024
_HIGH_WATER = 256 * 1024
_HEAD_LIMIT = 64 * 1024


def container_for(pod: dict[str, Any], name: str) -> str:
    """The container a request means (upstream's ``streamLocation``): the one named, which
    must be in the pod, or the pod's only one (StatusError 400 otherwise)."""
    pod_name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    containers = [c.get("name", "") for c in spec.get("containers") or ()]
    init = [c.get("name", "") for c in spec.get("initContainers") or ()]
    ephemeral = [c.get("name", "") for c in spec.get("ephemeralContainers") or ()]
    if not name:
        if len(containers) == 1:
            return str(containers[0])
        if not containers:
            raise bad_request(f"a container name must be specified for pod {pod_name}")
        message = (
            f"a container name must be specified for pod {pod_name}, "
            f"choose one of: [{' '.join(containers)}]"
        )
        if init:
            message += f" or one of the init containers: [{' '.join(init)}]"
        raise bad_request(message)
    if name not in (*containers, *init, *ephemeral):
        raise bad_request(f"container {name} is not valid for pod {pod_name}")
    return name


class PodStreams:
    """Serves the streaming subresources of pods (see the module docstring)."""

    def __init__(
        self,
        rest: REST,
        cache: WatchCache,
        registry: Registry,
        tokens: TokenFile | None,
        *,
        connect_timeout: float = 10.0,
        handshake_timeout: float = 60.0,
    ) -> None:
        self.rest = rest
        self.cache = cache
        self.tokens = tokens
        self._nodes = registry.by_kind("", "Node")
        self.connect_timeout = connect_timeout
        self.handshake_timeout = handshake_timeout

    async def serve(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        assert info.name is not None and info.namespace is not None
        options = exec_options(request.query.items())
        entry = await self.rest.get_entry(info.kind, info.namespace, info.name)
        pod = entry.value
        if self.rest.webhooks is not None:
            await self.rest.webhooks.connect(
                connect_request(
                    info.kind,
                    info.namespace,
                    info.name,
                    info.subresource or "exec",
                    options,
                    request[USER],
                )
            )
        container = container_for(pod, options.container)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            raise bad_request(f"pod {info.name} does not have a host assigned")
        host, port = self._endpoint(node_name)
        if not is_upgrade_request(request):
            raise bad_request("Upgrade request required")
        uid = pod["metadata"].get("uid", "")
        path = "/" + "/".join(
            quote(part, safe="")
            for part in (info.subresource or "exec", info.namespace, info.name, uid, container)
        )
        return await self._proxy(request, host, port, path, options, node_name)

    def _endpoint(self, node_name: str) -> tuple[str, int]:
        assert self._nodes is not None
        entry = self.cache.get(self._nodes, self._nodes.storage_key(node_name), None)
        if entry is None:
            raise not_found("nodes", "", node_name)
        node = entry.value
        if (node["metadata"].get("labels") or {}).get(SIMULATED) == "true":
            raise bad_request(
                f"node {node_name} is simulated: its pods have no processes to run a command in"
            )
        endpoint = kubelet_endpoint(node)
        if endpoint is None:
            raise StatusError(
                503, f"node {node_name} has not published its agent's endpoint yet", reason=None
            )
        return endpoint

    async def _proxy(
        self,
        request: web.Request,
        host: str,
        port: int,
        path: str,
        options: ExecOptions,
        node_name: str,
    ) -> web.StreamResponse:
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(host, port, limit=_HEAD_LIMIT)
        except (OSError, TimeoutError) as exc:
            raise StatusError(500, f"error dialing backend: {exc or 'timed out'}") from None
        try:
            head = [f"{request.method} {path}?{urlencode(node_query(options))} HTTP/1.1"]
            head.append(f"Host: {host}:{port}")
            token = self.tokens.token_of(NODE_PREFIX + node_name) if self.tokens else None
            if token:
                head.append(f"Authorization: Bearer {token}")
            for name in _FORWARDED:
                head += [f"{name}: {value}" for value in request.headers.getall(name, [])]
            if request.method not in ("GET", "HEAD"):
                head.append("Content-Length: 0")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
            async with asyncio.timeout(self.handshake_timeout):
                status, headers = _parse_head(await reader.readuntil(b"\r\n\r\n"))
                if status != 101:
                    try:
                        body = await reader.readexactly(int(headers.get("content-length") or 0))
                    except asyncio.IncompleteReadError as exc:
                        body = exc.partial
                    writer.close()
                    return _relay_error(status, headers, body)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            writer.close()
            raise StatusError(
                500, f"error dialing backend: node {node_name} did not answer"
            ) from None
        except BaseException:
            writer.close()
            raise
        return await self._relay(request, reader, writer, headers)

    async def _relay(
        self,
        request: web.Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        headers: dict[str, str],
    ) -> web.StreamResponse:
        """Answer the client's upgrade with the agent's, then copy bytes both ways."""
        response = web.StreamResponse(
            status=101, headers={k: v for k, v in headers.items() if k in _RETURNED_LOWER}
        )
        client = request.transport
        paused = False
        draining: asyncio.Task[None] | None = None

        async def drain() -> None:
            nonlocal paused
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            if paused and client is not None:
                client.resume_reading()
            paused = False

        def to_agent(data: bytes) -> None:
            nonlocal paused, draining
            if writer.is_closing():
                return
            writer.write(data)
            if not paused and writer.transport.get_write_buffer_size() > _HIGH_WATER:
                if client is not None:
                    client.pause_reading()
                paused = True
                draining = asyncio.ensure_future(drain())

        def client_gone() -> None:
            writer.close()

        hijack(request, to_agent, client_gone)
        try:
            await response.prepare(request)
            while data := await reader.read(_CHUNK):
                await response.write(data)
        except (ConnectionError, RuntimeError):
            pass
        finally:
            if draining is not None:
                draining.cancel()
            writer.close()
            if client is not None:
                client.close()
        return response


_RETURNED_LOWER = {name.lower() for name in _RETURNED}


def _parse_head(raw: bytes) -> tuple[int, dict[str, str]]:
    """Status code and headers (lower-cased names) of an HTTP/1.1 response head."""
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise OSError(f"not an HTTP response: {lines[0]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


def _relay_error(status: int, headers: dict[str, str], body: bytes) -> web.Response:
    """The agent's refusal, as the client gets it: kubelet's plain-text answers pass as they
    are (kubectl prints ``unable to upgrade connection: <text>``). The agent refusing the API
    server's own credentials is the server's fault, not the user's: 500."""
    if status == 401:
        status, body = 500, b"the node agent refused the API server's credentials"
    return web.Response(
        status=status,
        body=body,
        headers={"Content-Type": headers.get("content-type", "text/plain; charset=utf-8")},
    )
