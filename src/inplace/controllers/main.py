"""``inplace controller-manager``: run the controllers against any Kubernetes API server.

    inplace controller-manager --kubeconfig components/controller-manager.kubeconfig \
        --use-service-account-credentials                          # as `inplace up` runs it
    inplace controller-manager --controllers=workload-resize      # on a real cluster

SIGINT/SIGTERM stop it cleanly. Flag names are kube-controller-manager's where it has them.
``--metrics-port`` serves the controllers' Prometheus metrics on ``/metrics`` (prometheus-client's
own HTTP server, in a thread: nothing here is on the event loop's path).
"""

from __future__ import annotations

import argparse
import logging

from prometheus_client import CollectorRegistry, start_http_server

from inplace.client import Client, ConfigError, ServiceAccountCredentials, load_config
from inplace.flags import duration
from inplace.loop import run as run_event_loop
from inplace.loop import run_until_signal

from .manager import CONTROLLERS, ControllerManager, ControllerSelectionError, select_controllers
from .rescue.flags import add_rescue_arguments, rescue_options

__all__ = ["build_parser", "main"]

log = logging.getLogger("inplace.controllers")


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(
        prog="inplace controller-manager", description="Run the workload controllers."
    )
    names = ", ".join(spec.name for spec in CONTROLLERS)
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: $KUBECONFIG)")
    parser.add_argument(
        "--controllers",
        default="*",
        help=f"controllers to run: '*' all, 'foo' enable, '-foo' disable (known: {names})",
    )
    parser.add_argument(
        "--node-monitor-grace-period",
        type=duration,
        default=40.0,
        help="how long a node's Lease may go unrenewed before it is marked Unknown (40s)",
    )
    parser.add_argument(
        "--node-monitor-period",
        type=duration,
        default=5.0,
        help="how often node health is checked (5s)",
    )
    parser.add_argument(
        "--terminated-pod-gc-threshold",
        type=int,
        default=12500,
        help="finished pods kept before the pod garbage collector deletes the oldest "
        "(12500; 0: never)",
    )
    parser.add_argument(
        "--resize-replace-after",
        type=duration,
        default=30.0,
        help="how long an InPlacePreferred pod's resize may wait (Deferred/Infeasible) before "
        "the pod is replaced at the new size (30s)",
    )
    parser.add_argument(
        "--default-local-storage-path",
        default=None,
        help="directory the local-path provisioner makes volumes in (k3s's flag); without it, "
        "claims of the local-path class wait as for an external provisioner",
    )
    parser.add_argument(
        "--use-service-account-credentials",
        action="store_true",
        help="run each controller as its own service account in kube-system (needs the "
        "right to create them and request their tokens, as system:kube-controller-manager "
        "has), so each holds only its system:controller:* role",
    )
    parser.add_argument("--metrics-port", type=int, default=0, help="/metrics port (0: off)")
    parser.add_argument("--metrics-host", default="127.0.0.1")
    add_rescue_arguments(parser, duration)
    parser.add_argument(
        "--vpa-variant",
        default="inplace",
        help="the VPA recommender's and updater's settings: inplace (default) or upstream",
    )
    for flag, default, what in (
        ("recommender-interval", "10s", "between VPA recommendation passes"),
        ("updater-interval", "10s", "between VPA updater passes"),
        ("checkpoint-interval", "60s", "between writes of VerticalPodAutoscalerCheckpoints"),
        ("metrics-interval", "5s", "between reads of the pods' usage (metrics.k8s.io)"),
    ):
        parser.add_argument(f"--vpa-{flag}", type=duration, default=duration(default), help=what)
    parser.add_argument("--log-level", default="INFO")
    return parser


async def run(args: argparse.Namespace) -> None:
    specs = select_controllers(args.controllers)
    config = load_config(args.kubeconfig)
    registry = CollectorRegistry()
    if args.metrics_port:
        try:
            start_http_server(args.metrics_port, addr=args.metrics_host, registry=registry)
        except OSError as exc:  # e.g. a second cluster on this host holds the port
            log.warning("cannot serve /metrics on port %d (%s)", args.metrics_port, exc)
    options = {
        "metrics_registry": registry,
        "node_monitor_grace_period": args.node_monitor_grace_period,
        "node_monitor_period": args.node_monitor_period,
        "resize_replace_after": args.resize_replace_after,
        "terminated_pod_gc_threshold": args.terminated_pod_gc_threshold,
        "local_path_root": args.default_local_storage_path,
        **rescue_options(args),
        "vpa_variant": args.vpa_variant,
        "vpa_recommender_interval": args.vpa_recommender_interval,
        "vpa_updater_interval": args.vpa_updater_interval,
        "vpa_checkpoint_interval": args.vpa_checkpoint_interval,
        "vpa_metrics_interval": args.vpa_metrics_interval,
    }
    async with Client(
        config, user_agent="inplace-controller-manager", connection_limit=128
    ) as client:
        credentials = (
            ServiceAccountCredentials(client) if args.use_service_account_credentials else None
        )
        manager = ControllerManager(client, specs, options=options, credentials=credentials)
        try:
            await run_until_signal(manager.run())
        finally:
            if credentials is not None:
                await credentials.close()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    try:
        run_event_loop(run(args))
    except (ConfigError, ControllerSelectionError) as exc:
        print(f"inplace controller-manager: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
