"""LIST: selectors, paging with continue tokens, exact-revision reads, server-side Tables.

A list at the cache's revision is a join of the stored bytes (no object is parsed). A
continue token pins the revision of the first page, so later pages are read from the store
at that revision (upstream's consistent paging); a compacted revision is 410 Gone, as
upstream answers an expired continue token.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Callable
from typing import Any, Literal

import orjson
from aiohttp import web

from inplace.api.selectors import FieldSelector, LabelSelector, SelectorError
from inplace.api.tables import to_table
from inplace.apiserver.cache import WatchCache
from inplace.apiserver.errors import StatusError, bad_request, gone
from inplace.apiserver.httputil import int_param, json_response, parse_rv, wants_table
from inplace.apiserver.routing import RequestInfo
from inplace.registry.kinds import Kind
from inplace.store import CompactedError, FutureRevisionError, Store

Matcher = Callable[[dict[str, Any]], bool]


def selector_filter(kind: Kind, query: dict[str, str]) -> Matcher | None:
    """The `labelSelector` and `fieldSelector` of a request as one predicate (None: all)."""
    try:
        labels = LabelSelector.parse(query["labelSelector"]) if query.get("labelSelector") else None
        fields = (
            FieldSelector.parse(query["fieldSelector"], fields=kind.strategy.selectable_fields)
            if query.get("fieldSelector")
            else None
        )
    except SelectorError as exc:
        raise bad_request(str(exc)) from None
    if labels is None and fields is None:
        return None

    def matches(obj: dict[str, Any]) -> bool:
        if labels is not None and not labels.matches(obj.get("metadata", {}).get("labels")):
            return False
        return fields is None or fields.matches(obj)

    return matches


def encode_continue(revision: int, key: str) -> str:
    """A continue token in upstream's shape: base64 of {"v", "rv", "start"}."""
    return base64.urlsafe_b64encode(
        orjson.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": key})
    ).decode()


def decode_continue(token: str) -> tuple[int, str]:
    """The (revision, last key) a continue token carries; 400 when it is not one of ours."""
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise bad_request("continue key is not valid: invalid token") from None


def table(
    kind: Kind,
    objects: list[dict[str, Any]],
    request: web.Request,
    list_meta: dict[str, Any] | None,
) -> dict[str, Any]:
    """The meta.k8s.io/v1 Table of `objects`, with `includeObject` as the client asked."""
    requested = request.query.get("includeObject", "Metadata")
    include: Literal["None", "Metadata", "Object"] = (
        "None" if requested == "None" else "Object" if requested == "Object" else "Metadata"
    )
    return to_table(
        kind.strategy.table,
        objects,
        now=datetime.datetime.now(datetime.UTC),
        include_object=include,
        list_metadata=list_meta,
    )


def list_body(kind: Kind, meta: dict[str, Any], raws: list[bytes]) -> bytes:
    """A list object joined from stored bytes, without parsing any of them."""
    return b"".join(
        (
            b'{"kind":"',
            kind.list_kind.encode(),
            b'","apiVersion":"',
            kind.api_version.encode(),
            b'","metadata":',
            orjson.dumps(meta),
            b',"items":[',
            b",".join(raws),
            b"]}",
        )
    )


class Lists:
    """Serves the list verb of every stored kind from the watch cache (and the store)."""

    def __init__(self, cache: WatchCache, store: Store) -> None:
        self.cache = cache
        self.store = store

    async def serve(
        self, request: web.Request, info: RequestInfo, query: dict[str, str]
    ) -> web.Response:
        kind = info.kind
        matches = selector_filter(kind, query)
        limit = int_param(query, "limit")
        token = query.get("continue")
        rv = query.get("resourceVersion")
        raws: list[bytes] = []
        if token:
            raws, revision, next_token = await self._continue(kind, info, matches, limit, token)
        else:
            if rv and rv != "0":
                if query.get("resourceVersionMatch") == "Exact":
                    return await self._exact(info, matches, parse_rv(rv))
                try:
                    await self.cache.wait_for(parse_rv(rv), timeout=3.0)
                except TimeoutError:
                    raise StatusError(
                        504,
                        f"Too large resource version: {rv}, current: {self.cache.revision}",
                        reason="Timeout",
                    ) from None
            elif not rv:
                await self.cache.sync()
            revision = self.cache.revision
            next_token = None
            last_key = ""
            for entry in self.cache.entries(kind, info.namespace):
                if matches is not None and not matches(entry.value):
                    continue
                if limit and len(raws) == limit:
                    next_token = encode_continue(revision, last_key)
                    break
                raws.append(entry.raw)
                last_key = entry.key
        meta = {"resourceVersion": str(revision)}
        if next_token:
            meta["continue"] = next_token
        if wants_table(request):
            objects = [orjson.loads(r) for r in raws]
            return json_response(table(kind, objects, request, meta))
        return web.Response(body=list_body(kind, meta, raws), content_type="application/json")

    async def _continue(
        self, kind: Kind, info: RequestInfo, matches: Matcher | None, limit: int | None, token: str
    ) -> tuple[list[bytes], int, str | None]:
        revision, start = decode_continue(token)
        prefix = kind.storage_prefix(info.namespace)
        raws: list[bytes] = []
        last = start
        while True:
            try:
                page = await self.store.list(
                    prefix, revision=revision, limit=max(limit or 500, 1), start_after=last
                )
            except CompactedError:
                raise gone(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter, or use "
                    "the continue token in this response to retrieve the remainder of the results."
                ) from None
            for entry in page.items:
                if matches is None or matches(entry.value):
                    if limit and len(raws) == limit:
                        return raws, revision, encode_continue(revision, last)
                    raws.append(entry.raw)
                last = entry.key
            if page.continue_key is None:
                return raws, revision, None

    async def _exact(
        self, info: RequestInfo, matches: Matcher | None, revision: int
    ) -> web.Response:
        try:
            page = await self.store.list(
                info.kind.storage_prefix(info.namespace), revision=revision
            )
        except CompactedError:
            raise gone("The resourceVersion for the provided list is too old.") from None
        except FutureRevisionError:
            raise StatusError(
                504,
                f"Too large resource version: {revision}, current: {self.store.current_revision}",
                reason="Timeout",
            ) from None
        raws = [e.raw for e in page.items if matches is None or matches(e.value)]
        body = list_body(info.kind, {"resourceVersion": str(revision)}, raws)
        return web.Response(body=body, content_type="application/json")
