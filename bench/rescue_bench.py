"""Rescue benchmark: a cluster sized for peaks, a burst of pending pods, with and without rescue.

The replay (:mod:`inplace.controllers.rescue.simulation`) runs the controller's own
decisions on a simulated clock: ``--nodes`` nodes filled to 92% of their requests by
services sized for their peak and running off-peak (70% of them allow shrinking), then
``--burst`` jobs of 1 CPU / 2 GiB arriving over five minutes, each running 30 minutes once
placed. The baseline, in the same run, is the same cluster without the rescuer: jobs wait
for room that other jobs free.

Printed per run: jobs placed, their wait (median, p95, max) and the jobs never placed;
services shrunk, the shrink and growth resizes; the samples at which a shrunk service used
more memory than it was left with; and when every shrunk service was back at its size.

``--live`` then measures the same on a real `inplace up --simulated-nodes` (API server,
scheduler, controller manager, simulated node agents; usage from each pod's
``inplace.dev/usage-profile``): ``--live-nodes`` nodes of 4 CPU / 16Gi, three services of
1200m / 4Gi on each using a fifth of it, then ``--live-jobs`` jobs of 1 CPU / 2Gi created at
once; wall-clock waits from each job's creation to its binding, and the time until every
donor is back at its size once the jobs are deleted. The baseline, in the same run, is the
same cluster whose services do not allow shrinking.

    python bench/rescue_bench.py [--nodes 20] [--burst 300] [--hours 3] [--seed 1]
                                 [--live] [--live-nodes 10] [--live-jobs 20] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from inplace.client import PODMETRICS, PODS, Client, load_config
from inplace.controllers.rescue.simulation import Result, Scenario, simulate

ORIGINAL = "inplace.dev/original-resources"


def _seconds(value: float) -> str:
    if value != value:  # NaN: nothing placed
        return "-"
    if value < 120:
        return f"{value:.1f}s"
    return f"{value / 60:.1f}min"


def report(result: Result, elapsed: float) -> list[str]:
    name = "with the rescuer" if result.rescuer else "without (baseline)"
    lines = [
        f"{name}:",
        f"  jobs placed           {result.placed}/{result.jobs}"
        f" (never placed: {result.jobs - result.placed})",
        f"  wait to be placed     median {_seconds(result.wait(0.5))}, "
        f"p95 {_seconds(result.wait(0.95))}, max {_seconds(result.wait(1.0))}",
    ]
    if result.rescuer:
        restored = (
            f"all back at their size at t={_seconds(result.restored_at)}"
            if result.restored_at is not None
            else f"{result.still_shrunk} still shrunk at the end"
        )
        lines += [
            f"  rescues               {result.rescues} (each a pending pod placed by shrinking)",
            f"  services shrunk       {len(result.shrunk_pods)}/{result.services} "
            f"({result.shrinks} shrink resizes, {result.growths} growth resizes)",
            f"  memory above request  {result.over_request} samples of shrunk services",
            f"  grown back            {restored}",
        ]
    lines.append(f"  (replayed in {elapsed:.1f}s)")
    return lines


# -- live: a real inplace up on simulated nodes -------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _pod(name: str, cpu: str, memory: str, usage: dict[str, str], shrinkable: bool) -> Any:
    annotations = {"inplace.dev/usage-profile": json.dumps(usage)}
    if shrinkable:
        annotations["inplace.dev/shrinkable"] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "infinity"],
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ]
        },
    }


async def _pods(client: Client) -> list[Any]:
    return list((await client.list(PODS, namespace="default"))["items"])


async def _until(check: Any, timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(interval)
    return False


async def _live_run(kubeconfig: Path, nodes: int, jobs: int, shrinkable: bool) -> list[str]:
    async with Client(load_config(str(kubeconfig))) as client:
        services = [f"svc-{i}" for i in range(3 * nodes)]
        for name in services:
            usage = {"cpu": "240m", "memory": "800Mi"}
            await client.create(PODS, _pod(name, "1200m", "4Gi", usage, shrinkable))

        async def services_known() -> bool:
            running = [
                p for p in await _pods(client) if (p.get("status") or {}).get("phase") == "Running"
            ]
            metrics = (await client.list(PODMETRICS, namespace="default"))["items"]
            return len(running) == len(services) and len(metrics) >= len(services)

        if not await _until(services_known, 120, 0.5):
            raise SystemExit("the services did not start")
        await asyncio.sleep(15)  # a usage history the rescuer trusts (10 s, two samples)
        created: dict[str, float] = {}
        for i in range(jobs):
            name = f"job-{i}"
            await client.create(PODS, _pod(name, "1", "2Gi", {"cpu": "900m"}, False))
            created[name] = time.monotonic()
        placed: dict[str, float] = {}

        async def all_placed() -> bool:
            for pod in await _pods(client):
                name = pod["metadata"]["name"]
                if name in created and name not in placed and pod["spec"].get("nodeName"):
                    placed[name] = time.monotonic() - created[name]
            return len(placed) == jobs

        await _until(all_placed, 60)
        shrunk = sum(
            1 for p in await _pods(client) if ORIGINAL in (p["metadata"].get("annotations") or {})
        )
        for name in created:
            await client.delete(PODS, name, namespace="default", grace_period_seconds=0)
        started = time.monotonic()

        async def all_back() -> bool:
            for pod in await _pods(client):
                if not pod["metadata"]["name"].startswith("svc-"):
                    continue
                statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
                held = ((statuses[0].get("resources") or {}).get("requests") or {}).get("cpu")
                if ORIGINAL in (pod["metadata"].get("annotations") or {}) or held != "1200m":
                    return False
            return True

        back = await _until(all_back, 120) if shrunk else True
        back_after = time.monotonic() - started
        if not back:
            for pod in await _pods(client):
                conditions = [
                    (c.get("type"), c.get("reason"))
                    for c in (pod.get("status") or {}).get("conditions") or ()
                    if str(c.get("type", "")).startswith("PodResize")
                ]
                print(
                    "  not back:",
                    pod["metadata"]["name"],
                    pod["spec"]["containers"][0]["resources"]["requests"],
                    ((pod.get("status") or {}).get("containerStatuses") or [{}])[0].get(
                        "resources"
                    ),
                    conditions,
                    (pod["metadata"].get("annotations") or {}).get(ORIGINAL),
                )
        waits = sorted(placed.values())
        name = "services shrinkable" if shrinkable else "services not shrinkable (baseline)"
        lines = [
            f"{name}:",
            f"  jobs placed           {len(placed)}/{jobs} within 60 s",
        ]
        if waits:
            lines.append(
                f"  wait to be placed     median {statistics.median(waits):.1f}s, "
                f"p95 {waits[min(len(waits) - 1, int(0.95 * len(waits)))]:.1f}s, "
                f"max {waits[-1]:.1f}s"
            )
        if shrinkable:
            lines.append(f"  services shrunk       {shrunk}/{len(services)}")
            lines.append(
                f"  grown back            {'all' if back else 'NOT all'} back at their size "
                f"{back_after:.1f}s after the jobs were deleted"
            )
        return lines


def live(nodes: int, jobs: int) -> None:
    print(
        f"live: inplace up --simulated-nodes {nodes} (4 CPU / 16Gi each), {3 * nodes} services "
        f"of 1200m / 4Gi using 240m / 800Mi, then {jobs} jobs of 1 CPU / 2Gi at once"
    )
    for shrinkable in (False, True):
        workdir = Path(tempfile.mkdtemp(prefix="inplace-rescue-bench-"))
        log = open(workdir / "up.log", "wb")  # noqa: SIM115 - the child writes to it
        up = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inplace",
                "up",
                "--data-dir",
                str(workdir / "data"),
                "--port",
                str(_free_port()),
                "--nodes",
                "0",
                "--simulated-nodes",
                str(nodes),
                "--no-dashboard",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not re.search(r"ready in", (workdir / "up.log").read_text()):
                if up.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit((workdir / "up.log").read_text())
                time.sleep(0.2)
            kubeconfig = workdir / "data" / "kubeconfig.yaml"
            started = time.perf_counter()
            lines = asyncio.run(_live_run(kubeconfig, nodes, jobs, shrinkable))
            print("\n".join([*lines, f"  (measured in {time.perf_counter() - started:.1f}s)"]))
        finally:
            up.send_signal(signal.SIGTERM)
            try:
                up.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
                up.wait()
            log.close()
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--burst", type=int, default=300)
    parser.add_argument("--hours", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--live", action="store_true", help="also measure a real inplace up")
    parser.add_argument("--live-nodes", type=int, default=10)
    parser.add_argument("--live-jobs", type=int, default=20)
    parser.add_argument("--no-replay", action="store_true", help="only the live part")
    parser.add_argument("--json", metavar="FILE", help="also write the replay's figures to FILE")
    args = parser.parse_args()
    scenario = Scenario(
        nodes=args.nodes, burst=args.burst, duration=args.hours * 3600.0, seed=args.seed
    )
    print(
        f"{scenario.nodes} nodes of {scenario.node_cpu // 1000} CPU / "
        f"{scenario.node_memory // 1024**3} GiB, services requesting {scenario.fill:.0%} "
        f"({scenario.shrinkable:.0%} shrinkable), {scenario.burst} jobs of "
        f"{scenario.job_cpu}m / {scenario.job_memory // 1024**3} GiB for "
        f"{scenario.job_seconds / 60:.0f} min arriving at t={scenario.burst_at / 60:.0f} min "
        f"over {scenario.burst_over / 60:.0f} min; {args.hours:g} h simulated"
    )
    figures: dict[str, float] = {}
    for rescuer in () if args.no_replay else (False, True):
        started = time.perf_counter()
        result = simulate(scenario, rescuer=rescuer)
        print("\n".join(report(result, time.perf_counter() - started)))
        side = "rescuer" if rescuer else "baseline"
        figures[f"{side}_placed"] = result.placed / max(result.jobs, 1)
        figures[f"{side}_wait_p50"] = result.wait(0.5)
        figures[f"{side}_replay_s"] = time.perf_counter() - started
    if args.json:
        Path(args.json).write_text(json.dumps(figures))
    if args.live:
        live(args.live_nodes, args.live_jobs)


if __name__ == "__main__":
    main()
