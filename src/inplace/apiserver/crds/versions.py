"""Several versions of one CRD: `None` conversion, and the deprecated versions' warning.

Objects are stored in the storage version (`rest.py` writes `Kind.storage_api_version`).
Upstream's `None` converter serves them in any other served version by rewriting the
top-level `apiVersion` and nothing else; here that happens where a response leaves the
server (`convert_response`, for every answer that is one JSON document: objects, lists,
Tables' embedded objects, a delete's object) and where a watch event is written
(`convert_raw`). A version marked `deprecated` sends its warning with every answer.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from inplace.apiserver.httputil import Pieces
from inplace.registry.kinds import Kind


def needs_conversion(kind: Kind) -> bool:
    """Whether objects of `kind` are stored in another version than the one asked for."""
    return kind.crd is not None and kind.crd.storage_version not in ("", kind.version)


def _convert(kind: Kind, obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    stored = kind.storage_api_version
    if obj.get("apiVersion") == stored:
        obj["apiVersion"] = kind.api_version
    for item in obj.get("items") or ():
        if isinstance(item, dict) and item.get("apiVersion") == stored:
            item["apiVersion"] = kind.api_version
    for row in obj.get("rows") or ():
        if isinstance(row, dict):
            _convert(kind, row.get("object"))
    return obj


def convert_raw(kind: Kind, raw: bytes) -> bytes:
    """A stored object's bytes as `kind`'s version serves them."""
    if not needs_conversion(kind):
        return raw
    return orjson.dumps(_convert(kind, orjson.loads(raw)))


def convert_response(kind: Kind | None, response: web.StreamResponse) -> web.StreamResponse:
    """A finished answer about `kind` as its version serves it, with its deprecation warning."""
    if kind is None or kind.crd is None:
        return response
    warning = kind.crd.deprecation_warning
    if warning and not response.prepared:
        response.headers.add("Warning", f"299 - {orjson.dumps(warning).decode()}")
    if not needs_conversion(kind) or not isinstance(response, web.Response):
        return response
    body = response.body
    if isinstance(body, Pieces):
        body = body.join()
    if isinstance(body, bytes) and response.content_type == "application/json":
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError:
            return response
        response.body = orjson.dumps(_convert(kind, document))
    return response
