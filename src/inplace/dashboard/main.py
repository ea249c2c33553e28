"""``inplace dashboard``: the live dashboard, against any cluster the kubeconfig reaches.

    inplace dashboard [--kubeconfig FILE] [--port 0] [--token-file FILE]

It listens on 127.0.0.1 only and prints its URL with a token (``?token=…``), as Jupyter does;
without the token every page answers 401. The token is read from ``--token-file`` (``inplace
up`` writes one per run) or made up at start. The dashboard acts with the kubeconfig's
identity: what its resize button may do is what that user may do.
"""

from __future__ import annotations

import argparse
import logging
import secrets
import sys
from pathlib import Path

from inplace.client import Client, ConfigError, load_config
from inplace.loop import run as run_event_loop
from inplace.loop import stop_on_signals

from .server import DashboardServer
from .state import DashboardState

__all__ = ["add_arguments", "main", "run"]

log = logging.getLogger("inplace.dashboard")


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: $KUBECONFIG)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: pick one)")
    parser.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="file holding the access token (default: make one up and print it)",
    )
    parser.add_argument(
        "--window", type=float, default=3600.0, help="seconds of history kept (default: 1 hour)"
    )
    parser.add_argument(
        "--metrics-interval",
        type=float,
        default=2.5,
        help="seconds between reads of metrics.k8s.io (default: 2.5, half the node agents' "
        "sampling period, so no sample is missed)",
    )
    parser.add_argument("--log-level", default="INFO")
    return parser


def _token(path: Path | None) -> str:
    if path is None:
        return secrets.token_urlsafe(24)
    token = path.read_text().strip()
    if not token:
        raise ConfigError(f"the token file {path} is empty")
    return token


async def run(args: argparse.Namespace) -> None:
    config = load_config(args.kubeconfig)
    token = _token(args.token_file)
    async with Client(config, user_agent="inplace-dashboard", connection_limit=32) as client:
        state = DashboardState(client, window=args.window, metrics_interval=args.metrics_interval)
        server = DashboardServer(state, client, token=token, port=args.port)
        state.start()
        try:
            await server.start()
            print(f"inplace dashboard: {server.url}", flush=True)
            stop = stop_on_signals()
            await stop.wait()
        finally:
            await server.stop()
            await state.stop()


def main(argv: list[str] | None = None) -> int:
    parser = add_arguments(
        argparse.ArgumentParser(
            prog="inplace dashboard", description="Serve the live dashboard on 127.0.0.1."
        )
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    try:
        run_event_loop(run(args))
    except (ConfigError, OSError) as exc:
        print(f"inplace dashboard: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
