"""``scripts/upstream build | up DIR [--nodes N --node-cpu C --node-memory M --simulated N
--kubelet-nodes N --release v1.37|v1.33 --operator] | down DIR | manifest``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .build import RELEASES, BuildError, build
from .chart import ChartError, write_manifest
from .cluster import UpError, down, up


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/upstream", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build the upstream components (cached)")
    start = commands.add_parser("up", help="start a control plane with inplace nodes in DIR")
    start.add_argument("directory", type=Path)
    start.add_argument("--nodes", type=int, default=1)
    start.add_argument("--node-cpu", default="2")
    start.add_argument("--node-memory", default="2Gi")
    start.add_argument(
        "--simulated", type=int, default=0, metavar="N", help="also N simulated nodes"
    )
    start.add_argument(
        "--kubelet-nodes",
        type=int,
        default=0,
        metavar="N",
        help="also N real nodes: a kubelet with its own containerd and runc each",
    )
    start.add_argument(
        "--release",
        default="",
        choices=["", *RELEASES],
        help="another release's control plane and kubelet than the pinned one",
    )
    start.add_argument(
        "--operator",
        action="store_true",
        help="also install inplace's operator with its Helm chart (deploy/helm/inplace)",
    )
    stop = commands.add_parser("down", help="delete the workloads and stop the test bed in DIR")
    stop.add_argument("directory", type=Path)
    commands.add_parser(
        "manifest", help="render deploy/manifests/inplace.yaml from the chart (default values)"
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            build(releases=RELEASES)
        elif args.command == "manifest":
            print(f"upstream: wrote {write_manifest(build().path('helm'))}")
        elif args.command == "up":
            started = time.monotonic()
            plane = up(
                args.directory,
                nodes=args.nodes,
                node_cpu=args.node_cpu,
                node_memory=args.node_memory,
                simulated=args.simulated,
                kubelet_nodes=args.kubelet_nodes,
                operator=args.operator,
                release=args.release,
            )
            if plane.operator:
                print(
                    f"upstream: inplace operator installed (helm release "
                    f"{plane.operator['release']} in {plane.operator['namespace']}), webhook "
                    f"at {plane.operator['webhook_url']}"
                )
            print(
                f"upstream: {plane.version} control plane on {plane.server} with "
                f"{len(plane.nodes)} inplace node(s), {len(plane.kubelet_nodes)} kubelet "
                f"node(s) and {len(plane.simulated)} simulated "
                f"Ready in {time.monotonic() - started:.1f} s\n"
                f"  export KUBECONFIG={plane.kubeconfig}\n"
                f"  logs: {plane.directory / 'logs'}\n"
                f"  stop: scripts/upstream down {plane.directory}"
            )
        else:
            if not (args.directory / "state.json").exists():
                print(f"upstream: no running test bed in {args.directory}", file=sys.stderr)
                return 1
            leftovers = down(args.directory)
            if leftovers:
                print("upstream: left behind:\n  " + "\n  ".join(leftovers), file=sys.stderr)
                return 1
            print(f"upstream: stopped the test bed in {args.directory.resolve()}")
    except (BuildError, ChartError, UpError) as exc:
        print(f"upstream: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
