"""The HTTP pieces every handler shares: per-request keys, JSON answers, query parameters,
and the patch type a PATCH's Content-Type names.

Kept apart from the handlers so that discovery, lists, watches and the resource verbs parse
`limit`, `resourceVersion` and `Accept: ...;as=Table` one way and answer with one encoder.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from inplace.apiserver.auth import User
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
    """`body` as JSON; each warning becomes a `Warning: 299 - "..."` header, as upstream's."""
    response = web.Response(body=orjson.dumps(body), status=status, content_type="application/json")
    for warning in warnings:
        response.headers.add("Warning", f"299 - {orjson.dumps(warning).decode()}")
    return response


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
