"""The node agent's streaming endpoint: ``kubectl exec`` and ``kubectl attach`` as the API
server proxies them.

Upstream's kubelet serves ``/exec/{namespace}/{pod}/{uid}/{container}?command=…&stdin=1…``
(and ``/attach/…``) and the API server forwards ``pods/exec`` there, upgrade and all; so does
this agent, on its existing HTTP server (:mod:`.stats`). An exec runs a command in the
container (:mod:`.execproc`); an attach streams what the container's own process writes from
then on, until it exits (its stdin is ``/dev/null``: what a client sends is dropped). A session
speaks one of two transports:

* **WebSocket** (``v5.channel.k8s.io`` from kubectl ≥ 1.30, ``v4`` from the official Python
  client, and the older channel protocols): each message is one channel's data
  (:mod:`inplace.api.remotecommand`), the server first sends an empty message on the lowest
  channel it writes (kubelet's "connection established"), and ends with the error channel's
  status and a normal close.
* **SPDY/3.1** (kubectl before 1.30, and every kubectl as a fallback): one SPDY stream per
  channel, opened by the client and answered here (:mod:`.spdy`); the session ends with the
  status on the error stream, every stream half-closed, and GOAWAY.

**Who may call.** Only the API server (:func:`.stats.authenticated`): on the HTTPS endpoint,
whoever got through the handshake with a certificate of the client CA (upstream's
kube-apiserver, with its kubelet-client certificate); on plain HTTP, whoever presents the
node's own bearer token (the one in this agent's kubeconfig: ``inplace up``'s API server does).
Anything else is a 401.

**Errors** are kubelet's: a bad request is a plain-text 400, an unknown pod a 404 ``pod does
not exist``, a container that is not running a 500 ``container not found ("NAME")``, answered
before any upgrade, so clients print ``unable to upgrade connection: …``. A version 5 client
gets them as upstream's API server gives them, which translates version 5 to SPDY for the
kubelet: the WebSocket is accepted and the error channel carries an ``InternalError``.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import os
import typing
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from aiohttp import WSMsgType, web

from inplace.api.remotecommand import (
    ERROR,
    RESIZE,
    SPDY_PROTOCOLS,
    STDERR,
    STDIN,
    STDOUT,
    STREAM_TYPES,
    WEBSOCKET_PROTOCOLS,
    ChannelMessage,
    CloseSignal,
    Protocol,
    ResizeDecoder,
    StreamOptions,
    decode_message,
    encode_message,
    exit_status,
    internal_error_status,
    negotiate,
    status_text,
    stream_options,
    success_status,
    translated_exit_status,
)
from inplace.upgrade import hijack

from . import spdy
from .cgroups.base import CgroupDriver
from .execproc import ExecError, ExecProcess, ExecTarget
from .runtime import is_running
from .stats import authenticated

__all__ = ["StreamingServer", "TargetError", "TargetLookup"]

log = logging.getLogger(__name__)

STREAM_CREATION_TIMEOUT = 30.0
"""How long a SPDY client may take to open its streams (kubelet's default)."""
CLOSE_TIMEOUT = 5.0
"""How long a finished SPDY session waits for the client to hang up."""
_SPDY_UPGRADE = "spdy/3.1"
_QUEUE_HIGH = 64
_CHUNK = 32 * 1024


class InputSink(typing.Protocol):
    """Where a session's input goes: a command (:class:`ExecProcess`), or nowhere."""

    async def write_stdin(self, data: bytes) -> None: ...

    def close_stdin(self) -> None: ...

    def resize(self, width: int, height: int) -> None: ...


class _Nowhere:
    """An attached container's stdin is /dev/null (containers run without one here)."""

    async def write_stdin(self, data: bytes) -> None:
        return None

    def close_stdin(self) -> None:
        return None

    def resize(self, width: int, height: int) -> None:
        return None


class TargetError(Exception):
    """The pod or container cannot take the command: an HTTP status and kubelet's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


TargetLookup = Callable[[str, str, str, str], ExecTarget]
"""``(namespace, pod, uid, container)`` → where to run (uid may be empty); raises
:class:`TargetError`."""


class Session(abc.ABC):
    """One client connection, whichever the transport."""

    def __init__(self, protocol: Protocol, streams: StreamOptions) -> None:
        self.protocol = protocol
        self.streams = streams
        self._lock = asyncio.Lock()

    @abc.abstractmethod
    async def send(self, channel: int, data: bytes) -> None:
        """Data on stdout or stderr."""

    @abc.abstractmethod
    async def serve_input(self, process: InputSink) -> None:
        """Hand stdin and terminal sizes to ``process`` until the client is gone."""

    @abc.abstractmethod
    async def _write_status(self, payload: bytes) -> None:
        """The error channel's content."""

    @abc.abstractmethod
    async def close(self) -> None:
        """End the session."""

    async def finish(self, status: dict[str, Any]) -> None:
        """Report how the command ended, in this protocol's form, and end the session."""
        payload = orjson.dumps(status) if self.protocol.json_status else status_text(status)
        try:
            if payload:
                await self._write_status(payload)
        except (ConnectionError, RuntimeError):
            pass
        await self.close()


class WebSocketSession(Session):
    def __init__(self, ws: web.WebSocketResponse, protocol: Protocol, streams: StreamOptions):
        super().__init__(protocol, streams)
        self.ws = ws

    async def send(self, channel: int, data: bytes) -> None:
        message = encode_message(self.protocol, channel, data)
        async with self._lock:
            if isinstance(message, str):
                await self.ws.send_str(message)
            else:
                await self.ws.send_bytes(message)

    async def announce(self) -> None:
        """kubelet's "connection established": an empty message on the lowest channel this
        side writes."""
        channel = STDOUT if self.streams.stdout else STDERR if self.streams.stderr else ERROR
        await self.send(channel, b"")

    async def serve_input(self, process: InputSink) -> None:
        sizes = ResizeDecoder()
        async for message in self.ws:
            if message.type == WSMsgType.BINARY:
                raw = bytes(message.data)
            elif message.type == WSMsgType.TEXT:
                raw = str(message.data).encode()
            else:
                continue
            try:
                decoded = decode_message(self.protocol, raw)
            except ValueError as exc:
                log.info("exec: %s", exc)
                return
            if isinstance(decoded, CloseSignal):
                if decoded.channel == STDIN:
                    process.close_stdin()
            elif isinstance(decoded, ChannelMessage):
                if decoded.channel == STDIN and self.streams.stdin:
                    await process.write_stdin(decoded.data)
                elif decoded.channel == RESIZE:
                    for width, height in sizes.feed(decoded.data):
                        process.resize(width, height)

    async def _write_status(self, payload: bytes) -> None:
        await self.send(ERROR, payload)

    async def close(self) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.ws.close()


class SpdySession(Session):
    """The server side of a remote-command session over SPDY/3.1 (see :mod:`.spdy`)."""

    def __init__(self, request: web.Request, protocol: Protocol, streams: StreamOptions):
        super().__init__(protocol, streams)
        self.request = request
        self.response = web.StreamResponse(
            status=101,
            headers={
                "Connection": "Upgrade",
                "Upgrade": "SPDY/3.1",
                "X-Stream-Protocol-Version": protocol.name,
            },
        )
        self._parser = spdy.FrameParser()
        self._headers = spdy.HeaderCodec()
        self._frames: asyncio.Queue[spdy.ControlFrame | spdy.DataFrame | None] = asyncio.Queue()
        self._paused = False
        self._channels: dict[int, int] = {}
        """stream id → channel."""
        self._stream_of: dict[int, int] = {}
        """channel → stream id."""
        self._last_stream = 0
        self._failed: str | None = None

    def expected_streams(self) -> int:
        """The streams the client opens: error, one per standard stream, resize with a
        terminal (kubelet's count)."""
        count = 1 + sum((self.streams.stdin, self.streams.stdout, self.streams.stderr))
        return count + (1 if self.streams.tty and self.protocol.resize else 0)

    # -- the connection ------------------------------------------------------------------------

    def _on_data(self, data: bytes) -> None:
        if self._failed is not None:
            return
        try:
            frames = self._parser.feed(data)
        except spdy.SpdyError as exc:
            self._failed = str(exc)
            self._frames.put_nowait(None)
            return
        for frame in frames:
            self._frames.put_nowait(frame)
        if not self._paused and self._frames.qsize() > _QUEUE_HIGH:
            transport = self.request.transport
            if transport is not None:
                transport.pause_reading()
                self._paused = True

    def _on_eof(self) -> None:
        self._frames.put_nowait(None)

    async def _next(self) -> spdy.ControlFrame | spdy.DataFrame | None:
        frame = await self._frames.get()
        if self._paused and self._frames.qsize() < _QUEUE_HIGH // 2:
            transport = self.request.transport
            if transport is not None:
                transport.resume_reading()
            self._paused = False
        return frame

    async def _write(self, data: bytes) -> None:
        async with self._lock:
            await self.response.write(data)

    async def open(self) -> bool:
        """Answer 101 and wait for the client's streams; False if they do not all come."""
        hijack(self.request, self._on_data, self._on_eof)
        await self.response.prepare(self.request)
        try:
            async with asyncio.timeout(STREAM_CREATION_TIMEOUT):
                while len(self._channels) < self.expected_streams():
                    frame = await self._next()
                    if frame is None:
                        return False
                    await self._handle(frame, None, None)
        except TimeoutError:
            log.info("exec: timed out waiting for client to create streams")
            return False
        return True

    async def _handle(
        self,
        frame: spdy.ControlFrame | spdy.DataFrame,
        process: InputSink | None,
        sizes: ResizeDecoder | None,
    ) -> None:
        if isinstance(frame, spdy.DataFrame):
            channel = self._channels.get(frame.stream_id)
            if process is not None and channel == STDIN:
                if frame.data:
                    await process.write_stdin(frame.data)
                if frame.fin:
                    process.close_stdin()
            elif process is not None and sizes is not None and channel == RESIZE:
                for width, height in sizes.feed(frame.data):
                    process.resize(width, height)
            return
        if frame.type == spdy.SYN_STREAM:
            syn = spdy.parse_syn_stream(frame)
            kind = (self._headers.decode(syn.block).get("streamtype") or [""])[0]
            channel = RESIZE if kind == "resize" else STREAM_TYPES.get(kind)
            self._last_stream = max(self._last_stream, syn.stream_id)
            if channel is None or channel in self._stream_of:
                await self._write(spdy.rst_stream(syn.stream_id, spdy.RST_PROTOCOL_ERROR))
                return
            self._channels[syn.stream_id] = channel
            self._stream_of[channel] = syn.stream_id
            await self._write(spdy.syn_reply(syn.stream_id, self._headers.encode({})))
        elif frame.type == spdy.PING:
            await self._write(spdy.control_frame(spdy.PING, 0, frame.payload))
        elif frame.type == spdy.RST_STREAM and len(frame.payload) >= 4:
            stream_id = int.from_bytes(frame.payload[:4], "big") & 0x7FFFFFFF
            if process is not None and self._channels.get(stream_id) == STDIN:
                process.close_stdin()

    # -- the session ---------------------------------------------------------------------------

    async def send(self, channel: int, data: bytes) -> None:
        stream_id = self._stream_of.get(channel)
        if stream_id is None:
            return
        for start in range(0, len(data), spdy.DATA_LIMIT):
            await self._write(spdy.data_frame(stream_id, data[start : start + spdy.DATA_LIMIT]))

    async def serve_input(self, process: InputSink) -> None:
        sizes = ResizeDecoder()
        while True:
            frame = await self._next()
            if frame is None:
                return
            if isinstance(frame, spdy.ControlFrame) and frame.type == spdy.GOAWAY:
                return
            await self._handle(frame, process, sizes)

    async def _write_status(self, payload: bytes) -> None:
        await self.send(ERROR, payload)

    async def close(self) -> None:
        """Half-close every stream, GOAWAY, and hang up once the client has (or soon)."""
        with contextlib.suppress(ConnectionError, RuntimeError):
            for stream_id in sorted(self._channels):
                await self._write(spdy.data_frame(stream_id, b"", fin=True))
            await self._write(spdy.goaway(self._last_stream))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    while await self._next() is not None:
                        pass
        transport = self.request.transport
        if transport is not None:
            transport.close()


class StreamingServer:
    """``/exec/…`` on the agent's HTTP server (see the module docstring)."""

    def __init__(
        self, driver: CgroupDriver, lookup: TargetLookup, token: Callable[[], str | None]
    ) -> None:
        self.driver = driver
        self.lookup = lookup
        self.token = token

    def routes(self) -> list[tuple[str, str, Callable[[web.Request], Any]]]:
        return [
            ("*", "/exec/{namespace}/{pod}/{uid}/{container}", self.exec),
            ("*", "/exec/{namespace}/{pod}/{container}", self.exec),
            ("*", "/attach/{namespace}/{pod}/{uid}/{container}", self.attach),
            ("*", "/attach/{namespace}/{pod}/{container}", self.attach),
        ]

    async def exec(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, attach=False)

    async def attach(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, attach=True)

    async def _serve(self, request: web.Request, *, attach: bool) -> web.StreamResponse:
        if not authenticated(request, self.token()):
            return web.Response(status=401, text="Unauthorized")
        query = list(request.query.items())
        try:
            streams = stream_options(query)
        except ValueError as exc:
            return web.Response(status=400, text=str(exc))
        command = tuple(value for key, value in query if key == "command")
        info = request.match_info
        websocket = request.headers.get("Upgrade", "").lower() == "websocket"
        if websocket:
            offered = request.headers.getall("Sec-WebSocket-Protocol", [])
            name = negotiate(offered, WEBSOCKET_PROTOCOLS) if offered else ""
            if name is None:
                return web.Response(
                    status=403,
                    text=f"requested protocol(s) are not supported: {_go_list(offered)}; "
                    f"supports {_go_list(p for p in WEBSOCKET_PROTOCOLS if p)}",
                )
            protocol = WEBSOCKET_PROTOCOLS[name]
        elif _SPDY_UPGRADE in request.headers.get("Upgrade", "").lower():
            offered = request.headers.getall("X-Stream-Protocol-Version", [])
            if not offered:
                return web.Response(
                    status=400, text="unable to upgrade: X-Stream-Protocol-Version is required"
                )
            chosen = negotiate(offered, SPDY_PROTOCOLS)
            if chosen is None:
                return web.Response(
                    status=403,
                    headers={"X-Accepted-Stream-Protocol-Versions": ", ".join(SPDY_PROTOCOLS)},
                    text="unable to upgrade: unable to negotiate protocol: client supports "
                    f"{_go_list(offered)}, server accepts {_go_list(SPDY_PROTOCOLS)}",
                )
            protocol = SPDY_PROTOCOLS[chosen]
        else:
            return web.Response(status=400, text="Upgrade request required")
        target: ExecTarget | None = None
        failure: TargetError | None = None
        try:
            target = self.lookup(
                info["namespace"], info["pod"], info.get("uid", ""), info["container"]
            )
        except TargetError as exc:
            failure = exc
        if failure is not None and not protocol.stream_close:
            return web.Response(status=failure.status, text=failure.message)
        session: Session
        if websocket:
            ws = web.WebSocketResponse(protocols=[name] if name else (), autoping=True)
            await ws.prepare(request)
            session = WebSocketSession(ws, protocol, streams)
            await session.announce()
            response: web.StreamResponse = ws
        else:
            spdy_session = SpdySession(request, protocol, streams)
            if not await spdy_session.open():
                await spdy_session.close()
                return spdy_session.response
            session, response = spdy_session, spdy_session.response
        if failure is not None or target is None:
            message = failure.message if failure is not None else "no target"
            await session.finish(internal_error_status(f"unable to upgrade connection: {message}"))
            return response
        if attach:
            await self._attach(session, target)
        else:
            await self._run(session, target, command)
        return response

    async def _run(self, session: Session, target: ExecTarget, command: tuple[str, ...]) -> None:
        try:
            process = await ExecProcess.start(self.driver, target, command, session.streams)
        except ExecError as exc:
            status = internal_error_status(f"error executing command in container: {exc}")
            if session.protocol.stream_close:  # what upstream's translator makes of it
                status = internal_error_status(str(status["message"]))
            await session.finish(status)
            return
        inputs = asyncio.ensure_future(session.serve_input(process))
        outputs = [
            asyncio.ensure_future(process.pump(channel, _sender(session, channel)))
            for channel in (STDOUT, STDERR)
        ]
        exited = asyncio.ensure_future(process.wait())
        try:
            await asyncio.wait({exited, inputs}, return_when=asyncio.FIRST_COMPLETED)
            if not exited.done():  # the client went away first: so does the command
                process.kill()
                await exited
                return
            try:
                await asyncio.gather(*outputs)
            except (ConnectionError, RuntimeError):
                return
            code = exited.result()
            if code == 0:
                status = success_status()
            elif session.protocol.stream_close:
                status = translated_exit_status(code)
            else:
                status = exit_status(code, command)
            inputs.cancel()
            await session.finish(status)
        finally:
            for task in (inputs, *outputs, exited):
                task.cancel()
            process.kill()
            process.close()

    async def _attach(self, session: Session, target: ExecTarget) -> None:
        """Stream what the container writes from now on until it exits (its output goes to
        its log, stdout and stderr together, so it all arrives on the first requested)."""
        channel = STDOUT if session.streams.stdout else STDERR
        inputs = asyncio.ensure_future(session.serve_input(_Nowhere()))
        output = asyncio.ensure_future(
            follow_output(
                target, _sender(session, channel), session.streams.stdout or session.streams.stderr
            )
        )
        try:
            await asyncio.wait({inputs, output}, return_when=asyncio.FIRST_COMPLETED)
            if output.done():
                inputs.cancel()
                error = output.exception()
                if error is None:
                    await session.finish(success_status())
                elif isinstance(error, OSError) and not isinstance(error, ConnectionError):
                    message = f"error attaching to container: {error}"
                    await session.finish(internal_error_status(message))
        finally:
            for task in (inputs, output):
                task.cancel()


async def follow_output(
    target: ExecTarget, send: Callable[[bytes], Any], wanted: bool, *, every: float = 0.2
) -> None:
    """What the container's process appends to its log from now on, until the process is
    gone (polled, as ``pods/log?follow`` reads it)."""
    process = target.process
    with open(process.log_path, "rb") as log_file:
        log_file.seek(0, os.SEEK_END)
        while True:
            alive = is_running(process)
            while chunk := log_file.read(_CHUNK):
                if wanted:
                    await send(chunk)
            if not alive:
                return
            await asyncio.sleep(every)


def _sender(session: Session, channel: int) -> Callable[[bytes], Any]:
    async def send(data: bytes) -> None:
        await session.send(channel, data)

    return send


def _go_list(items: Iterable[str]) -> str:
    """A list as Go's %v prints it."""
    return "[" + " ".join(items) + "]"
