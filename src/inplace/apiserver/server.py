"""The Kubernetes HTTP API: routing, content negotiation, watch streams, discovery, health.

Requests flow: auth middleware (bearer token → user) → metrics/error middleware → the resource
handler, which resolves the path to (verb, kind, namespace, name, subresource), authorizes,
and calls `REST`. Reads are answered from the watch cache with the stored bytes; a watch is a
chunked stream of newline-delimited JSON events, serialized once per event.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import gc
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
import yaml
from aiohttp import web

from inplace import __version__
from inplace.api.kinds import REGISTRY, Kind, Registry
from inplace.api.openapi import openapi_v3_bytes, openapi_v3_index_bytes
from inplace.api.protobuf import PROTOBUF_CONTENT_TYPE, ProtobufError, decode_object
from inplace.api.selectors import FieldSelector, LabelSelector, SelectorError
from inplace.api.tables import to_table
from inplace.apiserver import subresources
from inplace.apiserver.auth import MASTERS_GROUP, Authenticator, TokenFile, Unauthorized, User
from inplace.apiserver.authz import Attributes, Authorizers, forbidden_error
from inplace.apiserver.authz.escalation import EscalationCheck
from inplace.apiserver.authz.impersonation import Headers, impersonate
from inplace.apiserver.authz.reconcile import Aggregator, reconcile_defaults
from inplace.apiserver.authz.reviews import REVIEW_KINDS, review
from inplace.apiserver.cache import CachedEvent, TooOldError, WatchCache
from inplace.apiserver.errors import StatusError, bad_request, gone, qualified
from inplace.apiserver.metrics import APIServerMetrics
from inplace.apiserver.podsecurity import PodSecurity, PodSecurityConfig
from inplace.apiserver.rest import REST, patch_type_of
from inplace.apiserver.routing import RequestInfo, resolve
from inplace.store import CompactedError, FutureRevisionError, Store

log = logging.getLogger(__name__)

#: Upstream's limit on a request body.
MAX_BODY = 3 * 1024 * 1024
#: Kubernetes version this server speaks (pods/resize is a v1.33 subresource).
KUBE_VERSION = ("1", "33", "v1.33.0")
_BUILTIN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_BOOKMARK_EVERY = 10.0
_COMPACT_EVERY = 300.0
_COMPACT_KEEP = 10_000

USER = web.RequestKey("user", User)
INFO = web.RequestKey("info", RequestInfo)
PATCH_TYPE = web.RequestKey("patch_type", str)


@dataclass
class APIServerConfig:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 6443
    #: TLS files; None serves plain HTTP (only for in-process tests).
    tls: Any = None
    #: Token file; None disables authentication and authorization (only for in-process
    #: tests, whose requests all act as system:masters).
    tokens: TokenFile | None = None
    #: Requests without credentials are `system:anonymous` (upstream `--anonymous-auth`).
    anonymous: bool = True
    #: Pod Security Admission's defaults and exemptions (privileged everywhere by default).
    pod_security: PodSecurityConfig = field(default_factory=PodSecurityConfig)
    log_root: Path | None = None
    compact_every: float = _COMPACT_EVERY
    #: Take over the collector's full collections (see `_gc_loop`); for a server process.
    tune_gc: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class APIServer:
    """Owns the store, the watch cache and the aiohttp application."""

    def __init__(self, config: APIServerConfig, *, registry: Registry = REGISTRY) -> None:
        self.config = config
        self.registry = registry
        self.metrics = APIServerMetrics()
        self.store: Store | None = None
        self.cache: WatchCache | None = None
        self.rest: REST | None = None
        self.authz: Authorizers | None = None
        self.authn = Authenticator(
            [config.tokens] if config.tokens is not None else [], anonymous=config.anonymous
        )
        self._runner: web.AppRunner | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = config.port
        self._pods = registry.by_kind("", "Pod")
        self._nodes = registry.by_kind("", "Node")
        self._pdbs = registry.by_kind("policy", "PodDisruptionBudget")
        self._namespaces = registry.by_kind("", "Namespace")

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        self.config.data_dir.mkdir(parents=True, exist_ok=True)
        self.store = await Store.open(self.config.data_dir / "store.db")
        self.cache = WatchCache(self.store, self.registry)
        await self.cache.start()
        self.rest = REST(self.store, self.cache, self.registry)
        self.authz = Authorizers(self.cache, self.registry)
        self.rest.admission.append(EscalationCheck(self.authz))
        self.rest.admission.append(PodSecurity(self.config.pod_security, self.cache, self.registry))
        await self._ensure_namespaces()
        if self.authz.enabled:
            await reconcile_defaults(self.rest, self.cache, self.registry)
            aggregator = Aggregator(self.rest, self.cache, self.registry)
            self.cache.add_listener(aggregator.on_change)
            await aggregator.settle()
            self._spawn(aggregator.run(), "clusterrole-aggregation")
        self.cache.add_listener(self._on_change)
        app = web.Application(
            client_max_size=MAX_BODY,
            middlewares=[self._middleware],
            handler_args={"max_field_size": 65536},
        )
        app.router.add_route("GET", "/version", self._version)
        app.router.add_route("GET", "/healthz", self._health)
        app.router.add_route("GET", "/livez", self._health)
        app.router.add_route("GET", "/readyz", self._health)
        app.router.add_route("GET", "/metrics", self._metrics)
        app.router.add_route("GET", "/api", self._api_versions)
        app.router.add_route("GET", "/apis", self._api_groups)
        app.router.add_route("GET", "/openapi/v3", self._openapi_index)
        app.router.add_route("GET", "/openapi/v3/{path:.*}", self._openapi_document)
        app.router.add_route("*", "/api/{tail:.*}", self._resource)
        app.router.add_route("*", "/apis/{tail:.*}", self._resource)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        ssl_context = self.config.tls.server_context() if self.config.tls else None
        site = web.TCPSite(
            self._runner,
            self.config.host,
            self.config.port,
            ssl_context=ssl_context,
            reuse_address=True,
        )
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        self._spawn(self._compact_loop(), "compact")
        if self.config.tune_gc:
            self._spawn(_gc_loop(), "gc")

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run `work` in the background; kept until done, cancelled by stop()."""
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.cache is not None:
            await self.cache.stop()
        if self._runner is not None:
            await self._runner.cleanup()
        if self.store is not None:
            await self.store.close()

    async def _ensure_namespaces(self) -> None:
        assert self.rest is not None and self._namespaces is not None
        for name in _BUILTIN_NAMESPACES:
            key = self._namespaces.storage_key(name)
            assert self.cache is not None
            if self.cache.get(self._namespaces, key, None) is None:
                with contextlib.suppress(StatusError):
                    await self.rest.create(
                        self._namespaces,
                        None,
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                    )

    async def _compact_loop(self) -> None:
        assert self.store is not None
        while True:
            await asyncio.sleep(self.config.compact_every)
            target = self.store.current_revision - _COMPACT_KEEP
            if target > self.store.compacted_revision:
                try:
                    await self.store.compact(target)
                except Exception:  # a failed compaction must not stop the server; logged
                    log.exception("compaction to %d failed", target)

    def _on_change(self, event: CachedEvent) -> None:
        """Finish deleting a terminating namespace once its last object is gone."""
        if event.type == "DELETED" and event.namespace and event.kind.namespaced:
            assert self.cache is not None and self._namespaces is not None
            ns = self.cache.get(
                self._namespaces, self._namespaces.storage_key(event.namespace), None
            )
            if ns is not None and ns.value["metadata"].get("deletionTimestamp"):
                assert self.rest is not None
                self._spawn(self.rest.finalize_namespace(event.namespace), "finalize-namespace")

    # -- middleware ---------------------------------------------------------------------------

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        started = time.perf_counter()
        info: RequestInfo | None = None
        code = 500
        try:
            request[USER] = await self._authenticate(request)
            response = await handler(request)
            info = request.get(INFO)
            code = response.status
            return response
        except StatusError as exc:
            info = request.get(INFO)
            code = exc.code
            return _json_response(exc.status(), status=exc.code)
        except web.HTTPRequestEntityTooLarge:
            info = request.get(INFO)
            code = 413
            error = StatusError(413, f"Request entity too large: limit is {MAX_BODY}")
            return _json_response(error.status(), status=413)
        except web.HTTPException as exc:
            code = exc.status
            error = StatusError(exc.status, exc.reason)
            return _json_response(error.status(), status=exc.status)
        except (ConnectionResetError, asyncio.CancelledError):
            code = 499
            raise
        except Exception as exc:
            log.exception("internal error serving %s %s", request.method, request.path)
            error = StatusError(500, f"Internal error occurred: {type(exc).__name__}: {exc}")
            return _json_response(error.status(), status=500)
        finally:
            self._observe(request, info, code, time.perf_counter() - started)

    async def _authenticate(self, request: web.Request) -> User:
        """Who the request acts as (after impersonation), and, for a path that is not a
        resource, whether they may request it (resources are authorized in `_resource`)."""
        if self.config.tokens is None:
            return User("system:admin", (MASTERS_GROUP,))
        try:
            user = self.authn.authenticate(request.headers.get("Authorization"))
        except Unauthorized:
            raise StatusError(401, "Unauthorized") from None
        assert self.authz is not None
        user = impersonate(self.authz, user, Headers(list(request.headers.items())))
        if not _is_resource_path(request.path):
            attrs = Attributes(
                user, request.method.lower(), resource_request=False, path=request.path
            )
            decision = self.authz.authorize(attrs)
            if not decision.allowed:
                raise forbidden_error(attrs, decision.reason)
        return user

    def _observe(
        self, request: web.Request, info: RequestInfo | None, code: int, seconds: float
    ) -> None:
        if info is not None:
            labels = (
                info.verb.upper() if info.verb != "watch" else "WATCH",
                info.kind.group,
                info.kind.version,
                info.kind.plural,
                info.subresource or "",
                info.scope,
                request.headers.get("User-Agent", "").split("/", 1)[0],
            )
        else:
            labels = (request.method, "", "", "", "", "", "")
        self.metrics.requests.labels(*labels, str(code)).inc()
        if info is None or info.verb != "watch":
            self.metrics.duration.labels(*labels).observe(seconds)

    # -- non-resource endpoints ---------------------------------------------------------------

    async def _version(self, request: web.Request) -> web.Response:
        major, minor, git = KUBE_VERSION
        return _json_response(
            {
                "major": major,
                "minor": minor,
                "gitVersion": f"{git}+inplace.{__version__}",
                "gitCommit": "",
                "gitTreeState": "clean",
                "buildDate": "",
                "goVersion": "python",
                "compiler": "cpython",
                "platform": "linux/amd64",
            }
        )

    async def _health(self, request: web.Request) -> web.Response:
        ready = self.cache is not None and self.cache.ready.is_set()
        if self.cache is not None and self.cache.failed.is_set():
            return web.Response(status=500, text="[-]watch-cache failed: not following the store\n")
        if request.path == "/readyz" and not ready:
            return web.Response(status=503, text="[-]informer-sync failed: not ready\n")
        if "verbose" in request.query:
            return web.Response(text=f"[+]ping ok\n[+]etcd ok\n{request.path[1:]} check passed\n")
        return web.Response(text="ok", content_type="text/plain")

    async def _metrics(self, request: web.Request) -> web.Response:
        if self.cache is not None:
            for kind in self.registry.kinds:
                if kind.stored:
                    self.metrics.objects.labels(qualified(kind.plural, kind.group)).set(
                        self.cache.count(kind)
                    )
        return web.Response(body=self.metrics.render(), content_type="text/plain", charset="utf-8")

    async def _api_versions(self, request: web.Request) -> web.Response:
        return _json_response(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": f"{self.config.host}:{self.port}"}
                ],
            }
        )

    async def _api_groups(self, request: web.Request) -> web.Response:
        groups = []
        for group, version in self.registry.group_versions():
            if not group:
                continue
            gv = {"groupVersion": f"{group}/{version}", "version": version}
            groups.append({"name": group, "versions": [gv], "preferredVersion": gv})
        return _json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    def _resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        kinds = self.registry.in_group_version(group, version)
        if not kinds:
            return None
        resources: list[dict[str, Any]] = []
        for kind in kinds:
            entry: dict[str, Any] = {
                "name": kind.plural,
                "singularName": kind.singular,
                "namespaced": kind.namespaced,
                "kind": kind.kind,
                "verbs": list(kind.verbs),
            }
            if kind.short_names:
                entry["shortNames"] = list(kind.short_names)
            if kind.categories:
                entry["categories"] = list(kind.categories)
            resources.append(entry)
            for sub in kind.subresources:
                resources.append(_subresource_discovery(kind, sub))
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    async def _openapi_index(self, request: web.Request) -> web.Response:
        return web.Response(
            body=openapi_v3_index_bytes(self.registry), content_type="application/json"
        )

    async def _openapi_document(self, request: web.Request) -> web.Response:
        found = openapi_v3_bytes(self.registry, request.match_info["path"])
        if found is None:
            raise StatusError(
                404, f'the server could not find the requested resource ("{request.path}")'
            )
        body, digest = found
        return web.Response(
            body=body, content_type="application/json", headers={"Etag": f'"{digest}"'}
        )

    # -- resources ----------------------------------------------------------------------------

    async def _resource(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        parts = [p for p in request.path.split("/") if p]
        if request.method == "GET" and (
            (parts[:1] == ["api"] and len(parts) == 2)
            or (parts[:1] == ["apis"] and len(parts) in (2, 3))
        ):
            return await self._discovery(parts)
        try:
            info = resolve(self.registry, request.method, request.path, query)
        except StatusError:
            raise
        if info is None:
            raise StatusError(
                404, f'the server could not find the requested resource ("{request.path}")'
            )
        request[INFO] = info
        assert self.rest is not None and self.cache is not None
        user: User = request[USER]
        rest = self.rest
        kind = info.kind
        body = None
        if info.verb in ("create", "update", "patch") or (
            info.verb in ("delete", "deletecollection") and request.can_read_body
        ):
            body = await self._read_body(request, info)
        await self._authorize(user, info, body, query)
        if (kind.group, kind.kind) in REVIEW_KINDS:
            assert self.authz is not None
            answer = review(
                self.authz, kind.group, kind.kind, kind.api_version, user, info.namespace, body
            )
            return _json_response(answer, status=201)
        if not kind.stored:
            return await self._metrics_kind(info, query)
        dry_run = query.get("dryRun") == "All"
        field_validation = query.get("fieldValidation", "Warn")
        ns = info.namespace

        if info.verb == "get":
            if info.subresource == "log":
                return await self._log(request, info, query)
            entry = await rest.get_entry(kind, ns, info.name or "")
            if info.subresource == "scale":
                return _json_response(subresources.scale_of(kind, entry.value))
            if _wants_table(request):
                return _json_response(self._table(kind, [entry.value], request, None))
            return web.Response(body=entry.raw, content_type="application/json")
        if info.verb == "list":
            return await self._list(request, info, query)
        if info.verb == "watch":
            return await self._watch(request, info, query)
        if info.verb == "create":
            if info.subresource == "binding":
                assert ns is not None and info.name is not None
                return _json_response(
                    await subresources.bind(rest, kind, ns, info.name, body), status=201
                )
            if info.subresource == "eviction":
                assert ns is not None and info.name is not None and self._pdbs is not None
                return _json_response(
                    await subresources.evict(rest, kind, self._pdbs, ns, info.name, body),
                    status=201,
                )
            if info.name is not None:
                raise StatusError(
                    405,
                    "the server does not allow this method on the requested resource: "
                    f"POST {request.path}",
                )
            result = await rest.create(
                kind,
                ns,
                _object_body(body, kind),
                field_validation=field_validation,
                dry_run=dry_run,
                user=user,
            )
            return _json_response(result.obj, status=201, warnings=result.warnings)
        if info.verb in ("update", "patch"):
            assert info.name is not None
            if info.subresource == "scale":
                return await self._write_scale(request, info, body)
            if info.subresource not in (None, "status", *kind.strategy.subresources):
                raise StatusError(
                    405, f"{info.verb} is not supported on {kind.plural}/{info.subresource}"
                )
            if info.verb == "update":
                result = await rest.update(
                    kind,
                    ns,
                    info.name,
                    _object_body(body, kind),
                    subresource=info.subresource,
                    field_validation=field_validation,
                    dry_run=dry_run,
                    user=user,
                )
            else:
                result = await rest.patch(
                    kind,
                    ns,
                    info.name,
                    body,
                    request[PATCH_TYPE],
                    subresource=info.subresource,
                    field_validation=field_validation,
                    dry_run=dry_run,
                    user=user,
                )
            return _json_response(result.obj, warnings=result.warnings)
        if info.verb == "delete":
            assert info.name is not None
            options = _delete_options(body, query)
            obj = await rest.delete(kind, ns, info.name, options, dry_run=dry_run)
            return _json_response(obj)
        if info.verb == "deletecollection":
            options = _delete_options(body, query)
            matches = self._filter(kind, query)
            await self.cache.sync()
            deleted = []
            for entry in self.cache.entries(kind, ns):
                if matches is None or matches(entry.value):
                    with contextlib.suppress(StatusError):
                        deleted.append(
                            await rest.delete(
                                kind,
                                entry.value["metadata"].get("namespace"),
                                entry.value["metadata"]["name"],
                                options,
                                dry_run=dry_run,
                            )
                        )
            return _json_response(
                {
                    "kind": kind.list_kind,
                    "apiVersion": kind.api_version,
                    "metadata": {"resourceVersion": str(self.cache.revision)},
                    "items": deleted,
                }
            )
        raise StatusError(405, f"unsupported verb {info.verb}")

    async def _discovery(self, parts: list[str]) -> web.Response:
        if parts[0] == "api":
            listing = self._resource_list("", parts[1])
        elif len(parts) == 2:
            group_versions = [v for g, v in self.registry.group_versions() if g == parts[1]]
            if not group_versions:
                raise StatusError(404, "the server could not find the requested resource")
            gv = {"groupVersion": f"{parts[1]}/{group_versions[0]}", "version": group_versions[0]}
            return _json_response(
                {
                    "kind": "APIGroup",
                    "apiVersion": "v1",
                    "name": parts[1],
                    "versions": [gv],
                    "preferredVersion": gv,
                }
            )
        else:
            listing = self._resource_list(parts[1], parts[2])
        if listing is None:
            raise StatusError(404, "the server could not find the requested resource")
        return _json_response(listing)

    async def _read_body(self, request: web.Request, info: RequestInfo) -> Any:
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
                return yaml.safe_load(raw)
            return orjson.loads(raw)
        except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
            what = info.kind.kind if info.verb != "patch" else "patch"
            raise bad_request(
                f'{what} in version "{info.kind.version}" cannot be handled as a '
                f"{info.kind.kind}: {_decode_message(exc)}"
            ) from None

    async def _authorize(
        self, user: User, info: RequestInfo, body: Any, query: dict[str, str]
    ) -> None:
        """The authorizer chain for a resource request, then NodeRestriction for a node's
        write (it needs the stored object and the body)."""
        assert self.cache is not None and self.authz is not None
        if MASTERS_GROUP in user.groups:
            return
        name = info.name or ""
        if not name and info.verb in ("list", "watch"):
            # Upstream: a list or watch of one object by `metadata.name=` is that object's.
            name = _single_name(query.get("fieldSelector", ""))
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

    def _filter(self, kind: Kind, query: dict[str, str]) -> Callable[[dict[str, Any]], bool] | None:
        try:
            labels = (
                LabelSelector.parse(query["labelSelector"]) if query.get("labelSelector") else None
            )
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

    async def _list(
        self, request: web.Request, info: RequestInfo, query: dict[str, str]
    ) -> web.Response:
        assert self.cache is not None and self.store is not None
        kind = info.kind
        matches = self._filter(kind, query)
        limit = _int_param(query, "limit")
        token = query.get("continue")
        rv = query.get("resourceVersion")
        raws: list[bytes] = []
        if token:
            raws, revision, next_token = await self._list_continue(
                kind, info, matches, limit, token
            )
        else:
            if rv and rv != "0":
                if query.get("resourceVersionMatch") == "Exact":
                    return await self._list_exact(request, info, matches, int(_rv(rv)))
                try:
                    await self.cache.wait_for(_rv(rv), timeout=3.0)
                except TimeoutError:
                    raise StatusError(
                        504,
                        f"Too large resource version: {rv}, current: {self.cache.revision}",
                        reason="Timeout",
                    ) from None
            elif not rv:
                await self.cache.sync()
            revision = self.cache.revision
            entries = self.cache.entries(kind, info.namespace)
            next_token = None
            last_key = ""
            for entry in entries:
                if matches is not None and not matches(entry.value):
                    continue
                if limit and len(raws) == limit:
                    next_token = _encode_continue(revision, last_key)
                    break
                raws.append(entry.raw)
                last_key = entry.key
        if _wants_table(request):
            objs = [orjson.loads(r) for r in raws]
            return _json_response(
                self._table(
                    kind,
                    objs,
                    request,
                    {
                        "resourceVersion": str(revision),
                        **({"continue": next_token} if next_token else {}),
                    },
                )
            )
        meta = {"resourceVersion": str(revision)}
        if next_token:
            meta["continue"] = next_token
        body = b"".join(
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
        return web.Response(body=body, content_type="application/json")

    async def _list_continue(
        self, kind: Kind, info: RequestInfo, matches: Any, limit: int | None, token: str
    ) -> tuple[list[bytes], int, str | None]:
        assert self.store is not None
        revision, start = _decode_continue(token)
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
                        return raws, revision, _encode_continue(revision, last)
                    raws.append(entry.raw)
                last = entry.key
            if page.continue_key is None:
                return raws, revision, None

    async def _list_exact(
        self, request: web.Request, info: RequestInfo, matches: Any, revision: int
    ) -> web.Response:
        assert self.store is not None
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
        body = b"".join(
            (
                b'{"kind":"',
                info.kind.list_kind.encode(),
                b'","apiVersion":"',
                info.kind.api_version.encode(),
                b'","metadata":{"resourceVersion":"',
                str(revision).encode(),
                b'"},"items":[',
                b",".join(raws),
                b"]}",
            )
        )
        return web.Response(body=body, content_type="application/json")

    def _table(
        self,
        kind: Kind,
        objects: list[dict[str, Any]],
        request: web.Request,
        list_meta: dict[str, Any] | None,
    ) -> dict[str, Any]:
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

    async def _watch(
        self, request: web.Request, info: RequestInfo, query: dict[str, str]
    ) -> web.StreamResponse:
        assert self.cache is not None
        kind = info.kind
        matches = self._filter(kind, query)
        if info.name is not None:
            name = info.name
            inner = matches

            def matches(obj: dict[str, Any]) -> bool:
                return obj.get("metadata", {}).get("name") == name and (inner is None or inner(obj))

        rv = query.get("resourceVersion")
        initial = query.get("sendInitialEvents") == "true"
        from_revision = None if (not rv or rv == "0" or initial) else _rv(rv)
        if from_revision is None and not initial:
            await self.cache.sync()
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        try:
            watcher, backlog = self.cache.watch(
                kind, info.namespace, matches, from_revision=from_revision
            )
        except TooOldError:
            await response.prepare(request)
            expired = gone(f"too old resource version: {rv} ({self.cache.revision})").status()
            await response.write(orjson.dumps({"type": "ERROR", "object": expired}) + b"\n")
            return response
        self.metrics.watchers.labels(kind.group, kind.version, kind.kind).inc()
        table = _wants_table(request)
        bookmarks = query.get("allowWatchBookmarks") == "true"
        timeout = _int_param(query, "timeoutSeconds")
        deadline = time.monotonic() + (
            timeout if timeout is not None else random.uniform(1800, 3600)
        )
        try:
            await response.prepare(request)
            first = True
            for past in backlog:
                await response.write(self._encode_event(past, table, first, request))
                first = False
            if initial and bookmarks:
                await response.write(self._bookmark(kind, initial_end=True))
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    event = await asyncio.wait_for(
                        watcher.queue.get(), min(remaining, _BOOKMARK_EVERY)
                    )
                except TimeoutError:
                    if bookmarks and time.monotonic() < deadline:
                        await response.write(self._bookmark(kind))
                    continue
                if event is None:
                    break
                chunk = [self._encode_event(event, table, first, request)]
                first = False
                while not watcher.queue.empty():
                    more = watcher.queue.get_nowait()
                    if more is None:
                        break
                    chunk.append(self._encode_event(more, table, False, request))
                await response.write(b"".join(chunk))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.cache.unwatch(watcher)
            self.metrics.watchers.labels(kind.group, kind.version, kind.kind).dec()
        return response

    def _encode_event(
        self, event: CachedEvent, table: bool, first: bool, request: web.Request
    ) -> bytes:
        if table:
            rendered = self._table(
                event.kind, [event.value], request, {"resourceVersion": str(event.revision)}
            )
            if not first:
                rendered["columnDefinitions"] = []
            return orjson.dumps({"type": event.type, "object": rendered}) + b"\n"
        return b'{"type":"' + event.type.encode() + b'","object":' + event.raw + b"}\n"

    def _bookmark(self, kind: Kind, *, initial_end: bool = False) -> bytes:
        assert self.cache is not None
        meta: dict[str, Any] = {"resourceVersion": str(self.cache.revision)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return (
            orjson.dumps(
                {
                    "type": "BOOKMARK",
                    "object": {"kind": kind.kind, "apiVersion": kind.api_version, "metadata": meta},
                }
            )
            + b"\n"
        )

    async def _write_scale(
        self, request: web.Request, info: RequestInfo, body: Any
    ) -> web.Response:
        assert self.rest is not None and info.name is not None
        entry = await self.rest.get_entry(info.kind, info.namespace, info.name)
        current = subresources.scale_of(info.kind, entry.value)
        if info.verb == "patch":
            from inplace.api.patch import apply_json_patch, apply_merge_patch

            patch_type = request[PATCH_TYPE]
            scale = (
                apply_json_patch(current, body)
                if patch_type == "json"
                else apply_merge_patch(current, body)
            )
        else:
            scale = body
        replicas = (scale or {}).get("spec", {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise StatusError(
                422,
                f'Scale.autoscaling "{info.name}" is invalid: spec.replicas: Invalid value: '
                f"{replicas!r}: must be greater than or equal to 0",
            )
        result = await self.rest.patch(
            info.kind, info.namespace, info.name, {"spec": {"replicas": replicas}}, "merge"
        )
        return _json_response(subresources.scale_of(info.kind, result.obj))

    async def _log(
        self, request: web.Request, info: RequestInfo, query: dict[str, str]
    ) -> web.StreamResponse:
        assert self.rest is not None and info.name is not None and info.namespace is not None
        entry = await self.rest.get_entry(info.kind, info.namespace, info.name)
        pod = entry.value
        containers = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
        container = query.get("container") or (containers[0] if len(containers) == 1 else None)
        if container is None:
            raise bad_request(
                f"a container name must be specified for pod {info.name}, "
                f"choose one of: {containers}"
            )
        all_names = containers + [c["name"] for c in pod.get("spec", {}).get("initContainers", [])]
        if container not in all_names:
            raise bad_request(f"container {container} is not valid for pod {info.name}")
        log_root = self.config.log_root or (self.config.data_dir / "logs")
        path = subresources.log_path(
            log_root, pod, container, previous=query.get("previous") == "true"
        )
        if not path.exists():
            raise bad_request(
                f'container "{container}" in pod "{info.name}" is waiting to start: '
                "ContainerCreating"
            )
        follow = query.get("follow") == "true"
        tail = _int_param(query, "tailLines")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        rest = self.rest

        async def still_running() -> bool:
            try:
                current = await rest.get_entry(info.kind, info.namespace, info.name or "")
            except StatusError:
                return False
            return current.value["metadata"]["uid"] == pod["metadata"]["uid"] and current.value.get(
                "status", {}
            ).get("phase") not in ("Succeeded", "Failed")

        try:
            async for chunk in subresources.follow_file(
                path, tail=tail, follow=follow, still_running=still_running
            ):
                await response.write(chunk)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response

    async def _metrics_kind(self, info: RequestInfo, query: dict[str, str]) -> web.Response:
        """metrics.k8s.io: usage reported by the node agents (served from memory)."""
        provider = self.config.extra.get("metrics_provider")
        if info.verb not in ("get", "list"):
            raise StatusError(
                405, f"{info.verb} is not supported on {info.kind.plural}.{info.kind.group}"
            )
        items: list[dict[str, Any]] = (
            await provider(info.kind.kind, info.namespace) if provider else []
        )
        if info.name is not None:
            for item in items:
                if item["metadata"]["name"] == info.name:
                    return _json_response(item)
            raise StatusError(404, f'{info.kind.plural}.{info.kind.group} "{info.name}" not found')
        return _json_response(
            {
                "kind": info.kind.list_kind,
                "apiVersion": info.kind.api_version,
                "metadata": {},
                "items": items,
            }
        )


async def _gc_loop(*, freeze_every: float = 30.0, full_every: float = 600.0) -> None:
    """Keep full garbage collections off the request path.

    The watch cache holds every object as JSON dicts; a full collection scans all of them and
    paused the server for over 100 ms with 2,000 pods stored (measured with gc.callbacks),
    which is the whole p99 budget of a write. The dicts are acyclic and freed by reference
    counting, so the collector need not scan them: survivors are frozen out of collection
    every `freeze_every` seconds, automatic full collections are turned off, and a full
    collection of everything runs every `full_every` seconds to reclaim cyclic garbage that
    was frozen while alive.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 1_000_000_000)
    since_full = 0.0
    while True:
        await asyncio.sleep(freeze_every)
        since_full += freeze_every
        if since_full >= full_every:
            since_full = 0.0
            gc.unfreeze()
            gc.collect()
        gc.freeze()


def _subresource_discovery(kind: Kind, sub: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": f"{kind.plural}/{sub}",
        "singularName": "",
        "namespaced": kind.namespaced,
        "kind": kind.kind,
    }
    if sub in ("status", "resize"):
        entry["verbs"] = ["get", "patch", "update"]
    elif sub == "scale":
        entry.update(
            group="autoscaling", version="v1", kind="Scale", verbs=["get", "patch", "update"]
        )
    elif sub == "binding":
        entry.update(kind="Binding", verbs=["create"])
    elif sub == "eviction":
        entry.update(group="policy", version="v1", kind="Eviction", verbs=["create"])
    elif sub == "log":
        entry["verbs"] = ["get"]
    return entry


def _json_response(body: Any, *, status: int = 200, warnings: tuple[str, ...] = ()) -> web.Response:
    response = web.Response(body=orjson.dumps(body), status=status, content_type="application/json")
    for warning in warnings:
        response.headers.add("Warning", f"299 - {orjson.dumps(warning).decode()}")
    return response


def _is_resource_path(path: str) -> bool:
    """`/api/v1/...` and `/apis/group/version/...` below discovery; the rest (health,
    version, discovery, OpenAPI, metrics) are non-resource paths."""
    parts = [p for p in path.split("/") if p]
    return (parts[:1] == ["api"] and len(parts) >= 3) or (parts[:1] == ["apis"] and len(parts) >= 4)


def _single_name(field_selector: str) -> str:
    """The name a `metadata.name=NAME` field selector (alone) selects, else ""."""
    for prefix in ("metadata.name==", "metadata.name="):
        if field_selector.startswith(prefix) and "," not in field_selector:
            return field_selector[len(prefix) :]
    return ""


def _object_body(body: Any, kind: Kind) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request(f"the body of the request must be a {kind.kind} object")
    return body


def _wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    first = accept.split(",", 1)[0]
    return "as=Table" in first


def _int_param(query: dict[str, str], name: str) -> int | None:
    value = query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"{name}: invalid value {value!r}: must be an integer") from None


def _rv(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise bad_request(f'invalid resource version "{value}"') from None


def _encode_continue(revision: int, key: str) -> str:
    return base64.urlsafe_b64encode(
        orjson.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": key})
    ).decode()


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise bad_request("continue key is not valid: invalid token") from None


def _delete_options(body: Any, query: dict[str, str]) -> dict[str, Any]:
    options: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    if "gracePeriodSeconds" in query:
        options["gracePeriodSeconds"] = _int_param(query, "gracePeriodSeconds")
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


def _decode_message(exc: Exception) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__
