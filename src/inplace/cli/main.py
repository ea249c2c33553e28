"""Entry point of the `inplace` command: `up` and the components it starts."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys
from pathlib import Path
from typing import Any

from inplace import __version__
from inplace.cli.paths import DataDir, default_data_dir
from inplace.flags import duration
from inplace.loop import run as run_event_loop
from inplace.loop import stop_on_signals

#: The commands whose flags live with their component: (module, flag builder, help). Only the
#: command being run imports its module, so `inplace up` (the supervisor) and each component
#: process do not carry every other component's imports (tens of MiB each).
_COMPONENT_COMMANDS: dict[str, tuple[str, str, str]] = {
    "replay": (
        "inplace.cli.replay",
        "add_arguments",
        "replay a usage trace through the VPA (simulated)",
    ),
    "rescue": (
        "inplace.cli.rescue",
        "add_arguments",
        "show which pods would be shrunk to place pending pods (--dry-run)",
    ),
    "demo": (
        "inplace.cli.demo",
        "add_arguments",
        "the whole story in one command: a throw-away cluster, five acts",
    ),
    "stress": (
        "inplace.cli.stress",
        "add_arguments",
        "a built-in workload like the classic `stress` (memory and CPU hogs)",
    ),
    "node": ("inplace.node.main", "add_arguments", "run a node agent (started by `up`)"),
    "scheduler": ("inplace.scheduler.main", "build_parser", "run the scheduler (started by `up`)"),
    "controller-manager": (
        "inplace.controllers.main",
        "build_parser",
        "run the workload controllers (started by `up`)",
    ),
    "operator": (
        "inplace.operator.main",
        "build_parser",
        "resize workloads in place on a real cluster (webhook + controllers)",
    ),
    "dashboard": (
        "inplace.dashboard.main",
        "add_arguments",
        "serve the live dashboard (started by `up`)",
    ),
}


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named on the command line (its first word that is not an option)."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `inplace` command line; the flags of a component command are added only for
    ``command`` (the one being run), so parsing imports nothing else."""
    parser = argparse.ArgumentParser(
        prog="inplace", description="Restart-free vertical scaling for Kubernetes pods."
    )
    parser.add_argument("--version", action="version", version=f"inplace {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    up = commands.add_parser("up", help="run a single-host cluster in the foreground")
    up.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="state directory (default: $XDG_DATA_HOME/inplace or ~/.local/share/inplace)",
    )
    up.add_argument("--host", default="127.0.0.1", help="address to serve the API on")
    up.add_argument("--port", type=int, default=6443, help="API server port (0: pick one)")
    up.add_argument("--nodes", type=int, default=1, help="node agents to run (default: 1)")
    up.add_argument(
        "--node-cpu",
        default=None,
        help="allocatable CPU per node (default: the host's CPUs, less a reserve, "
        "split across the nodes)",
    )
    up.add_argument(
        "--node-memory",
        default=None,
        help="allocatable memory per node (default: the host's memory, less a "
        "reserve, split across the nodes)",
    )
    up.add_argument(
        "--simulated-nodes",
        type=int,
        default=0,
        help="simulated nodes (no processes; usage from the inplace.dev/usage-profile annotation)",
    )
    up.add_argument(
        "--node-monitor-grace-period",
        type=duration,
        default=40.0,
        help="how long a node agent may stay silent before its node is marked Unknown and "
        "its pods are evicted after their tolerationSeconds (default: 40s)",
    )
    up.add_argument(
        "--vpa-checkpoint-interval",
        type=duration,
        default=60.0,
        help="how often the VPA recommender saves its history as "
        "VerticalPodAutoscalerCheckpoints (default: 60s)",
    )
    up.add_argument("--no-dashboard", action="store_true", help="do not serve the live dashboard")
    up.add_argument(
        "--dashboard-port", type=int, default=0, help="dashboard port on 127.0.0.1 (0: pick one)"
    )
    up.add_argument(
        "--no-scheduler",
        action="store_true",
        help="run no scheduler: pods need spec.nodeName, and node agents approve resizes "
        "themselves, as upstream's kubelet does",
    )

    up.add_argument(
        "--admission-control-config-file",
        type=Path,
        default=None,
        help="an AdmissionConfiguration (upstream's format) configuring PodSecurity defaults "
        "and exemptions",
    )
    down = commands.add_parser(
        "down",
        help="stop a cluster: delete its workloads, stop `inplace up`, remove its cgroups",
    )
    down.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="the cluster's state directory (default: as for `up`)",
    )
    down.add_argument("--purge", action="store_true", help="also remove the data dir")

    apiserver = commands.add_parser("apiserver", help="run the API server (started by `up`)")
    apiserver.add_argument("--data-dir", type=Path, required=True)
    apiserver.add_argument("--host", default="127.0.0.1")
    apiserver.add_argument("--port", type=int, default=6443)
    apiserver.add_argument("--admission-control-config-file", type=Path, default=None)

    for name, (module, builder, text) in _COMPONENT_COMMANDS.items():
        sub = commands.add_parser(name, help=text)
        if command == name:
            getattr(importlib.import_module(module), builder)(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args_given = sys.argv[1:] if argv is None else argv
    if args_given[:1] == ["stress"]:
        # Straight to it: a workload in a small pod should not pay for even the parser.
        from inplace.cli.stress import main as stress_main

        return stress_main(args_given[1:])
    parser = build_parser(_command_of(args_given))
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "up":
        return _up(args)
    if args.command == "down":
        return _down(args)
    if args.command == "apiserver":
        return _apiserver(args)
    if args.command == "scheduler":
        from inplace.scheduler.main import main as scheduler_main

        return scheduler_main(sys.argv[2:] if argv is None else argv[1:])
    if args.command == "controller-manager":
        from inplace.controllers.main import main as controller_manager_main

        return controller_manager_main(sys.argv[2:] if argv is None else argv[1:])
    if args.command == "operator":
        from inplace.operator.main import main as operator_main

        return operator_main(sys.argv[2:] if argv is None else argv[1:])
    if args.command == "dashboard":
        from inplace.dashboard.main import main as dashboard_main

        return dashboard_main(sys.argv[2:] if argv is None else argv[1:])
    if args.command == "demo":
        from inplace.cli.demo import run as demo

        return demo(args)
    if args.command == "replay":
        from inplace.cli.replay import run as replay

        return replay(args)
    if args.command == "rescue":
        from inplace.cli.rescue import run as rescue

        return rescue(args)
    if args.command == "node":
        from inplace.node.main import run

        return run(args)
    parser.error(f"unknown command {args.command}")
    return 2


def _say(line: str) -> None:
    print(line, flush=True)


def _warn(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _up(args: argparse.Namespace) -> int:
    from inplace.cli.up import UpError, run_up

    data = DataDir((args.data_dir or default_data_dir()).expanduser().resolve())
    try:
        return asyncio.run(
            run_up(
                data,
                host=args.host,
                port=args.port,
                say=_say,
                warn=_warn,
                nodes=args.nodes,
                node_cpu=args.node_cpu,
                node_memory=args.node_memory,
                simulated_nodes=args.simulated_nodes,
                scheduler=not args.no_scheduler,
                admission_config=args.admission_control_config_file,
                node_monitor_grace_period=args.node_monitor_grace_period,
                vpa_checkpoint_interval=args.vpa_checkpoint_interval,
                dashboard=not args.no_dashboard,
                dashboard_port=args.dashboard_port,
            )
        )
    except UpError as exc:
        print(f"inplace up: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _down(args: argparse.Namespace) -> int:
    from inplace.cli.down import DownError, run_down
    from inplace.cli.up import cgroup_root_of

    data = DataDir((args.data_dir or default_data_dir()).expanduser().resolve())
    try:
        return asyncio.run(
            run_down(data, cgroup_root=cgroup_root_of(data), purge=args.purge, say=_say, warn=_warn)
        )
    except DownError as exc:
        print(f"inplace down: {exc}", file=sys.stderr)
        return 1


def _apiserver(args: argparse.Namespace) -> int:
    from inplace.apiserver.auth import TokenFile
    from inplace.apiserver.nodemetrics import NodeMetricsProvider
    from inplace.apiserver.podsecurity import ConfigError, PodSecurityConfig, load_admission_config
    from inplace.apiserver.server import APIServer, APIServerConfig
    from inplace.apiserver.tls import ensure_certificates

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    pod_security = PodSecurityConfig()
    if args.admission_control_config_file is not None:
        try:
            pod_security = load_admission_config(args.admission_control_config_file)
        except ConfigError as exc:
            print(f"inplace apiserver: {exc}", file=sys.stderr)
            return 1
    data = DataDir(args.data_dir.resolve())
    config = APIServerConfig(
        data_dir=data.apiserver,
        host=args.host,
        port=args.port,
        tls=ensure_certificates(data.pki),
        tokens=TokenFile(data.tokens),
        service_account_key=data.pki / "sa.key",
        log_root=data.logs / "pods",
        tune_gc=True,
        pod_security=pod_security,
        protected_host_paths=(str(data.root),),
    )

    async def serve() -> None:
        server = APIServer(config)
        nodes = server.registry.by_kind("", "Node")

        def node_objects() -> list[dict[str, Any]]:
            if server.cache is None or nodes is None:
                return []
            return [entry.value for entry in server.cache.entries(nodes, None)]

        config.extra["metrics_provider"] = NodeMetricsProvider(node_objects)
        await server.start()
        logging.getLogger("inplace.apiserver").info("serving on %s:%d", args.host, server.port)
        stop = stop_on_signals()
        assert server.cache is not None
        stopped = asyncio.create_task(stop.wait())
        failed = asyncio.create_task(server.cache.failed.wait())
        await asyncio.wait({stopped, failed}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        failed.cancel()
        await server.stop()
        if server.cache.failed.is_set():
            raise SystemExit(1)  # the supervisor restarts us with a fresh cache

    run_event_loop(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
