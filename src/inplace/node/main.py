"""``inplace node``: run one node agent in the foreground.

SIGTERM and SIGINT stop the agent and leave the workloads running (as kubelet does); a later
agent with the same ``--data-dir`` re-adopts them from its checkpoints.

The agent's endpoint (usage, exec, container logs: :mod:`.stats`) takes kubelet's flags:
``--address`` (the IP it listens on, reported as the Node's ``InternalIP``), ``--port``, and
for HTTPS ``--tls-cert-file``, ``--tls-private-key-file`` and ``--client-ca-file`` (all three:
then only client certificates the client CA signed get through the handshake; see
:mod:`.stats` for that trust rule). Without them it is plain HTTP, as ``inplace up`` runs it.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import socket
import ssl
import sys
from pathlib import Path

from inplace import flags
from inplace.client import Client, load_kubeconfig
from inplace.loop import run as run_event_loop
from inplace.loop import stop_on_signals

from .agent import AgentConfig, NodeAgent
from .cgroups import NoneDriver, detect_driver
from .cgroups.base import CgroupDriver
from .stats import endpoint_ssl_context

__all__ = ["build_parser", "main"]


def _address(text: str) -> str:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid IP address {text!r}") from None
    if address.is_unspecified:
        raise argparse.ArgumentTypeError(
            f"{text} is reported as the Node's InternalIP: give the one address to listen on"
        )
    return str(address)


def build_parser(prog: str = "inplace node") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Run a node agent.")
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig of the node identity")
    parser.add_argument("--node-name", default=socket.gethostname(), help="the Node's name")
    parser.add_argument(
        "--cpu",
        type=flags.cpu_millicores,
        default=None,
        help="allocatable CPU, e.g. 2 or 1500m (default: all CPUs)",
    )
    parser.add_argument(
        "--memory",
        type=flags.memory_bytes,
        default=None,
        help="allocatable memory, e.g. 4Gi (default: all memory)",
    )
    parser.add_argument("--pods", type=int, default=110, help="maximum number of pods")
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=True,
        help="checkpoints (and logs, unless --log-root) go here",
    )
    parser.add_argument(
        "--log-root",
        type=Path,
        default=None,
        help="container logs root (kubelet's /var/log/pods layout; default: DATA_DIR/logs/pods)",
    )
    parser.add_argument(
        "--hide-path",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="a directory pods never see (emptied in their mount namespace; repeatable; "
        "the data dir always is)",
    )
    parser.add_argument(
        "--cgroup-root",
        default="inplace",
        help="cgroup subtree of this agent's nodes (default: inplace)",
    )
    parser.add_argument(
        "--cgroup-driver",
        choices=("auto", "none"),
        default="auto",
        help="auto: the strongest available (v1, v2, none); none: no limits",
    )
    parser.add_argument(
        "--address",
        type=_address,
        default="127.0.0.1",
        help="the IP the agent's endpoint (usage, exec, container logs) listens on, "
        "reported as the Node's InternalIP (default: 127.0.0.1)",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="the agent's endpoint port (0: pick one)"
    )
    parser.add_argument(
        "--tls-cert-file",
        type=Path,
        default=None,
        help="serve the endpoint over HTTPS with this certificate (with --tls-private-key-file "
        "and --client-ca-file; default: plain HTTP, callers authenticated by the node's token)",
    )
    parser.add_argument(
        "--tls-private-key-file", type=Path, default=None, help="the key of --tls-cert-file"
    )
    parser.add_argument(
        "--client-ca-file",
        type=Path,
        default=None,
        help="with HTTPS, only client certificates this CA signed are accepted (give it a CA "
        "that signs the API server's kubelet-client certificate and nothing else)",
    )
    parser.add_argument(
        "--admit-without-scheduler",
        action="store_true",
        help="approve resizes on the agent's own ledger (no arbitrating "
        "scheduler), as upstream's kubelet does",
    )
    parser.add_argument(
        "--usage-interval", type=float, default=5.0, help="seconds between usage samples"
    )
    parser.add_argument(
        "--simulated",
        type=int,
        default=0,
        metavar="N",
        help="serve N simulated nodes (no processes) instead of this host",
    )
    parser.add_argument("-v", "--verbose", action="store_true")


def _tls_files(args: argparse.Namespace) -> tuple[Path | None, Path | None, Path | None]:
    """The HTTPS endpoint's files, all three or none (SystemExit naming what is missing)."""
    given = {
        "--tls-cert-file": args.tls_cert_file,
        "--tls-private-key-file": args.tls_private_key_file,
        "--client-ca-file": args.client_ca_file,
    }
    missing = [flag for flag, value in given.items() if value is None]
    if missing and len(missing) < len(given):
        raise SystemExit(
            f"inplace node: an HTTPS endpoint needs {', '.join(given)}; "
            f"missing {', '.join(missing)}"
        )
    if missing:
        return None, None, None
    cert, key, ca = (Path(value).expanduser().resolve() for value in given.values())
    return cert, key, ca


def config_from_args(args: argparse.Namespace) -> AgentConfig:
    import psutil

    cpu = args.cpu if args.cpu is not None else (os.cpu_count() or 1) * 1000
    memory = args.memory if args.memory is not None else int(psutil.virtual_memory().total)
    data_dir: Path = args.data_dir.expanduser().resolve()
    log_root = (args.log_root or data_dir / "logs" / "pods").expanduser().resolve()
    tls_cert, tls_key, client_ca = _tls_files(args)
    return AgentConfig(
        node_name=args.node_name,
        cpu_milli=cpu,
        memory_bytes=memory,
        data_dir=data_dir,
        log_root=log_root,
        max_pods=args.pods,
        admit_without_scheduler=args.admit_without_scheduler,
        http_host=args.address,
        http_port=args.port,
        tls_cert_file=tls_cert,
        tls_private_key_file=tls_key,
        client_ca_file=client_ca,
        usage_every=args.usage_interval,
        hidden_paths=tuple(p.expanduser().resolve() for p in args.hide_path),
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    config = config_from_args(args)
    try:
        endpoint_ssl_context(config)  # unreadable TLS files: one line, before anything starts
    except (OSError, ssl.SSLError, ValueError) as exc:
        print(f"inplace node: cannot serve HTTPS: {exc}", file=sys.stderr)
        return 1
    config.data_dir.mkdir(parents=True, exist_ok=True)
    (config.data_dir / "agent.pid").write_text(f"{os.getpid()}\n")
    log = logging.getLogger("inplace.node")
    if args.simulated:
        return _run_simulated(args, config, log)
    driver: CgroupDriver = (
        NoneDriver() if args.cgroup_driver == "none" else detect_driver(args.cgroup_root)
    )
    log.info(
        "node %s: cpu %dm, memory %d bytes, cgroup driver %s%s",
        config.node_name,
        config.cpu_milli,
        config.memory_bytes,
        driver.name,
        "" if driver.enforces_limits else " (limits are NOT enforced)",
    )

    async def serve() -> None:
        stop = stop_on_signals()
        async with Client(load_kubeconfig(str(args.kubeconfig))) as client:
            await NodeAgent(client, config, driver=driver).run(stop)

    run_event_loop(serve())
    return 0


def _run_simulated(args: argparse.Namespace, config: AgentConfig, log: logging.Logger) -> int:
    from .simulated import run_simulated

    log.info(
        "%d simulated nodes %s-1..%d: cpu %dm, memory %d bytes each",
        args.simulated,
        args.node_name,
        args.simulated,
        config.cpu_milli,
        config.memory_bytes,
    )

    async def serve() -> None:
        stop = stop_on_signals()
        async with Client(load_kubeconfig(str(args.kubeconfig))) as client:
            await run_simulated(client, config, args.simulated, stop, prefix=args.node_name)

    run_event_loop(serve())
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
