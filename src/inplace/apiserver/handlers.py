"""The resource verbs over HTTP: resolve the path, read the body, authorize, dispatch.

`/api/...` and `/apis/...` requests that are not discovery land here. The path becomes a
`RequestInfo` (verb, kind, namespace, name, subresource); the body is decoded by its
Content-Type (JSON, YAML, protobuf); the user is authorized against the object as stored and
as sent; then the verb goes to `REST` (create, update, patch, delete), to `Lists` / `Watches`
(reads that stream or page), or to a subresource. The rules themselves live in `rest.py` and
`subresources.py`, which know no HTTP.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiohttp import web

from inplace.api.validation.errors import ValidationError
from inplace.apiserver import subresources
from inplace.apiserver.auth import MASTERS_GROUP, Authenticator, User
from inplace.apiserver.authz import Attributes, Authorizers, forbidden_error
from inplace.apiserver.authz.reviews import AUTHENTICATION_GROUP, REVIEW_KINDS, review
from inplace.apiserver.cache import WatchCache
from inplace.apiserver.errors import StatusError, bad_request, method_not_allowed
from inplace.apiserver.httputil import (
    INFO,
    PATCH_TYPE,
    USER,
    int_param,
    json_response,
    not_found_path,
    patch_type_of,
    wants_table,
)
from inplace.apiserver.lists import Lists, selector_filter, table
from inplace.apiserver.logs import Logs
from inplace.apiserver.nodemetrics import MetricsProvider, read_metrics
from inplace.apiserver.rest import REST
from inplace.apiserver.routing import RequestInfo, resolve
from inplace.apiserver.serviceaccounts.review import token_review
from inplace.apiserver.serviceaccounts.tokens import ServiceAccountTokens
from inplace.apiserver.streaming import STREAMING_SUBRESOURCES, PodStreams
from inplace.apiserver.watch import Watches
from inplace.apiserver.webhooks import subresource_create
from inplace.registry.kinds import Kind
from inplace.registry.managedfields import manager_from_user_agent, option_errors
from inplace.registry.protobuf import PROTOBUF_CONTENT_TYPE, ProtobufError, decode_object
from inplace.registry.served import Registry


def object_body(body: Any, kind: Kind) -> dict[str, Any]:
    """The body of a create or update, which must be an object."""
    if not isinstance(body, dict):
        raise bad_request(f"the body of the request must be a {kind.kind} object")
    return body


#: The options kind upstream validates `dryRun` in, by verb (named in its 422).
_OPTIONS_KIND = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}


def requested_dry_run(verb: str, query_values: list[str], body: Any) -> bool:
    """Whether a write is a server-side dry run: `dryRun=All` in the query, or, for deletes,
    `dryRun: [All]` in the DeleteOptions body (where `kubectl delete --dry-run=server` puts it).

    Any other value is refused (422) as upstream refuses it, rather than taken as "not a dry
    run": a mistyped dry run must never write.
    """
    values = list(query_values)
    if verb in ("delete", "deletecollection") and isinstance(body, dict):
        in_body = body.get("dryRun")
        values += in_body if isinstance(in_body, list) else [] if in_body is None else [in_body]
    bad = [v for v in values if v != "All"]
    if bad:
        options = _OPTIONS_KIND.get(verb, "CreateOptions")
        listed = ", ".join(orjson.dumps(str(v)).decode() for v in values)
        why = f'Unsupported value: []string{{{listed}}}: supported values: "All"'
        raise StatusError(
            422,
            f'{options}.meta.k8s.io "" is invalid: dryRun: {why}',
            details={
                "kind": options,
                "group": "meta.k8s.io",
                "causes": [{"reason": "FieldValueNotSupported", "message": why, "field": "dryRun"}],
            },
        )
    return bool(values)


def write_options(
    verb: str, query: dict[str, str], user_agent: str, patch_type: str | None
) -> tuple[str, bool]:
    """The field manager a write is credited to and whether an apply forces: the
    ``fieldManager`` parameter, else the user agent's first word (as upstream derives it);
    a 422 naming the option when upstream's ValidatePatchOptions (or its create and update
    twins) refuses them."""
    manager = query.get("fieldManager", "")
    raw_force = query.get("force") if verb == "patch" else None
    force = False
    if raw_force is not None:
        if raw_force not in _BOOLS:
            raise bad_request(f'strconv.ParseBool: parsing "{raw_force}": invalid syntax')
        force = _BOOLS[raw_force]
    apply = patch_type == "apply"
    errors = option_errors(manager, force_given=raw_force is not None, apply=apply)
    if errors:
        error = ValidationError(_OPTIONS_KIND[verb], "", errors, group="meta.k8s.io")
        raise StatusError(422, error.message(), body=error.status())
    return manager or manager_from_user_agent(user_agent), force


#: Go's strconv.ParseBool.
_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


class _YAMLLoader(yaml.SafeLoader):
    """YAML as upstream reads it into JSON: a timestamp stays a string."""


_YAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def delete_options(body: Any, query: dict[str, str]) -> dict[str, Any]:
    """DeleteOptions from the body, with the query's gracePeriodSeconds and propagationPolicy
    on top (upstream reads the query only when there is no body; both are honoured here)."""
    options: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    if "gracePeriodSeconds" in query:
        options["gracePeriodSeconds"] = int_param(query, "gracePeriodSeconds")
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    policy = options.get("propagationPolicy")
    if policy not in (None, "Orphan", "Background", "Foreground"):
        raise StatusError(
            422,
            f'propagationPolicy: Unsupported value: "{policy}": supported values: '
            '"Foreground", "Background", "Orphan"',
        )
    return options


def single_name(field_selector: str) -> str:
    """The name a `metadata.name=NAME` field selector (alone) selects, else ""."""
    for prefix in ("metadata.name==", "metadata.name="):
        if field_selector.startswith(prefix) and "," not in field_selector:
            return field_selector[len(prefix) :]
    return ""


def decode_message(exc: Exception) -> str:
    """The first line of a decoder's error, for a 400 that stays one line."""
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


class Resources:
    """Serves every verb on every served kind (stored, or metrics.k8s.io from memory)."""

    def __init__(
        self,
        registry: Registry,
        rest: REST,
        cache: WatchCache,
        authz: Authorizers,
        lists: Lists,
        watches: Watches,
        *,
        log_root: Path,
        metrics_provider: MetricsProvider | None = None,
        authn: Authenticator | None = None,
        tokens: ServiceAccountTokens | None = None,
        streams: PodStreams | None = None,
    ) -> None:
        self.registry = registry
        self.rest = rest
        self.cache = cache
        self.authz = authz
        self.lists = lists
        self.watches = watches
        self.logs = Logs(rest, log_root)
        self.metrics_provider = metrics_provider
        self.streams = streams
        self._pdbs = registry.by_kind("policy", "PodDisruptionBudget")
        self.authn = authn
        self.tokens = tokens

    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        info = resolve(self.registry, request.method, request.path, query)
        if info is None:
            raise not_found_path(request.path)
        if info.subresource in STREAMING_SUBRESOURCES:
            if request.method not in ("GET", "POST"):
                raise method_not_allowed(request.method, request.path)
            # Authorized as `create` whatever the method (upstream, for WebSocket GETs).
            info = dataclasses.replace(info, verb="create")
            request[INFO] = info
            await self.authorize(request[USER], info, None, query)
            if self.streams is None:
                raise StatusError(503, f"{info.kind.plural}/{info.subresource} is not served")
            return await self.streams.serve(request, info)
        request[INFO] = info
        user = request[USER]
        body = None
        if info.verb in ("create", "update", "patch") or (
            info.verb in ("delete", "deletecollection") and request.can_read_body
        ):
            body = await self.read_body(request, info)
        await self.authorize(user, info, body, query)
        kind = info.kind
        if (kind.group, kind.kind) == (AUTHENTICATION_GROUP, "TokenReview"):
            if self.authn is None or self.tokens is None:
                raise StatusError(503, "token reviews are not served without authentication")
            answer = token_review(self.authn, self.tokens.audiences, kind.api_version, body)
            return json_response(answer, status=201)
        if (kind.group, kind.kind) in REVIEW_KINDS:
            answer = review(
                self.authz, kind.group, kind.kind, kind.api_version, user, info.namespace, body
            )
            return json_response(answer, status=201)
        if not kind.stored:
            return json_response(await read_metrics(self.metrics_provider, info))
        dry_run = info.verb in _OPTIONS_KIND and requested_dry_run(
            info.verb, request.query.getall("dryRun", []), body
        )
        if info.verb == "get":
            return await self._get(request, info, query)
        if info.verb == "list":
            return await self.lists.serve(request, info, query)
        if info.verb == "watch":
            return await self.watches.serve(request, info, query)
        if info.verb == "create":
            return await self._create(request, info, query, body, dry_run)
        if info.verb in ("update", "patch"):
            return await self._write(request, info, query, body, dry_run)
        if info.verb == "delete":
            assert info.name is not None
            options = delete_options(body, query)
            obj = await self.rest.delete(
                info.kind, info.namespace, info.name, options, dry_run=dry_run, user=request[USER]
            )
            return json_response(obj)
        if info.verb == "deletecollection":
            return await self._delete_collection(info, query, body, dry_run, request[USER])
        raise StatusError(405, f"unsupported verb {info.verb}")

    async def _get(
        self, request: web.Request, info: RequestInfo, query: dict[str, str]
    ) -> web.StreamResponse:
        if info.subresource == "log":
            return await self.logs.serve(request, info, query)
        entry = await self.rest.get_entry(info.kind, info.namespace, info.name or "")
        if info.subresource == "scale":
            return json_response(subresources.scale_of(info.kind, entry.value))
        if wants_table(request):
            return json_response(table(info.kind, [entry.value], request, None))
        return web.Response(body=entry.raw, content_type="application/json")

    async def _create(
        self,
        request: web.Request,
        info: RequestInfo,
        query: dict[str, str],
        body: Any,
        dry_run: bool,
    ) -> web.Response:
        kind, ns, rest = info.kind, info.namespace, self.rest
        if info.subresource in ("binding", "eviction") and rest.webhooks is not None:
            assert ns is not None and info.name is not None
            await rest.webhooks.connect(
                subresource_create(
                    kind,
                    ns,
                    info.name,
                    info.subresource,
                    body if isinstance(body, dict) else {},
                    request[USER],
                    dry_run,
                )
            )
        if info.subresource == "binding":
            assert ns is not None and info.name is not None
            bound = await subresources.bind(rest, kind, ns, info.name, body)
            return json_response(bound, status=201)
        if info.subresource == "eviction":
            assert ns is not None and info.name is not None and self._pdbs is not None
            evicted = await subresources.evict(rest, kind, self._pdbs, ns, info.name, body)
            return json_response(evicted, status=201)
        if info.subresource == "token":
            assert ns is not None and info.name is not None
            if self.tokens is None:
                raise StatusError(503, "the API server issues no service account tokens")
            await self.cache.sync()
            issued, _ = self.tokens.request(ns, info.name, body, dry_run=dry_run)
            return json_response(issued, status=201)
        if info.name is not None:
            raise StatusError(
                405,
                "the server does not allow this method on the requested resource: "
                f"POST {request.path}",
            )
        manager, _ = write_options("create", query, request.headers.get("User-Agent", ""), None)
        result = await rest.create(
            kind,
            ns,
            object_body(body, kind),
            field_validation=query.get("fieldValidation", "Warn"),
            dry_run=dry_run,
            user=request[USER],
            manager=manager,
        )
        return json_response(result.obj, status=201, warnings=result.warnings)

    async def _write(
        self,
        request: web.Request,
        info: RequestInfo,
        query: dict[str, str],
        body: Any,
        dry_run: bool,
    ) -> web.Response:
        """update (PUT) and patch of an object or of its status, resize or scale."""
        kind, name = info.kind, info.name
        assert name is not None
        patch_type = request[PATCH_TYPE] if info.verb == "patch" else None
        manager, force = write_options(
            info.verb, query, request.headers.get("User-Agent", ""), patch_type
        )
        if info.subresource == "scale":
            scale, warnings = await subresources.write_scale(
                self.rest,
                kind,
                info.namespace,
                name,
                body,
                patch_type,
                manager,
                force,
                user=request[USER],
                dry_run=dry_run,
            )
            return json_response(scale, warnings=warnings)
        if info.subresource not in (None, "status", *kind.strategy.subresources):
            raise StatusError(
                405, f"{info.verb} is not supported on {kind.plural}/{info.subresource}"
            )
        field_validation = query.get("fieldValidation", "Warn")
        if info.verb == "update":
            result = await self.rest.update(
                kind,
                info.namespace,
                name,
                object_body(body, kind),
                subresource=info.subresource,
                field_validation=field_validation,
                dry_run=dry_run,
                user=request[USER],
                manager=manager,
            )
        else:
            assert patch_type is not None
            result = await self.rest.patch(
                kind,
                info.namespace,
                name,
                body,
                patch_type,
                subresource=info.subresource,
                field_validation=field_validation,
                dry_run=dry_run,
                user=request[USER],
                manager=manager,
                force=force,
                authorize_create=self._create_check(request[USER], info),
            )
        return json_response(
            result.obj, status=201 if result.created else 200, warnings=result.warnings
        )

    async def _delete_collection(
        self, info: RequestInfo, query: dict[str, str], body: Any, dry_run: bool, user: User
    ) -> web.Response:
        kind = info.kind
        options = delete_options(body, query)
        matches = selector_filter(kind, query)
        await self.cache.sync()
        deleted = []
        for entry in self.cache.entries(kind, info.namespace):
            if matches is None or matches(entry.value):
                with contextlib.suppress(StatusError):
                    deleted.append(
                        await self.rest.delete(
                            kind,
                            entry.value["metadata"].get("namespace"),
                            entry.value["metadata"]["name"],
                            options,
                            dry_run=dry_run,
                            user=user,
                        )
                    )
        return json_response(
            {
                "kind": kind.list_kind,
                "apiVersion": kind.api_version,
                "metadata": {"resourceVersion": str(self.cache.revision)},
                "items": deleted,
            }
        )

    async def read_body(self, request: web.Request, info: RequestInfo) -> Any:
        """The decoded body (JSON, YAML or protobuf); 400/415 naming what could not be read."""
        raw = await request.read()
        content_type = request.headers.get("Content-Type", "application/json")
        media = content_type.split(";", 1)[0].strip().lower()
        if info.verb == "patch":
            request[PATCH_TYPE] = patch_type_of(content_type)
        if not raw:
            if info.verb in ("delete", "deletecollection"):
                return None
            raise bad_request("the body of the request was empty")
        if media == PROTOBUF_CONTENT_TYPE:
            if info.verb == "patch":
                raise StatusError(415, f"the body of a patch cannot be {PROTOBUF_CONTENT_TYPE}")
            try:
                return decode_object(raw)
            except ProtobufError as exc:
                raise bad_request(
                    f'{info.kind.kind} in version "{info.kind.version}" cannot be handled as a '
                    f"{info.kind.kind}: {exc}"
                ) from None
        try:
            if media in ("application/yaml", "application/apply-patch+yaml"):
                return yaml.load(raw, Loader=_YAMLLoader)
            return orjson.loads(raw)
        except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
            what = info.kind.kind if info.verb != "patch" else "patch"
            raise bad_request(
                f'{what} in version "{info.kind.version}" cannot be handled as a '
                f"{info.kind.kind}: {decode_message(exc)}"
            ) from None

    def _create_check(self, user: User, info: RequestInfo) -> Callable[[], None]:
        """For an apply that would create its object: upstream authorizes the verb
        ``create`` on it too (``withAuthorization`` in ``handlers/patch.go``), so the verb
        ``patch`` alone never creates."""

        def check() -> None:
            if MASTERS_GROUP in user.groups:
                return
            kind = info.kind
            attrs = Attributes(
                user,
                "create",
                namespace=info.namespace or "",
                api_group=kind.group,
                api_version=kind.version,
                resource=kind.plural,
                subresource=info.subresource or "",
                name=info.name or "",
            )
            decision = self.authz.authorize(attrs)
            if not decision.allowed:
                raise forbidden_error(attrs, decision.reason)

        return check

    async def authorize(
        self, user: User, info: RequestInfo, body: Any, query: dict[str, str]
    ) -> None:
        """The authorizer chain for a resource request (403 naming the user, verb and
        resource), then NodeRestriction for a node's write, which needs the stored object and
        the body."""
        if MASTERS_GROUP in user.groups:
            return
        name = info.name or ""
        if not name and info.verb in ("list", "watch"):
            # Upstream: a list or watch of one object by `metadata.name=` is that object's.
            name = single_name(query.get("fieldSelector", ""))
        kind = info.kind
        attrs = Attributes(
            user,
            info.verb,
            namespace=info.namespace or "",
            api_group=kind.group,
            api_version=kind.version,
            resource=kind.plural,
            subresource=info.subresource or "",
            name=name,
        )
        await self.cache.sync()
        decision = self.authz.authorize(attrs)
        if not decision.allowed:
            raise forbidden_error(attrs, decision.reason)
        if info.verb in ("get", "list", "watch") or not kind.stored:
            return
        old = None
        if info.name is not None:
            entry = self.cache.get(
                kind, kind.storage_key(info.name, info.namespace), info.namespace
            )
            old = entry.value if entry else None
        self.authz.restrict(attrs, new=body if isinstance(body, dict) else None, old=old)
