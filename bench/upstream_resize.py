"""In-place resize side by side: inplace's node agent under inplace's API server and under
kube-apiserver (the test bed), and the real kubelet under kube-apiserver; the measurements of
``bench/resize_bench.py``.

The same agent (``inplace node``, real cgroup v1 limits, approving resizes on its own ledger
as upstream's kubelet does) runs one node in two clusters, in turn, and then the kubelet:

* **inplace**: ``inplace up --nodes 1 --no-scheduler`` (its API server, controller manager and
  the agent; no arbiter), as ``resize_bench.py --no-scheduler`` runs it;
* **upstream**: the test bed with one node and the whole control plane (etcd, kube-apiserver,
  kube-controller-manager, kube-scheduler; the agent with ``--admit-without-scheduler``);
* **kubelet**: the same test bed with one kubelet node (the kubelet, containerd and runc of
  ``scripts/upstream up --kubelet-nodes``) instead of the agent: what a real cluster does.

On each, resize_bench.py's ``bench()``: ``--pods`` running pods (bound to node-1 by name),
``--resizes`` resizes through ``pods/resize`` one after another, each timed from the PATCH
returning to the new ``memory.limit_in_bytes`` in the container's cgroup and to a watch
delivering ``containerStatuses[].resources`` with the new size; then ``--restarts`` times the
restart path (delete, create, running) as the baseline.

    python bench/upstream_resize.py [--pods 50] [--resizes 200] [--restarts 10]
                                    [--sides inplace,upstream,kubelet] [--json FILE]

``--sides upstream`` runs the test bed's side alone (``bench/run.py`` takes its upstream column
from it); ``--json`` writes each side's figures (``resize_bench.figures``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from resize_bench import bench, figures, inplace_up
from upstream_common import (
    WORKLOAD_IMAGE,
    Row,
    container_pid,
    machine,
    pct,
    session,
    side_by_side,
    testbed,
    wait_service_account,
)


def inplace_side(args: argparse.Namespace) -> dict[str, Any]:
    with inplace_up("--no-scheduler", "--no-dashboard") as (data, _):
        return asyncio.run(bench(data / "kubeconfig.yaml", args.pods, args.resizes, args.restarts))


def upstream_side(args: argparse.Namespace) -> dict[str, Any]:
    with testbed(nodes=1, node_cpu="2", node_memory="4Gi") as plane:
        print(f"  {plane.version} control plane, node-1 is inplace's agent", flush=True)

        async def go() -> dict[str, Any]:
            async with session(plane.kubeconfig) as http:
                # kube-controller-manager makes it; pods are refused until it exists
                await wait_service_account(http)
            return await bench(plane.kubeconfig, args.pods, args.resizes, args.restarts)

        return asyncio.run(go())


def kubelet_side(args: argparse.Namespace) -> dict[str, Any]:
    with testbed(nodes=0, kubelet_nodes=1, node_cpu="2", node_memory="4Gi") as plane:
        print(f"  {plane.version} control plane, kubelet-1 is the kubelet", flush=True)

        async def go() -> dict[str, Any]:
            async with session(plane.kubeconfig) as http:
                await wait_service_account(http)
            return await bench(
                plane.kubeconfig,
                args.pods,
                args.resizes,
                args.restarts,
                node="kubelet-1",
                image=WORKLOAD_IMAGE,
                pid_of=lambda pod: container_pid(pod, "main"),
            )

        return asyncio.run(go())


def summary(name: str, result: dict[str, Any]) -> None:
    cg, st, seen, rs = result["cgroup"], result["status"], result["seen"], result["restart"]
    print(
        f"  {name}: {len(cg)} resizes, to the cgroup p50 {pct(cg, 0.5):.1f} / p99 "
        f"{pct(cg, 0.99):.1f} ms, to the status p50 {pct(st, 0.5):.1f} / p99 "
        f"{pct(st, 0.99):.1f} ms; a watcher sees the resized spec p50 {pct(seen, 0.5):.1f} / "
        f"p99 {pct(seen, 0.99):.1f} ms",
        flush=True,
    )
    if rs:
        print(
            f"  {name}: restart path, {len(rs)} pods, p50 {pct(rs, 0.5):.0f} / p99 "
            f"{pct(rs, 0.99):.0f} ms; machine now: {machine()}",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pods", type=int, default=50)
    parser.add_argument("--resizes", type=int, default=200)
    parser.add_argument("--restarts", type=int, default=10)
    parser.add_argument(
        "--sides", default="inplace,upstream,kubelet", help="any of inplace, upstream, kubelet"
    )
    parser.add_argument("--json", metavar="FILE", help="also write each side's figures to FILE")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("upstream_resize needs root (real cgroup limits)", file=sys.stderr)
        return 2
    print(
        f"machine: {machine()}; {args.pods} running pods, {args.resizes} resizes, "
        f"{args.restarts} restarts",
        flush=True,
    )
    results: dict[str, dict[str, Any]] = {}
    sides = (("inplace", inplace_side), ("upstream", upstream_side), ("kubelet", kubelet_side))
    for name, side in sides:
        if name not in args.sides.split(","):
            continue
        print(f"\n== {name}", flush=True)
        results[name] = side(args)
        summary(name, results[name])
    if args.json:
        Path(args.json).write_text(json.dumps({n: figures(r) for n, r in results.items()}))
    if "inplace" not in results or "upstream" not in results:
        return 0
    ours, theirs = results["inplace"], results["upstream"]

    def both(label: str, key: str, q: float) -> Row:
        return Row(label, pct(ours[key], q), pct(theirs[key], q), "ms")

    rows = [
        both("PATCH returned → cgroup file, p50", "cgroup", 0.5),
        both("PATCH returned → cgroup file, p99", "cgroup", 0.99),
        both("PATCH returned → status, p50", "status", 0.5),
        both("PATCH returned → status, p99", "status", 0.99),
        both("watch delivers the resized spec, p50", "seen", 0.5),
        both("watch delivers the resized spec, p99", "seen", 0.99),
    ]
    if args.restarts:
        rows += [both("restart path (baseline), p50", "restart", 0.5)]
    side_by_side(
        f"Resize: inplace's agent under inplace's API server vs under kube-apiserver, "
        f"{args.pods} pods, {args.resizes} resizes",
        rows,
    )
    if "kubelet" in results:
        kubelet = results["kubelet"]
        print("\nThe real kubelet (containerd, runc) under kube-apiserver, same resizes:")
        for label, key in (("PATCH → cgroup file", "cgroup"), ("PATCH → status", "status")):
            print(
                f"  {label}: p50 {pct(kubelet[key], 0.5):.1f} / p99 {pct(kubelet[key], 0.99):.1f}"
                f" ms (agent under kube-apiserver p50 {pct(theirs[key], 0.5):.1f}, under inplace "
                f"p50 {pct(ours[key], 0.5):.1f})"
            )
        if args.restarts:
            print(f"  restart path p50: {pct(kubelet['restart'], 0.5):.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
