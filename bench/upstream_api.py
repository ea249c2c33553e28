"""API server side by side: inplace's (one Python process on SQLite) and kube-apiserver on etcd.

The load of ``bench/api_bench.py`` (its ``bench()``), run against each server in turn in one
run: ``--pods`` pods created by 50 concurrent clients (creates/s, p50/p99), GETs, LISTs of
every pod (JSON and Table), then ``--watchers`` watches of the pods and PATCHes of their labels
paced at ``--rate`` writes/s for ``--seconds`` (PATCH p50/p99, watch delivery p50/p99: the
moment a watcher reads the event minus the moment its PATCH was sent).

inplace: ``python -m inplace apiserver`` on a fresh data dir, as api_bench.py starts it.
Upstream: the test bed with no node, no controller manager and no scheduler (``nodes=0,
controller_manager=False, scheduler=False``): the pods stay unscheduled on both. With no
controller manager the ``default`` ServiceAccount is created by this script, as
kube-controller-manager would; kube-apiserver then adds its token volume to every pod (its
pods are larger: the LIST sizes are printed).

    python bench/upstream_api.py [--pods 10000] [--watchers 50] [--rate 200] [--seconds 10]
                                 [--sides inplace,upstream] [--json FILE]

``--sides upstream`` runs kube-apiserver's side alone (``bench/run.py`` takes its upstream
column from it); ``--json`` writes each side's figures (``api_bench.figures``).
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
from pathlib import Path
from typing import Any

import api_bench
from inplace.cli.paths import DataDir
from inplace.loop import run as run_event_loop
from scheduler_bench import cpu_seconds
from upstream_common import (
    Row,
    ensure_service_account,
    machine,
    pct,
    session,
    side_by_side,
    testbed,
)


async def inplace_side(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="inplace-bench-") as tmp:
        server, _, _, _ = api_bench.start_apiserver(tmp)
        try:
            async with session(DataDir(Path(tmp)).kubeconfig) as http:
                result = await api_bench.bench(args, http)
            result["cpu"] = {"inplace apiserver": cpu_seconds(server.pid)}
            return result
        finally:
            server.terminate()
            server.wait(30)


async def upstream_side(args: argparse.Namespace) -> dict[str, Any]:
    with testbed(nodes=0, controller_manager=False, scheduler=False) as plane:
        print(f"  kube-apiserver {plane.version} on {plane.server}", flush=True)
        async with session(plane.kubeconfig) as http:
            await ensure_service_account(http)
            result = await api_bench.bench(args, http)
        result["cpu"] = {name: cpu_seconds(plane.pids[name]) for name in ("kube-apiserver", "etcd")}
        return result


async def run(args: argparse.Namespace) -> None:
    print(
        f"machine: {machine()}; {args.pods} pods, {args.watchers} watchers, "
        f"PATCHes at {args.rate}/s for {args.seconds} s",
        flush=True,
    )
    results: dict[str, dict[str, Any]] = {}
    for name, side in (("inplace", inplace_side), ("upstream", upstream_side)):
        if name not in args.sides.split(","):
            continue
        print(f"\n== {name}", flush=True)
        results[name] = await side(args)
        cpu = ", ".join(f"{k} {v:.1f} CPU-s" for k, v in results[name]["cpu"].items())
        print(f"  CPU over the whole run: {cpu}; machine now: {machine()}", flush=True)
    if args.json:
        figures = {name: api_bench.figures(result) for name, result in results.items()}
        Path(args.json).write_text(json.dumps(figures))
    if len(results) < 2:
        return
    ours, theirs = results["inplace"], results["upstream"]

    def both(name: str, key: str, q: float) -> Row:
        return Row(name, pct(ours[key], q), pct(theirs[key], q), "ms")

    side_by_side(
        f"API server: inplace (SQLite) vs kube-apiserver (etcd), {args.pods} pods",
        [
            Row(
                "creates/s, 50 concurrent",
                ours["creates_per_s"],
                theirs["creates_per_s"],
                "/s",
                True,
            ),
            both("create p50", "create", 0.5),
            both("create p99", "create", 0.99),
            both("GET p50", "get", 0.5),
            both("GET p99", "get", 0.99),
            both(f"LIST {args.pods} pods (JSON) p50", "list", 0.5),
            both(f"LIST {args.pods} pods (JSON) p99", "list", 0.99),
            Row(
                "LIST response size",
                ours["list_bytes"] / 2**20,
                theirs["list_bytes"] / 2**20,
                "MiB",
                None,
            ),
            both(f"LIST {args.pods} pods (Table) p50", "table", 0.5),
            both(f"PATCH at {args.rate}/s p50", "patch", 0.5),
            both(f"PATCH at {args.rate}/s p99", "patch", 0.99),
            both(f"watch delivery, {args.watchers} watchers, p50", "delivery", 0.5),
            both(f"watch delivery, {args.watchers} watchers, p99", "delivery", 0.99),
        ],
    )
    for name, r in results.items():
        print(f"  {name}: watch events delivered {r['delivered']} of {r['expected']}")


def main() -> None:
    # The load generator must not pause either: keep full collections out of the run.
    gc.freeze()
    gc.set_threshold(50_000, 50, 1_000_000_000)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--watchers", type=int, default=50)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--sides", default="inplace,upstream", help="inplace, upstream or both")
    parser.add_argument("--json", metavar="FILE", help="also write each side's figures to FILE")
    run_event_loop(run(parser.parse_args()))


if __name__ == "__main__":
    main()
