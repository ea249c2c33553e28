"""Usage sampling and the agent's small HTTP endpoint (read by ``kubectl top`` via the API).

Every ``interval`` seconds the sampler reads each running container's cgroup (cumulative CPU
time, working-set memory; the ``none`` driver walks processes with psutil) and turns two
consecutive CPU readings into a rate (nano-cores, as kubelet's Summary API reports it). A
bounded history (``history_seconds``, 15 minutes by default) is kept per container for the
autoscaler.

The endpoint listens on ``--address`` (``127.0.0.1`` by default, also reported as the Node's
``InternalIP``), in one of two modes:

* **Plain HTTP** (``inplace up``): the usage pages are read-only and unauthenticated (they only
  reveal usage figures); the routes other parts of the agent add (:meth:`StatsServer.add_route`:
  ``kubectl exec``'s, :mod:`.streaming`, and the container logs, :mod:`.containerlogs`) accept
  only the API server, which presents the node's own bearer token (:func:`authenticated`).
* **HTTPS** (``--tls-cert-file``, ``--tls-private-key-file``, ``--client-ca-file``: kubelet's
  flags, as upstream's kube-apiserver calls a kubelet with its ``--kubelet-client-certificate``):
  the agent serves that certificate and requires a client certificate signed by the client CA
  (``ssl.CERT_REQUIRED``); a connection without one, or with one from another CA, fails in the
  handshake, before any request is read. **The trust rule:** whoever holds a certificate the
  client CA signed is the API server, so that CA must sign nothing else (the test bed's
  kubelet-client CA signs only kube-apiserver's kubelet-client certificate); every route,
  the usage pages included, is then the API server's alone, and no bearer token is asked for
  (kube-apiserver sends none: its verified certificate is the authentication).

It serves:

* ``GET /stats/summary`` — kubelet's Summary API shape, reduced to what ``metrics.k8s.io``
  needs: ``node`` and ``pods[]`` with ``podRef`` and ``containers[]`` (``cpu.usageNanoCores``,
  ``memory.workingSetBytes``) and the sample ``time``;
* ``GET /stats/history`` — the kept history, per pod and container;
* ``GET /healthz`` — ``ok``;
* the added routes: ``/exec/…`` and ``/attach/…`` (:mod:`.streaming`) and
  ``GET /containerLogs/{namespace}/{pod}/{container}`` (:mod:`.containerlogs`).

``?node=NAME`` picks the node when one endpoint serves several (simulated nodes); without it
the endpoint answers for the node it was created for.

The port is published in the Node's ``status.daemonEndpoints.kubeletEndpoint.Port``.
"""

from __future__ import annotations

import collections
import hmac
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from inplace.api.timestamps import rfc3339

from .cgroups.base import CgroupDriver, CgroupError

if TYPE_CHECKING:
    from .config import AgentConfig

__all__ = [
    "ContainerRef",
    "Sample",
    "StatsServer",
    "UsageSampler",
    "authenticated",
    "endpoint_ssl_context",
]


@dataclass(frozen=True)
class ContainerRef:
    """A container to sample: which pod it belongs to and its cgroup path."""

    namespace: str
    pod: str
    uid: str
    container: str
    cgroup_path: str


@dataclass(frozen=True)
class Sample:
    at: float
    """Wall-clock time (seconds since the epoch)."""
    cpu_nano_cores: int
    memory_working_set: int


@dataclass
class _Series:
    last_cpu_ns: int | None = None
    last_at: float | None = None
    samples: collections.deque[Sample] = field(default_factory=collections.deque)


class UsageSampler:
    """Reads cgroups; keeps the latest rate and a bounded history per container."""

    def __init__(
        self,
        driver: CgroupDriver,
        *,
        node_path: str,
        history_seconds: float = 900.0,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.driver = driver
        self.node_path = node_path
        self.history_seconds = history_seconds
        self.wall = wall
        self._series: dict[tuple[str, str], _Series] = {}
        self._refs: dict[tuple[str, str], ContainerRef] = {}
        self._node = _Series()

    def _update(self, series: _Series, cpu_ns: int, memory: int, now: float) -> Sample:
        rate = 0
        if series.last_cpu_ns is not None and series.last_at is not None and now > series.last_at:
            rate = max(0, int((cpu_ns - series.last_cpu_ns) / (now - series.last_at)))
        series.last_cpu_ns, series.last_at = cpu_ns, now
        sample = Sample(now, rate, memory)
        series.samples.append(sample)
        self._trim(series, now)
        return sample

    def sample(self, refs: Iterable[ContainerRef]) -> None:
        """One sampling round (synchronous: a few small file reads per container)."""
        now = self.wall()
        seen: set[tuple[str, str]] = set()
        for ref in refs:
            key = (ref.uid, ref.container)
            try:
                usage = self.driver.usage(ref.cgroup_path)
            except (CgroupError, OSError):
                continue
            seen.add(key)
            self._refs[key] = ref
            series = self._series.setdefault(key, _Series())
            self._update(series, usage.cpu_usage_ns, usage.memory_working_set_bytes, now)
        for key in list(self._series):
            if key not in seen:
                del self._series[key]
                self._refs.pop(key, None)
        try:
            node = self.driver.usage(self.node_path)
        except (CgroupError, OSError):
            return
        self._update(self._node, node.cpu_usage_ns, node.memory_working_set_bytes, now)

    def record(self, usage: Iterable[tuple[ContainerRef, int, int]]) -> None:
        """One round of usage that was not read from cgroups (simulated nodes): CPU rates in
        nano-cores and memory in bytes per container; the node's usage is their sum."""
        now = self.wall()
        seen: set[tuple[str, str]] = set()
        total_cpu = total_memory = 0
        for ref, cpu, memory in usage:
            key = (ref.uid, ref.container)
            seen.add(key)
            self._refs[key] = ref
            series = self._series.setdefault(key, _Series())
            series.last_at = now
            series.samples.append(Sample(now, cpu, memory))
            self._trim(series, now)
            total_cpu += cpu
            total_memory += memory
        for key in list(self._series):
            if key not in seen:
                del self._series[key]
                self._refs.pop(key, None)
        self._node.last_at = now
        self._node.samples.append(Sample(now, total_cpu, total_memory))
        self._trim(self._node, now)

    def _trim(self, series: _Series, now: float) -> None:
        while series.samples and series.samples[0].at < now - self.history_seconds:
            series.samples.popleft()

    def latest(self) -> dict[tuple[str, str], tuple[ContainerRef, Sample]]:
        out: dict[tuple[str, str], tuple[ContainerRef, Sample]] = {}
        for key, series in self._series.items():
            if series.samples and series.last_at is not None and len(series.samples) >= 1:
                out[key] = (self._refs[key], series.samples[-1])
        return out

    def summary(self, node_name: str) -> dict[str, Any]:
        """Kubelet's Summary API shape (the fields ``metrics.k8s.io`` needs)."""
        pods: dict[str, dict[str, Any]] = {}
        for ref, sample in self.latest().values():
            pod = pods.setdefault(
                ref.uid,
                {
                    "podRef": {"name": ref.pod, "namespace": ref.namespace, "uid": ref.uid},
                    "containers": [],
                },
            )
            pod["containers"].append(
                {
                    "name": ref.container,
                    "cpu": {"time": rfc3339(sample.at), "usageNanoCores": sample.cpu_nano_cores},
                    "memory": {
                        "time": rfc3339(sample.at),
                        "workingSetBytes": sample.memory_working_set,
                    },
                }
            )
        for pod in pods.values():
            times = [c["cpu"]["time"] for c in pod["containers"]]
            pod["time"] = max(times) if times else rfc3339(self.wall())
        node: dict[str, Any] = {"nodeName": node_name}
        if self._node.samples:
            last = self._node.samples[-1]
            node.update(
                time=rfc3339(last.at),
                cpu={"time": rfc3339(last.at), "usageNanoCores": last.cpu_nano_cores},
                memory={"time": rfc3339(last.at), "workingSetBytes": last.memory_working_set},
            )
        return {"node": node, "pods": list(pods.values())}

    def history(self) -> dict[str, Any]:
        out: list[dict[str, Any]] = []
        for key, series in self._series.items():
            ref = self._refs[key]
            out.append(
                {
                    "podRef": {"name": ref.pod, "namespace": ref.namespace, "uid": ref.uid},
                    "container": ref.container,
                    "samples": [
                        [s.at, s.cpu_nano_cores, s.memory_working_set] for s in series.samples
                    ],
                }
            )
        return {"items": out}


def endpoint_ssl_context(config: AgentConfig) -> ssl.SSLContext | None:
    """The HTTPS mode's context (see the module docstring), None for plain HTTP: the
    configured certificate, TLS 1.2 or later, HTTP/1.1, and a client certificate that the
    client CA signed, required. Raises OSError or ssl.SSLError for files that do not load."""
    if config.tls_cert_file is None:
        return None
    if config.tls_private_key_file is None or config.client_ca_file is None:
        raise ValueError("an HTTPS endpoint needs its private key and a client CA")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(config.tls_cert_file, config.tls_private_key_file)
    context.load_verify_locations(cafile=config.client_ca_file)
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["http/1.1"])
    return context


def authenticated(request: web.Request, token: str | None) -> bool:
    """The caller is the API server: a client certificate the TLS handshake verified (the
    HTTPS mode accepts no connection without one), or on plain HTTP the node's own bearer
    token, ``token``."""
    transport = request.transport
    if transport is not None and transport.get_extra_info("peercert"):
        return True
    header = request.headers.get("Authorization", "")
    presented = header[len("Bearer ") :].strip() if header.startswith("Bearer ") else ""
    return bool(token) and hmac.compare_digest(presented.encode(), str(token).encode())


class StatsServer:
    """The HTTP endpoint (see the module docstring); HTTPS with ``ssl_context``
    (:func:`endpoint_ssl_context`)."""

    def __init__(
        self,
        sampler: UsageSampler | None = None,
        node_name: str = "",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.samplers: dict[str, UsageSampler] = {}
        if sampler is not None:
            self.samplers[node_name] = sampler
        self.default = node_name
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self._runner: web.AppRunner | None = None
        self._routes: list[tuple[str, str, Callable[[web.Request], Awaitable[Any]]]] = []

    def add_route(
        self, method: str, path: str, handler: Callable[[web.Request], Awaitable[Any]]
    ) -> None:
        """Serve another endpoint of the agent here (before :meth:`start`)."""
        self._routes.append((method, path, handler))

    async def start(self) -> int:
        app = web.Application()
        app.router.add_get("/stats/summary", self._summary)
        app.router.add_get("/stats/history", self._history)
        app.router.add_get("/healthz", self._health)
        for method, path, handler in self._routes:
            app.router.add_route(method, path, handler)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner,
            self.host,
            self.port,
            reuse_address=True,
            ssl_context=self.ssl_context,
        )
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = int(server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def add(self, node_name: str, sampler: UsageSampler) -> None:
        """Serve another node's usage too (one endpoint for many simulated nodes)."""
        self.samplers[node_name] = sampler

    def _pick(self, request: web.Request) -> tuple[str, UsageSampler]:
        name = request.query.get("node") or self.default
        sampler = self.samplers.get(name)
        if sampler is None:
            raise web.HTTPNotFound(text=f"no node {name!r} here")
        return name, sampler

    async def _summary(self, request: web.Request) -> web.Response:
        name, sampler = self._pick(request)
        return web.Response(
            body=orjson.dumps(sampler.summary(name)), content_type="application/json"
        )

    async def _history(self, request: web.Request) -> web.Response:
        _, sampler = self._pick(request)
        return web.Response(body=orjson.dumps(sampler.history()), content_type="application/json")

    async def _health(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")
