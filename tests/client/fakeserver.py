"""A tiny in-test Kubernetes API server for one namespaced resource (pods).

It is just enough to exercise the client and the informer: list with paging, get, create,
update (compare-and-swap), merge patch, delete, and watch with resourceVersions, bookmarks,
compaction (410 Gone as an HTTP answer or as an ERROR event), and ways to end a watch
gracefully (``close_watches``) or abruptly (``drop_watches``). It also serves a text stream at
``pods/NAME/log``. It lives in tests only; the real API server is ``inplace.apiserver``.
"""

from __future__ import annotations

import asyncio
import copy
import ssl
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from aiohttp import web

Obj = dict[str, Any]


def status_body(code: int, reason: str, message: str, **details: Any) -> Obj:
    body: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def pod(namespace: str, name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": namespace, "name": name},
        "spec": dict(spec),
    }


@dataclass
class _Watch:
    namespace: str | None
    queue: asyncio.Queue[Obj | None] = field(default_factory=asyncio.Queue)
    response: web.StreamResponse | None = None
    request: web.Request | None = None


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(out.get(k), v)
    return out


class FakeAPIServer:
    def __init__(
        self,
        *,
        token: str | None = None,
        gone_mode: Literal["event", "http"] = "event",
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.token = token
        self.gone_mode = gone_mode
        self.ssl_context = ssl_context
        self.objects: dict[str, Obj] = {}
        self.rv = 100
        self.history: list[tuple[int, str, Obj]] = []
        self.compacted = 0
        self.watches: list[_Watch] = []
        self.requests: list[tuple[str, str, dict[str, str], dict[str, str]]] = []
        self.snapshots: dict[str, tuple[int, list[Obj]]] = {}
        self.watch_gate = asyncio.Event()
        self.watch_gate.set()
        self.fail_next: list[tuple[int, Obj | bytes, dict[str, str]]] = []
        self.log_chunks: list[bytes] = [b"one\ntw", b"o\n", b"x" * 200_000 + b"\n", b"tail"]
        self._runner: web.AppRunner | None = None
        self.url = ""

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.ssl_context)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        scheme = "https" if self.ssl_context else "http"
        self.url = f"{scheme}://{host}:{port}"
        return self.url

    async def stop(self) -> None:
        self.watch_gate.set()
        self.close_watches()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- state changes (as if another client wrote) ---------------------------------------------

    def _record(self, event_type: str, obj: Obj) -> None:
        self.history.append((self.rv, event_type, copy.deepcopy(obj)))
        for w in self.watches:
            if w.namespace in (None, obj["metadata"].get("namespace")):
                w.queue.put_nowait({"type": event_type, "object": copy.deepcopy(obj)})

    def put(self, obj: Obj) -> Obj:
        """Create or replace an object, bumping its resourceVersion."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        key = f"{meta['namespace']}/{meta['name']}"
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        existed = key in self.objects
        if not existed:
            meta.setdefault("uid", f"uid-{self.rv}")
        else:
            meta["uid"] = self.objects[key]["metadata"]["uid"]
        self.objects[key] = obj
        self._record("MODIFIED" if existed else "ADDED", obj)
        return copy.deepcopy(obj)

    def remove(self, namespace: str, name: str) -> Obj:
        obj = self.objects.pop(f"{namespace}/{name}")
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self._record("DELETED", obj)
        return obj

    def bump_unrelated(self) -> None:
        """Advance the global resourceVersion without touching any object (another type)."""
        self.rv += 1

    def compact(self) -> None:
        """Forget history: a watch from any earlier resourceVersion now gets 410."""
        self.compacted = self.rv
        self.history.clear()
        self.snapshots.clear()

    def send_bookmark(self) -> None:
        for w in self.watches:
            w.queue.put_nowait(
                {
                    "type": "BOOKMARK",
                    "object": {
                        "kind": "Pod",
                        "apiVersion": "v1",
                        "metadata": {"resourceVersion": str(self.rv)},
                    },
                }
            )

    def close_watches(self) -> None:
        """End every open watch cleanly (as a server-side timeout does)."""
        for w in self.watches:
            w.queue.put_nowait(None)

    def drop_watches(self) -> None:
        """Cut every open watch's connection without ending the stream."""
        for w in list(self.watches):
            if w.request is not None and w.request.transport is not None:
                w.request.transport.abort()

    def state(self, namespace: str | None = None) -> dict[str, Obj]:
        return {
            k: v
            for k, v in self.objects.items()
            if namespace is None or v["metadata"]["namespace"] == namespace
        }

    def watch_requests(self) -> list[dict[str, str]]:
        return [q for m, _, q, _ in self.requests if m == "GET" and q.get("watch") == "true"]

    # -- HTTP -----------------------------------------------------------------------------------

    @staticmethod
    def _json(obj: Any, status: int = 200) -> web.Response:
        return web.Response(body=orjson.dumps(obj), status=status, content_type="application/json")

    def _status(self, code: int, reason: str, message: str, **details: Any) -> web.Response:
        return self._json(status_body(code, reason, message, **details), code)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(
            (request.method, request.path, dict(request.query), dict(request.headers))
        )
        auth = request.headers.get("Authorization")
        if self.token is not None and auth != f"Bearer {self.token}":
            return self._status(401, "Unauthorized", "Unauthorized")
        if self.fail_next:
            code, body, headers = self.fail_next.pop(0)
            raw = body if isinstance(body, bytes) else orjson.dumps(body)
            return web.Response(body=raw, status=code, headers=headers)

        parts = [p for p in request.path.split("/") if p]
        if parts[:2] != ["api", "v1"]:
            return self._status(404, "NotFound", f"no route {request.path}")
        rest = parts[2:]
        namespace: str | None = None
        if len(rest) >= 2 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest or rest[0] != "pods":
            return self._status(404, "NotFound", f"no route {request.path}")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None

        if name is None:
            if request.method == "GET":
                if request.query.get("watch") in ("true", "1"):
                    return await self._watch(request, namespace)
                return self._list(request, namespace)
            if request.method == "POST":
                return await self._create(request, namespace)
            return self._status(405, "MethodNotAllowed", "method not allowed")
        assert namespace is not None
        key = f"{namespace}/{name}"
        if sub == "log":
            return await self._log(request)
        if request.method == "POST" and sub == "eviction":
            if key not in self.objects:
                return self._status(404, "NotFound", f'pods "{name}" not found')
            self.remove(namespace, name)
            return self._json({"kind": "Status", "apiVersion": "v1", "status": "Success"}, 201)
        if key not in self.objects:
            return self._status(404, "NotFound", f'pods "{name}" not found', name=name, kind="pods")
        if request.method == "GET":
            return self._json(self.objects[key])
        if request.method == "PUT":
            body = orjson.loads(await request.read())
            want = body.get("metadata", {}).get("resourceVersion")
            have = self.objects[key]["metadata"]["resourceVersion"]
            if want and want != have:
                return self._status(
                    409,
                    "Conflict",
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again",
                )
            return self._json(self.put(body))
        if request.method == "PATCH":
            raw = await request.read()
            ctype = request.headers.get("Content-Type", "")
            if ctype == "application/merge-patch+json":
                return self._json(self.put(_merge(self.objects[key], orjson.loads(raw))))
            if ctype in (
                "application/strategic-merge-patch+json",
                "application/json-patch+json",
                "application/apply-patch+yaml",
            ):
                return self._json(self.objects[key])
            return self._status(415, "UnsupportedMediaType", f"unsupported patch type {ctype}")
        if request.method == "DELETE":
            return self._json(self.remove(namespace, name))
        return self._status(405, "MethodNotAllowed", "method not allowed")

    async def _create(self, request: web.Request, namespace: str | None) -> web.Response:
        body = orjson.loads(await request.read())
        meta = body.setdefault("metadata", {})
        if namespace is not None:
            meta["namespace"] = namespace
        if not meta.get("name"):
            return self._status(
                422,
                "Invalid",
                "Pod is invalid: metadata.name: Required value",
                causes=[
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value",
                        "field": "metadata.name",
                    }
                ],
            )
        key = f"{meta['namespace']}/{meta['name']}"
        if key in self.objects:
            return self._status(
                409, "AlreadyExists", f'pods "{meta["name"]}" already exists', name=meta["name"]
            )
        return self._json(self.put(body), 201)

    def _list(self, request: web.Request, namespace: str | None) -> web.Response:
        limit = int(request.query.get("limit", "0") or 0)
        token = request.query.get("continue")
        if token:
            if token not in self.snapshots:
                return self._status(410, "Expired", "the continue token has expired")
            rv, items = self.snapshots.pop(token)
        else:
            rv = self.rv
            items = sorted(self.state(namespace).values(), key=lambda o: o["metadata"]["name"])
            items = copy.deepcopy(items)
        meta: Obj = {"resourceVersion": str(rv)}
        if limit and len(items) > limit:
            page, remaining = items[:limit], items[limit:]
            next_token = f"t{len(self.requests)}"
            self.snapshots[next_token] = (rv, remaining)
            meta["continue"] = next_token
            meta["remainingItemCount"] = len(remaining)
        else:
            page = items
        return self._json({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": page})

    async def _watch(self, request: web.Request, namespace: str | None) -> web.StreamResponse:
        await self.watch_gate.wait()
        rv_param = request.query.get("resourceVersion", "")
        since = int(rv_param) if rv_param not in ("", "0") else self.rv
        if since < self.compacted and self.gone_mode == "http":
            return self._status(410, "Expired", f"too old resource version: {since}")
        w = _Watch(namespace=namespace, request=request)
        gone = since < self.compacted
        backlog = [
            {"type": t, "object": copy.deepcopy(o)}
            for rv, t, o in self.history
            if rv > since and namespace in (None, o["metadata"].get("namespace"))
        ]
        if not gone:
            self.watches.append(w)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        w.response = resp
        try:
            if gone:
                err = {
                    "type": "ERROR",
                    "object": status_body(410, "Expired", f"too old resource version: {since}"),
                }
                await resp.write(orjson.dumps(err) + b"\n")
                return resp
            for ev in backlog:
                await resp.write(orjson.dumps(ev) + b"\n")
            timeout = float(request.query.get("timeoutSeconds", "0") or 0) or None
            async with asyncio.timeout(timeout):
                while True:
                    ev = await w.queue.get()
                    if ev is None:
                        break
                    await resp.write(orjson.dumps(ev) + b"\n")
        except (TimeoutError, ConnectionResetError):
            pass
        finally:
            if w in self.watches:
                self.watches.remove(w)
        return resp

    async def _log(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for chunk in self.log_chunks:
            await resp.write(chunk)
            await asyncio.sleep(0)
        return resp
