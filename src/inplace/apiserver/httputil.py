"""The HTTP pieces every handler shares: per-request keys, JSON answers, query parameters,
and the patch type a PATCH's Content-Type names.

Kept apart from the handlers so that discovery, lists, watches and the resource verbs parse
`limit`, `resourceVersion` and `Accept: ...;as=Table` one way and answer with one encoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.payload import Payload

from inplace.apiserver.auth import User
from inplace.apiserver.cache import PIECE
from inplace.apiserver.errors import StatusError, bad_request, unsupported_media_type
from inplace.apiserver.routing import RequestInfo

#: The authenticated user (set by the server's middleware for every request).
USER = web.RequestKey("user", User)
#: What a resource request asks for (set once the path is resolved; labels the metrics).
INFO = web.RequestKey("info", RequestInfo)
#: The patch flavour named by a PATCH's Content-Type ("json", "merge", "strategic", "apply").
PATCH_TYPE = web.RequestKey("patch_type", str)

_PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}


def json_response(body: Any, *, status: int = 200, warnings: tuple[str, ...] = ()) -> web.Response:
    """`body` as JSON (a large one sent in pieces: `Pieces`); each warning becomes a
    `Warning: 299 - "..."` header, as upstream's."""
    encoded = orjson.dumps(body)
    if len(encoded) > PIECE:
        view = memoryview(encoded)
        pieces = Pieces([view[i : i + PIECE] for i in range(0, len(view), PIECE)])
        response = web.Response(body=pieces, status=status, content_type="application/json")
    else:
        response = web.Response(body=encoded, status=status, content_type="application/json")
    for warning in warnings:
        response.headers.add("Warning", f"299 - {orjson.dumps(warning).decode()}")
    return response


class Pieces(Payload):
    """A body sent as the byte strings it is made of, one write each, never joined.

    Over TLS a single write of a large body is encrypted whole before its first byte leaves
    (uvloop's SSL protocol fills its buffer with every record, then sends); written piece by
    piece, the client reads and decrypts the first piece while the next is encrypted, and no
    copy of the whole body is made. A LIST of 2,000 pods (4.4 MB) took half as long so.
    """

    def __init__(
        self, pieces: Sequence[bytes | memoryview], content_type: str = "application/json"
    ) -> None:
        super().__init__(pieces, content_type=content_type)
        self.pieces = pieces
        self._size = sum(len(piece) for piece in pieces)

    def join(self) -> bytes:
        """The whole body."""
        return b"".join(self.pieces)

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self.join().decode(encoding, errors)

    async def as_bytes(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return self.join()

    async def write(self, writer: AbstractStreamWriter) -> None:
        for piece in self.pieces:
            await writer.write(piece)

    async def write_with_length(
        self, writer: AbstractStreamWriter, content_length: int | None
    ) -> None:
        if content_length is None:
            await self.write(writer)
            return
        for piece in self.pieces:
            if content_length <= 0:
                return
            await writer.write(piece[:content_length])
            content_length -= len(piece)


def pieces_response(pieces: Sequence[bytes | memoryview]) -> web.Response:
    """A JSON answer made of `pieces` (see `Pieces`); one piece is sent as it is."""
    if len(pieces) == 1:
        return web.Response(body=pieces[0], content_type="application/json")
    return web.Response(body=Pieces(pieces), content_type="application/json")


def not_found_path(path: str) -> StatusError:
    """Upstream's 404 for a path nothing is served at."""
    return StatusError(404, f'the server could not find the requested resource ("{path}")')


def wants_table(request: web.Request) -> bool:
    """Whether the client's first choice is a server-side Table (`kubectl get` asks so)."""
    accept = request.headers.get("Accept", "")
    first = accept.split(",", 1)[0]
    return "as=Table" in first


def int_param(query: dict[str, str], name: str) -> int | None:
    """An integer query parameter, None when absent or empty; 400 naming it when malformed."""
    value = query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"{name}: invalid value {value!r}: must be an integer") from None


def parse_rv(value: str) -> int:
    """A resourceVersion given by a client: our revisions are integers."""
    try:
        return int(value)
    except ValueError:
        raise bad_request(f'invalid resource version "{value}"') from None


def patch_type_of(content_type: str) -> str:
    """The patch flavour a PATCH's Content-Type names (`PATCH_TYPE`); 415 for any other."""
    media = content_type.split(";", 1)[0].strip().lower()
    try:
        return _PATCH_TYPES[media]
    except KeyError:
        raise unsupported_media_type(media) from None
