"""``inplace operator``: restart-free resizing on a real cluster (Kubernetes 1.33 and later),
beside the real controllers.

    inplace operator --namespace inplace-system --webhook-service inplace-webhook   # in a pod
    inplace operator --kubeconfig admin.kubeconfig --webhook-url https://10.0.0.5:9443/mutate

Every replica serves the admission webhook (:mod:`.webhook`, the rule in :mod:`.admission`)
with the certificate the replicas share through a Secret (:mod:`.certs`); the replica that
holds the Lease (:mod:`inplace.client.leaderelection`) keeps the MutatingWebhookConfiguration
pointing at them with the current CA, and runs the controllers — by default
``workload-resize`` (pods resized through ``pods/resize``, progress on the workload) and
``in-place-release`` (the held change completed in place), the same code as in ``inplace
up``; ``--vpa`` adds ``vertical-pod-autoscaler``, the autoscaler for the VPAs whose
``spec.recommenders`` name ``--vpa-recommender-name`` (``inplace``), and ``--rescue``
``rescue-controller``, the rescuer (shrinking donors in place to make room for pods the
scheduler marked Unschedulable; its ``--rescue-*`` flags as the controller manager's). A
leader that loses its Lease exits (status 1) so that it restarts as a standby, as client-go's
components do.
``/healthz`` and ``/readyz`` are served on ``--health-port``, the controllers' metrics on
``--metrics-port``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import logging
import os
import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from prometheus_client import CollectorRegistry, start_http_server

from inplace.client import (
    JOBS,
    MUTATINGWEBHOOKCONFIGURATIONS,
    APINotFoundError,
    Client,
    ConfigError,
    Informer,
    load_config,
)
from inplace.client.leaderelection import LeaderElectionConfig, LeaderElector
from inplace.controllers.manager import (
    ControllerManager,
    ControllerSelectionError,
    select_controllers,
)
from inplace.controllers.rescue.flags import add_rescue_arguments, rescue_options
from inplace.controllers.workloadresize.model import allows_memory_limit_decrease
from inplace.flags import duration
from inplace.logs import FORMATS, configure
from inplace.loop import run as run_event_loop
from inplace.loop import stop_on_signals

from .certs import ensure_serving_cert, ensure_webhook_configuration
from .webhook import WebhookServer

__all__ = ["build_parser", "main"]

log = logging.getLogger("inplace.operator")

DEFAULT_CONTROLLERS = "workload-resize,in-place-release"


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(
        prog="inplace operator", description="Resize workloads in place on a real cluster."
    )
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster)")
    parser.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "inplace-system"),
        help="where its Lease and Secret live ($POD_NAMESPACE, else inplace-system)",
    )
    parser.add_argument(
        "--identity",
        default=os.environ.get("POD_NAME") or socket.gethostname(),
        help="this replica's name in the Lease ($POD_NAME, else the host name)",
    )
    parser.add_argument("--lease-name", default="inplace-operator")
    parser.add_argument("--lease-duration", type=duration, default=15.0)
    parser.add_argument("--renew-deadline", type=duration, default=10.0)
    parser.add_argument("--retry-period", type=duration, default=2.0)
    parser.add_argument("--webhook-host", default="0.0.0.0")
    parser.add_argument("--webhook-port", type=int, default=9443)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--webhook-service", help="the Service in --namespace the API server calls (port 443)"
    )
    where.add_argument(
        "--webhook-url", help="the URL the API server calls instead (no Service routing)"
    )
    parser.add_argument("--webhook-configuration", default="inplace-operator")
    parser.add_argument("--secret", default="inplace-webhook-tls", help="the webhook's TLS Secret")
    parser.add_argument(
        "--exclude-namespace",
        action="append",
        default=[],
        help="a namespace the webhook ignores (repeatable; its own and kube-system always)",
    )
    parser.add_argument(
        "--controllers",
        default=DEFAULT_CONTROLLERS,
        help=f"the controllers the leader runs (default: {DEFAULT_CONTROLLERS})",
    )
    parser.add_argument(
        "--vpa",
        action="store_true",
        help="also run vertical-pod-autoscaler (as --controllers ...,vertical-pod-autoscaler)",
    )
    parser.add_argument(
        "--vpa-recommender-name",
        default="inplace",
        help="the VPAs it autoscales: those whose spec.recommenders name this (inplace)",
    )
    parser.add_argument(
        "--rescue",
        action="store_true",
        help="also run rescue-controller (as --controllers ...,rescue-controller)",
    )
    parser.add_argument(
        "--resize-replace-after",
        type=duration,
        default=30.0,
        help="how long an InPlacePreferred pod's resize may wait before it is replaced (30s)",
    )
    parser.add_argument("--own-user", default="", help="its own user name (its writes pass)")
    parser.add_argument(
        "--cert-check-interval",
        type=duration,
        default=3600.0,
        help="how often the serving certificate's renewal is checked (1h)",
    )
    parser.add_argument("--health-port", type=int, default=8081)
    parser.add_argument("--metrics-port", type=int, default=0, help="/metrics port (0: off)")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument(
        "--log-format", choices=FORMATS, default="text", help="text, or json (one object a line)"
    )
    add_rescue_arguments(parser, duration)
    return parser


def _names(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The DNS names and IP addresses the serving certificate must cover."""
    if args.webhook_url:
        host = urlsplit(args.webhook_url).hostname or ""
        try:
            socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
        except OSError:
            return [host], []
        return [], [host]
    svc, ns = args.webhook_service, args.namespace
    return [svc, f"{svc}.{ns}", f"{svc}.{ns}.svc", f"{svc}.{ns}.svc.cluster.local"], []


class _Health:
    """``/healthz`` (the process serves) and ``/readyz`` (its webhook serves)."""

    def __init__(self, webhook: WebhookServer) -> None:
        self.webhook = webhook
        self.runner: web.AppRunner | None = None

    async def start(self, port: int) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthy)
        app.router.add_get("/readyz", self._ready)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        # reuse_port: replicas sharing a host's network (nodes that run pods as host
        # processes, as inplace's do) each serve; the kernel spreads the connections.
        await web.TCPSite(self.runner, "0.0.0.0", port, reuse_port=True).start()

    async def _healthy(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _ready(self, _request: web.Request) -> web.Response:
        if self.webhook.port:
            return web.Response(text="ok")
        return web.Response(status=503, text="webhook not serving")

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


def _controllers(args: argparse.Namespace) -> str:
    """``--controllers`` with what ``--vpa`` and ``--rescue`` add."""
    extra = [
        name
        for name, wanted in (
            ("vertical-pod-autoscaler", args.vpa),
            ("rescue-controller", args.rescue),
        )
        if wanted
    ]
    return ",".join([args.controllers, *extra])


async def run(args: argparse.Namespace) -> int:
    specs = select_controllers(_controllers(args))
    config = load_config(args.kubeconfig)
    registry = CollectorRegistry()
    if args.metrics_port:
        start_http_server(args.metrics_port, registry=registry)
    options: Mapping[str, Any] = {
        "metrics_registry": registry,
        "resize_replace_after": args.resize_replace_after,
        "vpa_recommender_name": args.vpa_recommender_name,
        **rescue_options(args),
    }
    dns, ips = _names(args)
    async with Client(config, user_agent="inplace-operator", connection_limit=64) as client:
        cert = await ensure_serving_cert(client, args.namespace, args.secret, dns, ips)
        version = await client.request("GET", "/version")
        decrease = allows_memory_limit_decrease(version if isinstance(version, dict) else {})
        log.info(
            "%s: API server %s %s memory limits to be lowered in place",
            args.identity,
            (version or {}).get("gitVersion") if isinstance(version, dict) else version,
            "allows" if decrease else "does not allow (such a change rolls out)",
        )
        jobs = Informer(client, JOBS)
        jobs_task = asyncio.create_task(jobs.run())
        webhook = WebhookServer(
            cert,
            host=args.webhook_host,
            port=args.webhook_port,
            own_user=args.own_user,
            jobs=lambda namespace, name: jobs.get(f"{namespace}/{name}"),
            allow_memory_limit_decrease=decrease,
        )
        await webhook.start()
        health = _Health(webhook)
        await health.start(args.health_port)
        log.info("%s: webhook serving on port %d", args.identity, webhook.port)

        serving = [cert]  # the certificate served now (replaced by renew())

        async def register(ca_pem: bytes) -> None:
            service = None
            if args.webhook_service:
                service = (args.namespace, args.webhook_service, 443, "/mutate")
            await ensure_webhook_configuration(
                client,
                args.webhook_configuration,
                ca_pem=ca_pem,
                service=service,
                url=args.webhook_url,
                namespace_exclude=(args.namespace, "kube-system", *args.exclude_namespace),
            )

        async def lead() -> None:
            await register(serving[0].ca_pem)
            await ControllerManager(client, specs, options=options).run()

        async def renew() -> None:
            """A renewed certificate (new CA) is served only once the API server trusts it:
            the leader registers both CAs, every replica waits to see its new CA there,
            then switches; the next leader registers the new CA alone."""
            while True:
                await asyncio.sleep(args.cert_check_interval)
                new = await ensure_serving_cert(client, args.namespace, args.secret, dns, ips)
                if new.cert_pem == serving[0].cert_pem:
                    continue
                while not await _trusted(client, args.webhook_configuration, new.ca_pem):
                    if elector.is_leader:
                        await register(serving[0].ca_pem + new.ca_pem)
                    await asyncio.sleep(args.retry_period)
                webhook.reload(new)
                serving[0] = new

        elector = LeaderElector(
            client,
            LeaderElectionConfig(
                args.lease_name,
                args.namespace,
                args.identity,
                lease_duration=args.lease_duration,
                renew_deadline=args.renew_deadline,
                retry_period=args.retry_period,
            ),
        )
        stop = stop_on_signals()
        leading = asyncio.create_task(elector.run(lead))
        stopping = asyncio.create_task(stop.wait())
        renewing = asyncio.create_task(renew())
        try:
            await asyncio.wait({leading, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if leading.done():
                leading.result()
                log.warning("%s: leadership lost; exiting to restart as a standby", args.identity)
                return 1
            return 0
        finally:
            for task in (leading, stopping, renewing, jobs_task):
                task.cancel()
            for task in (leading, stopping, renewing, jobs_task):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await health.stop()
            await webhook.stop()


async def _trusted(client: Client, configuration: str, ca_pem: bytes) -> bool:
    """The webhook configuration's caBundle holds ``ca_pem``."""
    try:
        obj = await client.get(MUTATINGWEBHOOKCONFIGURATIONS, configuration)
    except APINotFoundError:
        return False
    bundles = (
        base64.b64decode(str((w.get("clientConfig") or {}).get("caBundle") or ""))
        for w in obj.get("webhooks") or ()
    )
    return any(ca_pem.strip() in bundle for bundle in bundles)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure(args.log_level, args.log_format)
    try:
        return run_event_loop(run(args))
    except (ConfigError, ControllerSelectionError) as exc:
        print(f"inplace operator: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
