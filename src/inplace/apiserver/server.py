"""The API server process: lifecycle, authentication and error middleware, the route table.

Requests flow: this module's middleware (bearer token → user, impersonation, and for a path
that is not a resource, authorization; every `StatusError` and every unexpected exception →
a `kind: Status` answer; request metrics) → the route's handler:

- `discovery.py`: /version, /api, /apis, the resource lists, /openapi/v3;
- `handlers.py`: every verb on `/api/...` and `/apis/...` resources, dispatching to
  `rest.py` (the REST rules, HTTP-free), `lists.py` (LIST, paging, Tables), `watch.py`
  (watch streams, bookmarks), `subresources.py`, `logs.py` (pods/log) and `nodemetrics.py`
  (metrics.k8s.io);
- here: /healthz, /livez, /readyz and /metrics.

Reads are answered from the watch cache with the stored bytes; writes go through `REST` to
the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from inplace.api.validation.pods import set_protected_host_paths
from inplace.apiserver.auth import MASTERS_GROUP, Authenticator, TokenFile, Unauthorized, User
from inplace.apiserver.authz import Attributes, Authorizers, forbidden_error
from inplace.apiserver.authz.escalation import EscalationCheck
from inplace.apiserver.authz.impersonation import Headers, impersonate
from inplace.apiserver.authz.reconcile import Aggregator, reconcile_defaults
from inplace.apiserver.bootstrap import ClusterObjects
from inplace.apiserver.cache import CachedEvent, WatchCache
from inplace.apiserver.crds import CustomResourceDefinitions
from inplace.apiserver.crds.versions import convert_response
from inplace.apiserver.discovery import Discovery
from inplace.apiserver.errors import StatusError, qualified
from inplace.apiserver.handlers import Resources
from inplace.apiserver.httputil import INFO, USER, json_response
from inplace.apiserver.lists import Lists
from inplace.apiserver.metrics import APIServerMetrics
from inplace.apiserver.podsecurity import PodSecurity, PodSecurityConfig
from inplace.apiserver.rest import REST
from inplace.apiserver.routing import RequestInfo
from inplace.apiserver.serviceaccounts.jwt import ensure_signing_key
from inplace.apiserver.serviceaccounts.rootca import RootCAPublisher
from inplace.apiserver.serviceaccounts.tokens import ServiceAccountTokens
from inplace.apiserver.streaming import PodStreams
from inplace.apiserver.watch import Watches
from inplace.apiserver.webhooks import WebhookAdmission
from inplace.registry.kinds import REGISTRY
from inplace.registry.served import Registry
from inplace.store import Store

log = logging.getLogger(__name__)

#: Upstream's limit on a request body.
MAX_BODY = 3 * 1024 * 1024
_BUILTIN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_COMPACT_EVERY = 300.0
_COMPACT_KEEP = 10_000


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
    #: The key that signs service account tokens (created if missing); None:
    #: ``data_dir/sa.key``.
    service_account_key: Path | None = None
    #: Pod Security Admission's defaults and exemptions (privileged everywhere by default).
    pod_security: PodSecurityConfig = field(default_factory=PodSecurityConfig)
    log_root: Path | None = None
    compact_every: float = _COMPACT_EVERY
    #: Take over the collector's full collections (see `_gc_loop`); for a server process.
    tune_gc: bool = False
    #: Directories no hostPath volume may name (the cluster's data dir).
    protected_host_paths: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


class APIServer:
    """Owns the store, the watch cache and the aiohttp application."""

    def __init__(self, config: APIServerConfig, *, registry: Registry = REGISTRY) -> None:
        self.config = config
        #: This server's own registry: CustomResourceDefinitions add kinds to it.
        self.registry = registry.copy()
        self.metrics = APIServerMetrics()
        self.store: Store | None = None
        self.cache: WatchCache | None = None
        self.rest: REST | None = None
        self.crds: CustomResourceDefinitions | None = None
        self.authz: Authorizers | None = None
        self.authn = Authenticator(
            [config.tokens] if config.tokens is not None else [], anonymous=config.anonymous
        )
        self._runner: web.AppRunner | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = config.port
        self._namespaces = registry.by_kind("", "Namespace")
        self._cluster: ClusterObjects | None = None
        self.tokens: ServiceAccountTokens | None = None
        self._root_ca: RootCAPublisher | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        set_protected_host_paths(self.config.protected_host_paths)
        self.config.data_dir.mkdir(parents=True, exist_ok=True)
        self.store = await Store.open(self.config.data_dir / "store.db")
        self.cache = WatchCache(self.store, self.registry)
        await self.cache.start()
        self.rest = REST(self.store, self.cache, self.registry)
        crds = self.crds = CustomResourceDefinitions(self.rest, self.cache, self.registry)
        crds.start()
        self.authz = Authorizers(self.cache, self.registry)
        self.rest.admission.append(EscalationCheck(self.authz))
        self.rest.admission.append(PodSecurity(self.config.pod_security, self.cache, self.registry))
        self.rest.webhooks = WebhookAdmission(self.cache, self.registry)
        key_path = self.config.service_account_key or self.config.data_dir / "sa.key"
        self.tokens = ServiceAccountTokens(
            await asyncio.to_thread(ensure_signing_key, key_path), self.cache, self.registry
        )
        self.authn.tokens.append(self.tokens)
        await self._ensure_namespaces()
        self._root_ca = RootCAPublisher(
            self.rest, self.config.tls.ca_pem().decode() if self.config.tls else ""
        )
        await self._root_ca.ensure_all()
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
        resources = Resources(
            self.registry,
            self.rest,
            self.cache,
            self.authz,
            Lists(self.cache, self.store),
            Watches(self.cache, self.metrics),
            log_root=self.config.log_root or (self.config.data_dir / "logs"),
            metrics_provider=self.config.extra.get("metrics_provider"),
            authn=self.authn,
            tokens=self.tokens,
            streams=PodStreams(self.rest, self.cache, self.registry, self.config.tokens),
        )
        app.router.add_route("GET", "/healthz", self._health)
        app.router.add_route("GET", "/livez", self._health)
        app.router.add_route("GET", "/readyz", self._health)
        app.router.add_route("GET", "/metrics", self._metrics)
        Discovery(self.registry, self._address).add_routes(app.router)
        app.router.add_route("*", "/api/{tail:.*}", resources.handle)
        app.router.add_route("*", "/apis/{tail:.*}", resources.handle)
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
        self._cluster = ClusterObjects(self.rest, self.config.host, self.port)
        await self._cluster.ensure()
        self._spawn(self._compact_loop(), "compact")
        self._spawn(crds.run(), "customresourcedefinitions")
        if self.config.tune_gc:
            self._spawn(_gc_loop(), "gc")

    def _address(self) -> str:
        """host:port as clients reach this server (the port once bound, when 0 was asked)."""
        return f"{self.config.host}:{self.port}"

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
        if self.rest is not None and self.rest.webhooks is not None:
            await self.rest.webhooks.close()
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
        """Finish deleting a terminating namespace once its last object is gone; put back
        the cluster's own objects when they are deleted."""
        if self._cluster is not None:
            self._cluster.on_change(event, self._spawn)
        if self._root_ca is not None:
            self._root_ca.on_change(event, self._spawn)
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
            return convert_response(info.kind if info else None, response)
        except StatusError as exc:
            info = request.get(INFO)
            code = exc.code
            return json_response(exc.status(), status=exc.code)
        except web.HTTPRequestEntityTooLarge:
            info = request.get(INFO)
            code = 413
            error = StatusError(413, f"Request entity too large: limit is {MAX_BODY}")
            return json_response(error.status(), status=413)
        except web.HTTPException as exc:
            code = exc.status
            error = StatusError(exc.status, exc.reason)
            return json_response(error.status(), status=exc.status)
        except (ConnectionResetError, asyncio.CancelledError):
            code = 499
            raise
        except Exception as exc:
            log.exception("internal error serving %s %s", request.method, request.path)
            error = StatusError(500, f"Internal error occurred: {type(exc).__name__}: {exc}")
            return json_response(error.status(), status=500)
        finally:
            self._observe(request, info, code, time.perf_counter() - started)

    async def _authenticate(self, request: web.Request) -> User:
        """Who the request acts as (after impersonation), and, for a path that is not a
        resource, whether they may request it (resources are authorized by the handler)."""
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

    # -- health and metrics -------------------------------------------------------------------

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


def _is_resource_path(path: str) -> bool:
    """`/api/v1/...` and `/apis/group/version/...` below discovery; the rest (health,
    version, discovery, OpenAPI, metrics) are non-resource paths."""
    parts = [p for p in path.split("/") if p]
    return (parts[:1] == ["api"] and len(parts) >= 3) or (parts[:1] == ["apis"] and len(parts) >= 4)


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
