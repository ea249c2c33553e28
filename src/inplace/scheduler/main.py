"""``inplace scheduler``: run the scheduler against any Kubernetes API server.

    inplace scheduler --kubeconfig components/scheduler.kubeconfig [--metrics-port 10259]

``--metrics-port 0`` turns the ``/metrics`` + ``/healthz`` endpoint off. SIGINT/SIGTERM stop
it cleanly.
"""

from __future__ import annotations

import argparse
import logging

from inplace.client import Client, ConfigError, load_config
from inplace.loop import run as run_event_loop
from inplace.loop import run_until_signal

from .metrics import SchedulerMetrics, serve_metrics
from .scheduler import Scheduler, SchedulerConfig

__all__ = ["build_parser", "main"]

log = logging.getLogger("inplace.scheduler")


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(
        prog="inplace scheduler", description="Place pods and arbitrate resizes."
    )
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: $KUBECONFIG)")
    parser.add_argument(
        "--metrics-port", type=int, default=10259, help="/metrics and /healthz port (0: off)"
    )
    parser.add_argument("--metrics-host", default="127.0.0.1")
    parser.add_argument("--scheduler-name", default="default-scheduler")
    parser.add_argument(
        "--percentage-of-nodes-to-score",
        type=int,
        default=0,
        help="0: adaptive, as upstream (50%% minus 1%% per 125 nodes, at least 5%%)",
    )
    parser.add_argument(
        "--scoring", choices=("LeastAllocated", "MostAllocated"), default="LeastAllocated"
    )
    parser.add_argument(
        "--no-scheduled-events",
        action="store_true",
        help="do not post a Scheduled event per pod (FailedScheduling and resize events stay)",
    )
    parser.add_argument("--log-level", default="INFO")
    return parser


async def run(args: argparse.Namespace) -> None:
    config = load_config(args.kubeconfig)
    metrics = SchedulerMetrics()
    settings = SchedulerConfig(
        scheduler_name=args.scheduler_name,
        percentage_of_nodes_to_score=args.percentage_of_nodes_to_score,
        scoring=args.scoring,
        record_events=not args.no_scheduled_events,
    )
    async with Client(config, user_agent="inplace-scheduler", connection_limit=128) as client:
        scheduler = Scheduler(client, config=settings, metrics=metrics)
        runner = None
        if args.metrics_port:
            try:
                runner = await serve_metrics(
                    metrics,
                    host=args.metrics_host,
                    port=args.metrics_port,
                    healthy=lambda: scheduler.synced,
                )
            except OSError as exc:  # e.g. a second cluster on this host holds the port
                log.warning(
                    "cannot serve /metrics on %s:%d (%s); running without it",
                    args.metrics_host,
                    args.metrics_port,
                    exc.strerror or exc,
                )
            else:
                log.info("metrics on http://%s:%d/metrics", args.metrics_host, args.metrics_port)
        try:
            await run_until_signal(scheduler.run())
        finally:
            if runner is not None:
                await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    try:
        run_event_loop(run(args))
    except ConfigError as exc:
        print(f"inplace scheduler: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
