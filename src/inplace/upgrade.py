"""Taking over an upgraded HTTP connection in an aiohttp server (SPDY, or a proxied upgrade).

aiohttp upgrades only to WebSocket itself; for anything else a handler takes the raw
connection: it gives the request's protocol a *payload parser* that receives every byte the
client sends from then on (aiohttp's own hook, which its WebSocket support uses), answers
``101 Switching Protocols`` with a ``StreamResponse`` and writes raw bytes with
``StreamResponse.write`` (a 101 has no body framing, so they go out as they are). The hook is
installed before the 101 goes out, so no early byte from the client reaches the HTTP parser.
Used by the node agent's SPDY sessions and by the API server's proxy to the node agents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from aiohttp import web

__all__ = ["hijack", "is_upgrade_request"]


class _Feeder:
    """aiohttp's payload-parser interface, forwarding to two callbacks."""

    def __init__(self, on_data: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
        self._on_data = on_data
        self._on_eof = on_eof

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self._on_data(data)
        return False, b""

    def feed_eof(self) -> None:
        self._on_eof()


def hijack(
    request: web.Request, on_data: Callable[[bytes], None], on_eof: Callable[[], None]
) -> None:
    """Route every byte the client sends from now on to ``on_data``, and its hang-up to
    ``on_eof``. Call it before preparing the 101 response."""
    cast(Any, request.protocol).set_parser(_Feeder(on_data, on_eof))


def is_upgrade_request(request: web.Request) -> bool:
    """``Connection: Upgrade`` with an ``Upgrade`` header (upstream's
    ``httpstream.IsUpgradeRequest``)."""
    connection = [part.strip().lower() for part in request.headers.get("Connection", "").split(",")]
    return "upgrade" in connection and bool(request.headers.get("Upgrade"))
