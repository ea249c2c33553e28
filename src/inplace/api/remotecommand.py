"""Kubernetes' remote-command protocols (``kubectl exec``, ``kubectl attach``), without I/O.

Shared by the API server, which checks a request and proxies it to the pod's node, and the
node agent, which runs the command. Names, numbers and messages are upstream's:

* **Channels** (``k8s.io/apimachinery/pkg/util/remotecommand``): stdin 0, stdout 1, stderr 2,
  the error channel 3 (how the command ended) and the terminal-resize channel 4. Version 5
  adds the *close signal*: a message ``[255, channel]`` half-closes a channel, which is how a
  client says "stdin is at its end" over a WebSocket.
* **WebSocket subprotocols** (``wsstream`` and kubelet's ``createWebSocketStreams``): every
  message starts with its channel number; ``channel.k8s.io``, ``v4.channel.k8s.io`` and
  ``v5.channel.k8s.io`` carry raw bytes, the ``base64.`` variants an ASCII digit and base64
  text. The server picks the first protocol the client offers that it supports (the client's
  order wins); no offer at all means ``channel.k8s.io``.
* **SPDY stream protocols** (``X-Stream-Protocol-Version``, which kubectl before 1.30 and as
  a fallback uses): ``v4.channel.k8s.io`` down to ``channel.k8s.io``; one SPDY stream per
  channel, named by its ``streamType`` header.
* **The error channel**: from version 4 on it carries a JSON ``metav1.Status`` — ``Success``,
  or ``Failure`` with reason ``NonZeroExitCode`` and the code as the cause ``ExitCode`` —
  before that, the failure's message as text and nothing on success.
* **Terminal sizes** arrive on the resize channel as a stream of JSON objects
  ``{"Width":W,"Height":H}`` (Go's decoder matches the names without regard to case).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "ERROR",
    "NODE_STREAM_PARAMS",
    "RESIZE",
    "SPDY_PROTOCOLS",
    "STDERR",
    "STDIN",
    "STDOUT",
    "STREAM_CLOSE",
    "STREAM_TYPES",
    "WEBSOCKET_PROTOCOLS",
    "ChannelMessage",
    "CloseSignal",
    "ExecOptions",
    "Protocol",
    "ResizeDecoder",
    "StreamOptions",
    "decode_message",
    "encode_message",
    "exec_options",
    "exit_status",
    "internal_error_status",
    "negotiate",
    "node_query",
    "parse_bool",
    "status_text",
    "stream_options",
    "success_status",
    "translated_exit_status",
]

STDIN: Final = 0
STDOUT: Final = 1
STDERR: Final = 2
ERROR: Final = 3
RESIZE: Final = 4
STREAM_CLOSE: Final = 255
"""Version 5's close signal: the message ``[255, channel]`` half-closes ``channel``."""

STREAM_TYPES: Final = {"stdin": STDIN, "stdout": STDOUT, "stderr": STDERR, "error": ERROR}
"""SPDY's ``streamType`` header → channel (``resize`` is :data:`RESIZE`, from version 3)."""

NON_ZERO_EXIT_CODE: Final = "NonZeroExitCode"
EXIT_CODE_CAUSE: Final = "ExitCode"


@dataclass(frozen=True)
class Protocol:
    """One remote-command protocol as a server speaks it."""

    name: str
    base64: bool = False
    """WebSocket only: channel as an ASCII digit and base64 text (``base64.`` protocols)."""
    json_status: bool = False
    """Version 4 on: a JSON ``Status`` on the error channel, else the failure's message."""
    stream_close: bool = False
    """Version 5: the client half-closes channels with :data:`STREAM_CLOSE`."""
    resize: bool = True
    """Whether the client may send terminal sizes (SPDY from version 3; WebSocket always)."""


WEBSOCKET_PROTOCOLS: Final = {
    "v5.channel.k8s.io": Protocol("v5.channel.k8s.io", json_status=True, stream_close=True),
    "v4.channel.k8s.io": Protocol("v4.channel.k8s.io", json_status=True),
    "v4.base64.channel.k8s.io": Protocol("v4.base64.channel.k8s.io", base64=True, json_status=True),
    "channel.k8s.io": Protocol("channel.k8s.io"),
    "base64.channel.k8s.io": Protocol("base64.channel.k8s.io", base64=True),
    "": Protocol(""),
}
"""The WebSocket subprotocols the node agent serves (kubelet's, plus version 5, which
upstream's API server translates to SPDY for the kubelet)."""

SPDY_PROTOCOLS: Final = {
    "v4.channel.k8s.io": Protocol("v4.channel.k8s.io", json_status=True),
    "v3.channel.k8s.io": Protocol("v3.channel.k8s.io"),
    "v2.channel.k8s.io": Protocol("v2.channel.k8s.io", resize=False),
    "channel.k8s.io": Protocol("channel.k8s.io", resize=False),
}
"""The SPDY stream protocols (``X-Stream-Protocol-Version``), newest first."""


def negotiate(offered: Iterable[str], supported: Iterable[str]) -> str | None:
    """The first protocol the client offers that the server supports (upstream's rule: the
    client's order wins). Header values may list several protocols separated by commas."""
    accepted = set(supported)
    for value in offered:
        for protocol in value.split(","):
            if protocol.strip() in accepted:
                return protocol.strip()
    return None


# -- the request ------------------------------------------------------------------------------


def parse_bool(values: Sequence[str]) -> bool:
    """A boolean query parameter as upstream converts it: absent is false, ``0`` and
    ``false`` (any case) are false, anything else is true (``Convert_Slice_string_To_bool``)."""
    if not values:
        return False
    return not (values[0] == "0" or values[0].lower() == "false")


@dataclass(frozen=True)
class ExecOptions:
    """``PodExecOptions`` (also ``PodAttachOptions``, which has no ``command``)."""

    container: str
    command: tuple[str, ...]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def _query(items: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in items:
        out.setdefault(key, []).append(value)
    return out


def exec_options(items: Iterable[tuple[str, str]]) -> ExecOptions:
    """The options of a ``pods/exec`` or ``pods/attach`` request from its query (every
    ``command`` value, in order)."""
    query = _query(items)
    return ExecOptions(
        container=(query.get("container") or [""])[0],
        command=tuple(query.get("command") or ()),
        stdin=parse_bool(query.get("stdin", [])),
        stdout=parse_bool(query.get("stdout", [])),
        stderr=parse_bool(query.get("stderr", [])),
        tty=parse_bool(query.get("tty", [])),
    )


NODE_STREAM_PARAMS = (
    ("stdin", "input"),
    ("stdout", "output"),
    ("stderr", "error"),
    ("tty", "tty"),
)
"""Each stream flag and the query parameter a kubelet reads it from (upstream's API server
sends these, whatever the client's own parameters were)."""


def node_query(options: ExecOptions) -> list[tuple[str, str]]:
    """The query the API server sends the node, as upstream's ``streamParams`` writes it:
    kubelet's parameter names (``input``, ``output``, ``error``, ``tty``: k8s.io/api's
    ``ExecStdinParam`` …), flags as ``1``, the container in the path."""
    query: list[tuple[str, str]] = []
    for flag, param in NODE_STREAM_PARAMS:
        if getattr(options, flag):
            query.append((param, "1"))
    query += [("command", part) for part in options.command]
    return query


@dataclass(frozen=True)
class StreamOptions:
    """The streams a session uses (kubelet's ``remotecommand.Options``)."""

    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def stream_options(items: Iterable[tuple[str, str]]) -> StreamOptions:
    """Kubelet's ``NewOptions``: a terminal merges stderr into stdout; a session without
    any of the three standard streams is refused (ValueError with upstream's message)."""
    query = _query(items)
    stdin, stdout, stderr, tty = (
        (query.get(param) or [""])[0] == "1" for _, param in NODE_STREAM_PARAMS
    )
    if tty and stderr:
        stderr = False
    if not (stdin or stdout or stderr):
        raise ValueError("you must specify at least 1 of stdin, stdout, stderr")
    return StreamOptions(stdin=stdin, stdout=stdout, stderr=stderr, tty=tty)


# -- messages ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChannelMessage:
    channel: int
    data: bytes


@dataclass(frozen=True)
class CloseSignal:
    """Version 5: the client closed its side of ``channel``."""

    channel: int


def decode_message(protocol: Protocol, message: bytes) -> ChannelMessage | CloseSignal | None:
    """One WebSocket message from the client; None for an empty or undecodable one, which
    upstream skips. Text and binary messages are read alike (clients send either)."""
    if not message:
        return None
    if protocol.stream_close and message[0] == STREAM_CLOSE:
        if len(message) != 2:
            raise ValueError(
                f"Single channel byte should follow stream close signal. Got {len(message) - 1} "
                "bytes"
            )
        return CloseSignal(message[1])
    if protocol.base64:
        try:
            return ChannelMessage(
                message[0] - ord("0"), base64.b64decode(message[1:], validate=True)
            )
        except (binascii.Error, ValueError):
            return None
    return ChannelMessage(message[0], bytes(message[1:]))


def encode_message(protocol: Protocol, channel: int, data: bytes) -> bytes | str:
    """One message to the client: bytes for a binary message, str for a text one."""
    if protocol.base64:
        return chr(ord("0") + channel) + base64.b64encode(data).decode("ascii")
    return bytes((channel,)) + data


# -- how the command ended --------------------------------------------------------------------


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def _exit(code: int, message: str) -> dict[str, Any]:
    return {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": NON_ZERO_EXIT_CODE,
        "details": {"causes": [{"reason": EXIT_CODE_CAUSE, "message": str(code)}]},
    }


def exit_status(code: int, command: Sequence[str]) -> dict[str, Any]:
    """A non-zero exit as kubelet reports it (the runtime's error: containerd's words)."""
    words = " ".join(command)
    return _exit(
        code,
        "command terminated with non-zero exit code: "
        f"error executing command [{words}], exit code {code}",
    )


def translated_exit_status(code: int) -> dict[str, Any]:
    """A non-zero exit as upstream's API server reports it to a version 5 client: it
    translates the stream to SPDY for the kubelet and wraps the client-side error."""
    return _exit(
        code,
        f"command terminated with non-zero exit code: command terminated with exit code {code}",
    )


def internal_error_status(message: str) -> dict[str, Any]:
    """``apierrors.NewInternalError``."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def status_text(status: Mapping[str, Any]) -> bytes:
    """What versions before 4 write on the error channel: nothing for a success, else the
    message."""
    if status.get("status") == "Success":
        return b""
    return str(status.get("message") or "").encode()


class ResizeDecoder:
    """Terminal sizes from the resize channel: a stream of JSON objects, which may arrive
    split across messages or several in one."""

    LIMIT = 65536
    """Characters kept while waiting for the end of an object (a client sends a few dozen)."""

    def __init__(self) -> None:
        self._buffer = ""
        self._decoder = json.JSONDecoder()

    def feed(self, data: bytes) -> list[tuple[int, int]]:
        """The (width, height) pairs completed by ``data``; malformed input is dropped up to
        the next line, as a client writes one object per line."""
        self._buffer += data.decode("utf-8", "replace")
        sizes: list[tuple[int, int]] = []
        while True:
            text = self._buffer.lstrip()
            if not text:
                self._buffer = ""
                return sizes
            try:
                value, end = self._decoder.raw_decode(text)
            except json.JSONDecodeError:
                newline = text.find("\n")
                if newline < 0:
                    self._buffer = text if len(text) <= self.LIMIT else ""
                    return sizes
                self._buffer = text[newline + 1 :]
                continue
            self._buffer = text[end:]
            if isinstance(value, dict):
                fields = {str(k).lower(): v for k, v in value.items()}
                width, height = fields.get("width"), fields.get("height")
                if isinstance(width, int) and isinstance(height, int):
                    sizes.append((max(0, min(width, 0xFFFF)), max(0, min(height, 0xFFFF))))
