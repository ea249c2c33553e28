"""LIST: selectors, paging with continue tokens, exact-revision reads, server-side Tables.

A list at the cache's revision is a join of the stored bytes (no object is parsed), sent in
pieces (`httputil.Pieces`); without selector or limit the items are joined once per write
(`WatchCache.joined`), not once per request. Selectors are compiled into one check per
requirement, and a `metadata.name=` term looks its object up instead of scanning. A
continue token pins the revision of the first page, so later pages are read from the store
at that revision (upstream's consistent paging); a compacted revision is 410 Gone, as
upstream answers an expired continue token.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Callable, Sequence
from typing import Any, Literal

import orjson
from aiohttp import web

from inplace.api.selectors import (
    DOUBLE_EQUALS,
    EQUALS,
    IN,
    NOT_EQUALS,
    NOT_IN,
    FieldSelector,
    LabelSelector,
    Requirement,
    SelectorError,
)
from inplace.api.tables import to_table
from inplace.apiserver.cache import WatchCache, join_items
from inplace.apiserver.errors import StatusError, bad_request, gone
from inplace.apiserver.httputil import (
    int_param,
    json_response,
    parse_rv,
    pieces_response,
    wants_table,
)
from inplace.apiserver.routing import RequestInfo
from inplace.registry.kinds import Kind
from inplace.store import CompactedError, Entry, FutureRevisionError, Store

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
    checks: list[Matcher] = [
        *(label_checks(labels) if labels is not None else ()),
        *(field_checks(fields) if fields is not None else ()),
    ]
    if len(checks) == 1:
        return checks[0]

    def matches(obj: dict[str, Any]) -> bool:
        return all(check(obj) for check in checks)

    return matches


def selected_name(kind: Kind, query: dict[str, str]) -> str | None:
    """The name a `metadata.name=` term of the field selector requires, if it has one (the
    selector already parsed by `selector_filter`)."""
    text = query.get("fieldSelector")
    if not text or "metadata.name" not in text:
        return None
    selector = FieldSelector.parse(text, fields=kind.strategy.selectable_fields)
    return selector.exact("metadata.name")


def label_checks(selector: LabelSelector) -> list[Matcher]:
    """`selector.matches` on an object's labels as one check per requirement: a LIST or a
    watch runs them on every object, so the equality and set requirements (nearly all) are
    one look-up in a frozenset each."""
    if selector.matches_nothing:
        return [lambda obj: False]
    checks: list[Matcher] = []
    for requirement in selector.requirements:
        if requirement.operator in _LABEL_IN:
            checks.append(_label_in(requirement.key, frozenset(requirement.values)))
        elif requirement.operator in _LABEL_NOT_IN:
            checks.append(_label_not_in(requirement.key, frozenset(requirement.values)))
        else:
            checks.append(_label_requirement(requirement))
    return checks


_LABEL_IN = (IN, EQUALS, DOUBLE_EQUALS)
_LABEL_NOT_IN = (NOT_IN, NOT_EQUALS)


def _label_in(key: str, values: frozenset[str]) -> Matcher:
    def check(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels")
        return labels is not None and labels.get(key) in values

    return check


def _label_not_in(key: str, values: frozenset[str]) -> Matcher:
    def check(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels")
        return labels is None or labels.get(key) not in values

    return check


def _label_requirement(requirement: Requirement) -> Matcher:
    def check(obj: dict[str, Any]) -> bool:
        return requirement.matches(obj.get("metadata", {}).get("labels") or {})

    return check


def field_checks(selector: FieldSelector) -> list[Matcher]:
    """`selector.matches` as one check per term (its field's extractor, compared)."""
    extractors = selector.fields.extractors
    return [
        _field_equal(extractors[r.field], r.value)
        if r.equal
        else _field_not_equal(extractors[r.field], r.value)
        for r in selector.requirements
    ]


def _field_equal(extract: Callable[[Any], Any], value: str) -> Matcher:
    return lambda obj: extract(obj) == value


def _field_not_equal(extract: Callable[[Any], Any], value: str) -> Matcher:
    return lambda obj: extract(obj) != value


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


def list_pieces(kind: Kind, meta: dict[str, Any], items: Sequence[bytes]) -> list[bytes]:
    """A list object around `items` (stored bytes, joined by `join_items`), in pieces to send
    one after the other; no object is parsed, no item copied but the first and last."""
    head = b"".join(
        (
            b'{"kind":"',
            kind.list_kind.encode(),
            b'","apiVersion":"',
            kind.api_version.encode(),
            b'","metadata":',
            orjson.dumps(meta),
            b',"items":[',
        )
    )
    if not items:
        return [head + b"]}"]
    if len(items) == 1:
        return [b"".join((head, items[0], b"]}"))]
    return [head + items[0], *items[1:-1], items[-1] + b"]}"]


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
        selected: list[Entry] = []
        if token:
            selected, revision, next_token = await self._continue(kind, info, matches, limit, token)
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
            if matches is None and not limit and not wants_table(request):
                meta = {"resourceVersion": str(revision)}
                return pieces_response(
                    list_pieces(kind, meta, self.cache.joined(kind, info.namespace))
                )
            name = selected_name(kind, query)
            entries = (
                self.cache.entries(kind, info.namespace)
                if name is None
                else self.cache.named(kind, info.namespace, name)
            )
            for entry in entries:
                if matches is not None and not matches(entry.value):
                    continue
                if limit and len(selected) == limit:
                    next_token = encode_continue(revision, last_key)
                    break
                selected.append(entry)
                last_key = entry.key
        meta = {"resourceVersion": str(revision)}
        if next_token:
            meta["continue"] = next_token
        if wants_table(request):
            # The printers only read the objects (as for a GET's or a watch's Table): the
            # cache's own, not a parsed copy of each.
            objects = [entry.value for entry in selected]
            return json_response(table(kind, objects, request, meta))
        return pieces_response(list_pieces(kind, meta, join_items([e.raw for e in selected])))

    async def _continue(
        self, kind: Kind, info: RequestInfo, matches: Matcher | None, limit: int | None, token: str
    ) -> tuple[list[Entry], int, str | None]:
        revision, start = decode_continue(token)
        prefix = kind.storage_prefix(info.namespace)
        selected: list[Entry] = []
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
                    if limit and len(selected) == limit:
                        return selected, revision, encode_continue(revision, last)
                    selected.append(entry)
                last = entry.key
            if page.continue_key is None:
                return selected, revision, None

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
        meta = {"resourceVersion": str(revision)}
        return pieces_response(list_pieces(info.kind, meta, join_items(raws)))
