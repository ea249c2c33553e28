"""The dashboard's HTTP side: one page, its static files, live streams and the resize form.

Access is by token, as Jupyter does it: the URL ``inplace up`` prints carries ``?token=…``;
the first visit trades it for an HttpOnly, SameSite=Strict cookie (named after the port, so
two clusters' dashboards on one host do not overwrite each other's) and redirects to the
bare URL so the token leaves the address bar. Every request but ``/healthz`` needs the
cookie, ``?token=`` or ``Authorization: Bearer …``; anything else is a 401. A POST must
also come from the dashboard's own origin with a JSON body (another page on 127.0.0.1 is
"same-site" to the browser and would otherwise carry the cookie).

Streams are server-sent events (``GET /api/stream?view=…``), one per open page:

* ``cluster`` and ``workloads`` — the whole view, sent when it changed; rendered once per
  state revision however many tabs watch it;
* ``pods`` (filters ``namespace``, ``labels`` — a label selector as kubectl's ``-l`` —,
  ``state`` and ``q``) — a ``snapshot`` of the matching rows, then ``delta`` events with
  the rows that changed and the keys that left; a row is rendered once per change of its pod
  and shared by every stream;
* ``pod`` (``namespace``, ``name``) — the pod's page, sent when anything about the pod
  changed.

A stream waits for the next state revision, renders, sends, then waits at least
``min_interval`` before the next send, so a burst of watch events costs one message.
``GET /api/view?view=…`` answers the same first message once, as plain JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import importlib.resources
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson
from aiohttp import web

from inplace.api.selectors import LabelSelector, SelectorError
from inplace.client import APIError, Client

from .model import PodSummary
from .resize import plan_resize
from .state import DashboardState
from .views import cluster_view, pod_detail, pod_row, workloads_view

__all__ = ["DashboardServer", "static_dir"]

log = logging.getLogger(__name__)

STATES: Final = (
    "Running",
    "Pending",
    "Resizing",
    "Proposed",
    "InProgress",
    "Deferred",
    "Infeasible",
    "Error",
    "Paused",
)
"""The pods table's state filter: kubectl's STATUS ``Running`` / ``Pending``, any resize in
flight, one resize state, or paused at the memory limit."""

_UNAUTHORIZED = (
    "401 Unauthorized: this dashboard needs its token. Open the URL `inplace up` (or "
    "`inplace dashboard`) printed: it ends with ?token=…\n"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def static_dir() -> Path:
    return Path(str(importlib.resources.files("inplace.dashboard") / "static"))


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", charset="utf-8"
    )


@dataclass(frozen=True)
class PodFilter:
    namespace: str = ""
    labels: LabelSelector = field(default_factory=LabelSelector.everything)
    state: str = ""
    text: str = ""

    @classmethod
    def from_query(cls, query: Any) -> PodFilter:
        """Raises ValueError with a message the page shows."""
        state = query.get("state", "")
        if state and state not in STATES:
            raise ValueError(f"state must be one of {', '.join(STATES)}")
        try:
            labels = LabelSelector.parse(query.get("labels", ""))
        except SelectorError as exc:
            raise ValueError(f"labels: {exc}") from None
        return cls(query.get("namespace", ""), labels, state, query.get("q", "").strip())

    def matches(self, s: PodSummary) -> bool:
        if self.namespace and s.namespace != self.namespace:
            return False
        if self.text and self.text not in s.name:
            return False
        if not self.labels.matches(s.labels):
            return False
        if not self.state:
            return True
        if self.state == "Paused":
            return bool(s.paused)
        if self.state == "Resizing":
            return bool(s.resize.state)
        if self.state in ("Running", "Pending"):
            return s.phase == self.state
        return s.resize.state == self.state


class DashboardServer:
    """The aiohttp application over a :class:`DashboardState` (see the module docstring)."""

    def __init__(
        self,
        state: DashboardState,
        client: Client,
        *,
        token: str,
        port: int = 0,
        min_interval: float = 0.25,
        heartbeat: float = 15.0,
    ) -> None:
        if not token:
            raise ValueError("a dashboard needs a token")
        self.state = state
        self.client = client
        self.token = token
        self.port = port
        self.min_interval = min_interval
        self.heartbeat = heartbeat
        self._runner: web.AppRunner | None = None
        self._memo: dict[str, tuple[int, bytes]] = {}
        self._rows: dict[str, tuple[int, dict[str, Any]]] = {}
        self._stream_tasks: set[asyncio.Task[Any]] = set()
        self.streams = 0
        """Streams open now (for tests and the benchmark)."""

    # -- lifecycle -------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth], client_max_size=64 * 1024)
        app.router.add_get("/healthz", self._health)
        app.router.add_get("/", self._index)
        app.router.add_get("/api/stream", self._stream)
        app.router.add_get("/api/view", self._view_once)
        app.router.add_post("/api/resize/preview", self._resize_preview)
        app.router.add_post("/api/resize/apply", self._resize_apply)
        app.router.add_static("/static", static_dir(), follow_symlinks=False)
        return app

    async def start(self) -> int:
        """Serve on 127.0.0.1 only; returns the port (chosen when 0)."""
        # handler_cancellation: a stream whose browser tab closed ends at once, not at its
        # next heartbeat
        self._runner = web.AppRunner(
            self.app(), access_log=None, handle_signals=False, handler_cancellation=True
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = int(server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        for task in list(self._stream_tasks):
            task.cancel()
        if self._runner is not None:
            await self._runner.shutdown()
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    @property
    def cookie_name(self) -> str:
        return f"inplace-dashboard-{self.port}"

    # -- access ----------------------------------------------------------------------------

    def _valid(self, candidate: str | None) -> bool:
        return bool(candidate) and hmac.compare_digest(str(candidate).encode(), self.token.encode())

    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path == "/healthz":
            return await handler(request)
        given = request.query.get("token")
        header = request.headers.get("Authorization", "")
        bearer = header.split(" ", 1)[1].strip() if " " in header else None
        if given is not None:
            if not self._valid(given):
                return web.Response(status=401, text=_UNAUTHORIZED)
            if request.method == "GET" and request.path == "/":
                found = web.HTTPFound("/")
                found.set_cookie(
                    self.cookie_name, self.token, httponly=True, samesite="Strict", path="/"
                )
                raise found
        elif not (self._valid(request.cookies.get(self.cookie_name)) or self._valid(bearer)):
            return web.Response(status=401, text=_UNAUTHORIZED)
        if request.method == "POST":
            origin = request.headers.get("Origin")
            if origin is not None and origin != f"http://127.0.0.1:{self.port}":
                return web.Response(status=403, text="403 Forbidden: cross-origin request\n")
            if request.content_type != "application/json":
                return web.Response(status=415, text="415: send application/json\n")
        return await handler(request)

    async def _health(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _index(self, _: web.Request) -> web.StreamResponse:
        return web.FileResponse(static_dir() / "index.html", headers={"Cache-Control": "no-store"})

    # -- views -----------------------------------------------------------------------------

    def _shared(self, name: str, render: Callable[[], dict[str, Any]]) -> bytes:
        """A view rendered at most once per state revision, whoever asks."""
        revision = self.state.revision
        cached = self._memo.get(name)
        if cached is not None and cached[0] == revision:
            return cached[1]
        body = orjson.dumps({**render(), "meta": self._meta()})
        self._memo[name] = (revision, body)
        return body

    def _meta(self) -> dict[str, Any]:
        return {
            "now": self.state.clock(),
            "synced": self.state.synced(),
            "metrics": self.state.metrics_available,
            "metricsError": self.state.metrics_error,
            "window": self.state.window,
        }

    def cluster(self) -> bytes:
        state = self.state
        return self._shared(
            "cluster",
            lambda: cluster_view(state.nodes.list(), state.summaries.values(), state.node_usage),
        )

    def workloads(self) -> bytes:
        state = self.state
        return self._shared(
            "workloads",
            lambda: workloads_view(
                state.workload_informer("Deployment").list(),
                state.workload_informer("ReplicaSet").list(),
                state.workload_informer("Job").list(),
                state.summaries.values(),
                state.owner_of,
                state.departed,
                stateful_sets=state.workload_informer("StatefulSet").list(),
                daemon_sets=state.workload_informer("DaemonSet").list(),
            ),
        )

    def row(self, summary: PodSummary) -> dict[str, Any]:
        version = self.state.versions.get(summary.key, 0)
        cached = self._rows.get(summary.key)
        if cached is not None and cached[0] == version:
            return cached[1]
        row = pod_row(summary, self.state.histories.get(summary.uid), now=self.state.clock())
        self._rows[summary.key] = (version, row)
        if len(self._rows) > 2 * len(self.state.summaries) + 64:
            for key in [k for k in self._rows if k not in self.state.summaries]:
                del self._rows[key]
        return row

    def pod(self, namespace: str, name: str) -> bytes | None:
        summary = self.state.summaries.get(f"{namespace}/{name}")
        if summary is None:
            return None
        detail = pod_detail(
            summary,
            self.state.histories.get(summary.uid),
            now=self.state.clock(),
            window=self.state.window,
            chain=self.state.chain(summary),
            vpa=self.state.vpa_of.get(summary.key),
        )
        return orjson.dumps({**detail, "meta": self._meta()})

    def _pods_snapshot(self, where: PodFilter) -> tuple[dict[str, int], list[dict[str, Any]]]:
        versions: dict[str, int] = {}
        rows = []
        for key, summary in self.state.summaries.items():
            if where.matches(summary):
                versions[key] = self.state.versions.get(key, 0)
                rows.append(self.row(summary))
        return versions, rows

    def _pods_meta(self) -> dict[str, Any]:
        namespaces = sorted({s.namespace for s in self.state.summaries.values()})
        return {**self._meta(), "total": len(self.state.summaries), "namespaces": namespaces}

    # -- streams ---------------------------------------------------------------------------

    async def _view_once(self, request: web.Request) -> web.Response:
        view = request.query.get("view", "")
        if view == "cluster":
            return web.Response(body=self.cluster(), content_type="application/json")
        if view == "workloads":
            return web.Response(body=self.workloads(), content_type="application/json")
        if view == "pods":
            try:
                where = PodFilter.from_query(request.query)
            except ValueError as exc:
                return _json({"error": str(exc)}, 400)
            _, rows = self._pods_snapshot(where)
            return _json({"rows": rows, "meta": self._pods_meta()})
        if view == "pod":
            body = self.pod(request.query.get("namespace", ""), request.query.get("name", ""))
            if body is None:
                return _json({"error": "no such pod"}, 404)
            return web.Response(body=body, content_type="application/json")
        return _json({"error": "view must be cluster, pods, pod or workloads"}, 400)

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        view = request.query.get("view", "")
        if view not in ("cluster", "pods", "pod", "workloads"):
            return _json({"error": "view must be cluster, pods, pod or workloads"}, 400)
        where = PodFilter()
        if view == "pods":
            try:
                where = PodFilter.from_query(request.query)
            except ValueError as exc:
                return _json({"error": str(exc)}, 400)
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        self.streams += 1
        task = asyncio.current_task()
        if task is not None:
            self._stream_tasks.add(task)
        try:
            if view == "pods":
                await self._stream_pods(response, where)
            elif view == "pod":
                namespace, name = request.query.get("namespace", ""), request.query.get("name", "")
                await self._stream_views(response, "pod", lambda: self.pod(namespace, name))
            elif view == "cluster":
                await self._stream_views(response, "cluster", self.cluster)
            else:
                await self._stream_views(response, "workloads", self.workloads)
        except ConnectionResetError:
            pass  # the tab went away mid-write
        finally:
            self.streams -= 1
            if task is not None:
                self._stream_tasks.discard(task)
        return response

    async def _send(self, response: web.StreamResponse, event: str, data: bytes) -> None:
        await response.write(b"event: " + event.encode() + b"\ndata: " + data + b"\n\n")

    async def _next(self, response: web.StreamResponse, last: int) -> int:
        """Wait for a revision after ``last``, keeping the connection alive meanwhile."""
        while True:
            revision = await self.state.wait_changed(last, self.heartbeat)
            if revision != last:
                return revision
            await response.write(b": keep-alive\n\n")

    async def _stream_views(
        self, response: web.StreamResponse, event: str, render: Callable[[], bytes | None]
    ) -> None:
        last, sent = -1, b""
        while True:
            last = await self._next(response, last)
            body = render()
            if body is None:
                body = b"{}"
                if sent != body:
                    await self._send(response, "missing", body)
                    sent = body
            elif body != sent:
                await self._send(response, event, body)
                sent = body
            await asyncio.sleep(self.min_interval)

    async def _stream_pods(self, response: web.StreamResponse, where: PodFilter) -> None:
        sent, rows = self._pods_snapshot(where)
        last = self.state.revision
        await self._send(
            response, "snapshot", orjson.dumps({"rows": rows, "meta": self._pods_meta()})
        )
        while True:
            await asyncio.sleep(self.min_interval)
            last = await self._next(response, last)
            upserts = []
            present: dict[str, int] = {}
            for key, summary in self.state.summaries.items():
                if not where.matches(summary):
                    continue
                version = self.state.versions.get(key, 0)
                present[key] = version
                if sent.get(key) != version:
                    upserts.append(self.row(summary))
            gone = [key for key in sent if key not in present]
            sent = present
            if upserts or gone:
                body = {"upsert": upserts, "delete": gone, "meta": self._pods_meta()}
                await self._send(response, "delta", orjson.dumps(body))

    # -- the resize form -------------------------------------------------------------------

    async def _form(self, request: web.Request) -> tuple[dict[str, Any], Any] | web.Response:
        try:
            body = await request.json(loads=orjson.loads)
        except (orjson.JSONDecodeError, ValueError):
            return _json({"error": "the body must be JSON"}, 400)
        if not isinstance(body, dict):
            return _json({"error": "the body must be a JSON object"}, 400)
        namespace, name = str(body.get("namespace") or ""), str(body.get("name") or "")
        pod = self.state.pods.get(f"{namespace}/{name}")
        if pod is None:
            return _json({"error": f'pods "{name}" not found in namespace "{namespace}"'}, 404)
        return body, plan_resize(pod, body.get("containers") or {})

    def _plan_json(self, plan: Any) -> dict[str, Any]:
        return {
            "command": plan.command,
            "patch": plan.patch,
            "errors": [{"field": e.field, "message": e.message} for e in plan.errors],
        }

    async def _resize_preview(self, request: web.Request) -> web.Response:
        """The patch and kubectl line for the typed sizes, and whether the API server would
        take it (a dry-run of the same patch)."""
        form = await self._form(request)
        if isinstance(form, web.Response):
            return form
        _, plan = form
        out = self._plan_json(plan)
        if plan.patch is not None:
            try:
                await self.client.resize_pod(plan.namespace, plan.name, plan.patch, dry_run=True)
                out["server"] = {"ok": True, "message": "the API server accepts this resize"}
            except APIError as exc:
                out["server"] = {"ok": False, "code": exc.status, "message": exc.message}
        return _json(out)

    async def _resize_apply(self, request: web.Request) -> web.Response:
        """Send the patch, with the dashboard's kubeconfig identity (under `inplace up`, its
        own `system:inplace:dashboard`, allowed to patch `pods/resize`)."""
        form = await self._form(request)
        if isinstance(form, web.Response):
            return form
        _, plan = form
        out = self._plan_json(plan)
        if plan.patch is None:
            return _json({**out, "ok": False, "message": "nothing to apply"}, 422)
        try:
            pod = await self.client.resize_pod(plan.namespace, plan.name, plan.patch)
        except APIError as exc:
            return _json(
                {**out, "ok": False, "code": exc.status, "message": exc.message}, exc.status
            )
        generation = (pod.get("metadata") or {}).get("generation")
        log.info("resized %s/%s: %s", plan.namespace, plan.name, plan.body.decode())
        return _json({**out, "ok": True, "message": f"resize sent (generation {generation})"})


async def serve_until(server: DashboardServer, stop: asyncio.Event) -> None:
    """Run ``server`` until ``stop`` is set."""
    await server.start()
    try:
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            await server.stop()
