"""Scheduling side by side: inplace's scheduler and kube-scheduler, placing the same pods on
the same simulated nodes, end to end through each one's API server.

For each side: a fresh API server, ``--nodes`` Node objects created through the API (32 CPU,
256Gi, 110 pods, Ready; nothing runs their pods: a scheduler needs only the objects), then the
scheduler, then ``--pods`` pods (100m/64Mi) created by 50 concurrent clients while a watch
records when each is first seen bound. Figures: pods/s (first create sent → last pod seen
bound) and the per-pod latency p50/p99 (its create sent → it is seen bound), and the CPU
seconds of each process over the placement.

inplace: ``python -m inplace apiserver`` and ``python -m inplace.scheduler``, as
``bench/scheduler_bench.py`` runs them. Upstream: the test bed with no node and no controller
manager (the ``default`` ServiceAccount is created by this script, and the Nodes' not-ready
taint, which kube-apiserver adds to a new Node, lifted, as the controller manager would do),
then kube-scheduler started once the nodes exist, with the client rate limit
upstream's scheduler_perf benchmark gives it (``--kube-api-qps 5000``); ``--kube-api-qps 0``
runs the test bed's kube-scheduler as it starts it, with kube-scheduler's default client
limit (50 QPS, burst 100), which caps it near 25-50 pods/s: use small ``--pods`` with it.

    python bench/upstream_scheduler.py [--nodes 5000] [--pods 10000] [--kube-api-qps 5000]
                                       [--sides inplace,upstream] [--json FILE]

``--sides upstream`` runs kube-scheduler's side alone (``bench/run.py`` takes its upstream
column from it); ``--json`` writes each side's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import api_bench
from inplace.cli.paths import DataDir
from inplace.cli.up import pick_port
from scheduler_bench import (
    API,
    cpu_seconds,
    create_nodes,
    make_node,
    place,
    scheduler_argv,
    stop_processes,
    wait_http,
)
from upstream_common import (
    Row,
    ensure_service_account,
    machine,
    pct,
    session,
    side_by_side,
    testbed,
)

UNTAINT = {"spec": {"taints": None}}
MERGE = "application/merge-patch+json"


async def measure(api: API, pods: int, pids: dict[str, int]) -> dict[str, Any]:
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    client = time.process_time()
    placed = await place(api, pods)
    placed["cpu"] = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
    placed["cpu"]["benchmark client"] = time.process_time() - client
    lat = placed["latency"]
    print(
        f"  placed {pods} pods in {placed['elapsed']:.1f} s = {pods / placed['elapsed']:.0f} "
        f"pods/s (the creates alone took {placed['create_s']:.1f} s); per pod, create → seen "
        f"bound: p50 {pct(lat, 0.5):.0f} ms, p99 {pct(lat, 0.99):.0f} ms",
        flush=True,
    )
    cpu = ", ".join(f"{k} {v:.1f}" for k, v in placed["cpu"].items())
    print(f"  CPU-s over the placement: {cpu}; machine now: {machine()}", flush=True)
    return placed


async def inplace_side(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="inplace-sched-bench-") as tmp:
        data = DataDir(Path(tmp))
        server, _, _, _ = api_bench.start_apiserver(tmp)
        scheduler: subprocess.Popen[bytes] | None = None
        try:
            async with session(data.kubeconfig) as http:
                api = API(http)
                await wait_http(http, "/readyz")
                t = await create_nodes(api, args.nodes)
                print(f"  created {args.nodes} nodes in {t:.1f} s", flush=True)
                metrics_port = pick_port("127.0.0.1", 0)
                scheduler = subprocess.Popen(
                    scheduler_argv(data.component_kubeconfig("scheduler"), metrics_port)
                )
                await wait_http(http, f"http://127.0.0.1:{metrics_port}/healthz")
                pids = {"inplace apiserver": server.pid, "inplace scheduler": scheduler.pid}
                return await measure(api, args.pods, pids)
        finally:
            stop_processes(scheduler, server)


async def upstream_side(args: argparse.Namespace) -> dict[str, Any]:
    # scheduler_perf's client rate (kube-scheduler's default is 50 QPS, burst 100, and each
    # placed pod costs it two writes: the binding and the Scheduled event); 0: the default
    qps = args.kube_api_qps
    rate = [f"--kube-api-qps={qps:g}", f"--kube-api-burst={int(qps)}"] if qps else []
    with testbed(nodes=0, controller_manager=False, extra_flags={"kube-scheduler": rate}) as plane:
        print(f"  kube-apiserver and kube-scheduler {plane.version}", flush=True)
        async with session(plane.kubeconfig) as http:
            api = API(http)
            await ensure_service_account(http)
            t = await create_nodes(api, args.nodes)
            print(f"  created {args.nodes} nodes in {t:.1f} s", flush=True)
            # kube-apiserver taints a new Node not-ready (admission: TaintNodesByCondition);
            # the node lifecycle controller lifts it once the node is Ready, as here
            t = await api.many(
                [
                    ("PATCH", f"/api/v1/nodes/{make_node(i)['metadata']['name']}", UNTAINT, MERGE)
                    for i in range(args.nodes)
                ]
            )
            print(f"  lifted their not-ready taint in {t:.1f} s", flush=True)
            names = ("kube-apiserver", "etcd", "kube-scheduler")
            return await measure(api, args.pods, {name: plane.pids[name] for name in names})


async def run(args: argparse.Namespace) -> None:
    qps = f"client QPS {args.kube_api_qps:g}" if args.kube_api_qps else "its default client QPS"
    print(
        f"machine: {machine()}; {args.nodes} nodes, {args.pods} pods; kube-scheduler with {qps}",
        flush=True,
    )
    results: dict[str, dict[str, Any]] = {}
    for name, side in (("inplace", inplace_side), ("upstream", upstream_side)):
        if name not in args.sides.split(","):
            continue
        print(f"\n== {name}", flush=True)
        results[name] = await side(args)
    if args.json:
        figures = {
            name: {
                "pods_per_s": args.pods / result["elapsed"],
                "creates_per_s": args.pods / result["create_s"],
                "nodes": args.nodes,
                "pods": args.pods,
            }
            for name, result in results.items()
        }
        Path(args.json).write_text(json.dumps(figures))
    if len(results) < 2:
        return
    ours, theirs = results["inplace"], results["upstream"]
    side_by_side(
        f"Scheduling: inplace's scheduler vs kube-scheduler, {args.nodes} nodes, {args.pods} pods",
        [
            Row(
                "pods/s (create → seen bound)",
                args.pods / ours["elapsed"],
                args.pods / theirs["elapsed"],
                "/s",
                True,
            ),
            Row(
                "creates/s while scheduling",
                args.pods / ours["create_s"],
                args.pods / theirs["create_s"],
                "/s",
                True,
            ),
            Row(
                "per-pod latency p50",
                pct(ours["latency"], 0.5),
                pct(theirs["latency"], 0.5),
                "ms",
            ),
            Row(
                "per-pod latency p99",
                pct(ours["latency"], 0.99),
                pct(theirs["latency"], 0.99),
                "ms",
            ),
            Row(
                "scheduler CPU per pod",
                1e3 * ours["cpu"]["inplace scheduler"] / args.pods,
                1e3 * theirs["cpu"]["kube-scheduler"] / args.pods,
                "ms",
            ),
            Row(
                "API server (+ etcd) CPU per pod",
                1e3 * ours["cpu"]["inplace apiserver"] / args.pods,
                1e3 * (theirs["cpu"]["kube-apiserver"] + theirs["cpu"]["etcd"]) / args.pods,
                "ms",
            ),
        ],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument(
        "--kube-api-qps",
        type=float,
        default=5000,
        help="kube-scheduler's client rate limit (default 5000, as upstream's scheduler_perf); "
        "0: the test bed's kube-scheduler with its default (50)",
    )
    parser.add_argument("--sides", default="inplace,upstream", help="inplace, upstream or both")
    parser.add_argument("--json", metavar="FILE", help="also write each side's figures to FILE")
    asyncio.run(run(parser.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
