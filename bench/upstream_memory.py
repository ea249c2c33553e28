"""Memory side by side: the whole control plane of ``inplace up`` and of upstream (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler), idle and with running pods.

Both clusters have one node run by the same agent (``inplace node``, real processes and
cgroups): under ``inplace up --nodes 1 --no-dashboard`` (its API server, scheduler,
controller manager and the supervisor ``inplace up`` itself), and under the upstream test bed
with its whole control plane. For each: RSS and, where the kernel tells it (psutil's
``memory_full_info``, as root), PSS (shared pages split among the processes sharing them, so
the sum over processes is not inflated by a shared interpreter) of every process, once the
cluster has been idle ``--settle`` seconds, then again ``--settle`` seconds after ``--pods``
pods (``sleep``, 10m/16Mi, placed by each cluster's scheduler) are all running. The node
agent and its per-container supervisors (shims) are reported apart from the control plane;
the pods' own processes are not counted.

    python bench/upstream_memory.py [--pods 100] [--settle 20] [--sides inplace,upstream]
                                    [--json FILE]

``--sides`` runs one side alone (``bench/run.py`` takes inplace's memory figures from
``--sides inplace`` and its upstream column from ``--sides upstream``); ``--json`` writes each
side's figures (``figures``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from inplace.client import PODS, Client, load_kubeconfig
from resize_bench import inplace_up
from upstream_common import Row, machine, session, side_by_side, testbed, wait_service_account

MiB = 2**20


def sleeper(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"sleeper-{i:03d}", "namespace": "default"},
        "spec": {
            "terminationGracePeriodSeconds": 2,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "1d"],
                    "resources": {
                        "requests": {"cpu": "10m", "memory": "16Mi"},
                        "limits": {"cpu": "100m", "memory": "32Mi"},
                    },
                }
            ],
        },
    }


def is_shim(process: psutil.Process) -> bool:
    """The node's shim program (``python -I -S -c <bootstrap> MODE ...``, or its native half
    ``inplace-shim MODE ...`` once a shim has exec'd it): a container's supervisor, its PID 1
    (forked from it), or a spare waiting for a job."""
    argv = process.cmdline()
    python = len(argv) > 3 and argv[1:4] == ["-I", "-S", "-c"]
    return python or (bool(argv) and os.path.basename(argv[0]) == "inplace-shim")


def is_waiting_spare(process: psutil.Process) -> bool:
    """A spare shim given no job yet, or the shim zygote: the node's, not a container's (a
    job renames the process that runs it)."""
    argv = process.cmdline()
    return (
        len(argv) > 5
        and argv[5] in ("spare", "zygote")
        and not process.name().startswith("inplace-")
    )


def measure(components: dict[str, int], agent: int) -> dict[str, dict[str, float]]:
    """RSS and PSS (MiB) of each control-plane process, of the node agent and of its shims
    (summed); the shims' workloads are left out."""

    def one(process: psutil.Process) -> dict[str, float]:
        try:
            full = process.memory_full_info()
            return {"rss": full.rss / MiB, "pss": getattr(full, "pss", float("nan")) / MiB}
        except psutil.AccessDenied:
            return {"rss": process.memory_info().rss / MiB, "pss": float("nan")}

    figures = {name: one(psutil.Process(pid)) for name, pid in components.items()}
    root = psutil.Process(agent)
    figures["node agent"] = one(root)
    programs = [p for p in root.children(recursive=True) if is_shim(p)]
    spares = [p for p in programs if is_waiting_spare(p)]
    working = [p for p in programs if p not in spares]
    # A container's processes: its supervisor (the agent's child, or the zygote's) and the
    # supervisor's children (the container's PID 1); counted per supervisor.
    node_level = {agent, *(p.pid for p in spares)}
    supervisors = [p for p in working if p.ppid() in node_level]
    figures["shims"] = _summed(working, one, len(supervisors))
    figures["spare shims"] = _summed(spares, one, len(spares))  # and the zygote
    return figures


def _summed(processes: list[psutil.Process], one: Any, count: int) -> dict[str, float]:
    total = {"rss": 0.0, "pss": 0.0, "count": float(count)}
    for process in processes:
        figures = one(process)
        total["rss"] += figures["rss"]
        total["pss"] += figures["pss"]
    return total


def show(name: str, when: str, figures: dict[str, dict[str, float]]) -> None:
    print(f"  {name}, {when}:", flush=True)
    for proc, f in figures.items():
        unit = "containers" if proc == "shims" else "processes"
        count = f" ({int(f['count'])} {unit})" if "count" in f else ""
        print(f"    {proc:<28} RSS {f['rss']:7.1f} MiB   PSS {f['pss']:7.1f} MiB{count}")
    plane = control_plane(figures)
    total = "control plane, total"
    print(f"    {total:<28} RSS {plane['rss']:7.1f} MiB   PSS {plane['pss']:7.1f} MiB")


def control_plane(figures: dict[str, dict[str, float]]) -> dict[str, float]:
    parts = [f for proc, f in figures.items() if proc not in ("node agent", "shims", "spare shims")]
    return {key: sum(f[key] for f in parts) for key in ("rss", "pss")}


def figures(side: dict[str, dict[str, dict[str, float]]]) -> dict[str, float]:
    """One side's figures for ``bench/run.py`` (MiB; a shim's PSS is the mean over the
    running containers of their supervisor and its PID 1 together; the node's spares waiting
    for a job are apart)."""
    shims = side["pods"]["shims"]
    return {
        "control_plane_pss_idle": control_plane(side["idle"])["pss"],
        "control_plane_rss_idle": control_plane(side["idle"])["rss"],
        "control_plane_pss_pods": control_plane(side["pods"])["pss"],
        "node_agent_pss_idle": side["idle"]["node agent"]["pss"],
        "shim_pss": shims["pss"] / shims["count"] if shims["count"] else float("nan"),
        "shim_rss": shims["rss"] / shims["count"] if shims["count"] else float("nan"),
        "shims": shims["count"],
        "spare_shims_pss": side["pods"]["spare shims"]["pss"],
    }


def is_running(pod: dict[str, Any]) -> bool:
    statuses = pod.get("status", {}).get("containerStatuses") or []
    return bool(statuses) and all("running" in s.get("state", {}) for s in statuses)


async def fill(kubeconfig: Any, pods: int, timeout: float = 300) -> float:
    """Create the sleepers, wait until every one is running; returns the seconds it took."""
    started = time.monotonic()
    async with Client(load_kubeconfig(str(kubeconfig))) as client:
        for i in range(pods):
            await client.create(PODS, sleeper(i), namespace="default")
        while time.monotonic() - started < timeout:
            listing = await client.list(PODS, namespace="default")
            running = [p for p in listing["items"] if is_running(p)]
            if len(running) >= pods:
                return time.monotonic() - started
            await asyncio.sleep(1.0)
    raise TimeoutError(f"{pods} pods not running after {timeout:.0f} s")


def both_phases(
    name: str, kubeconfig: Any, components: dict[str, int], agent: int, args: argparse.Namespace
) -> dict[str, dict[str, dict[str, float]]]:
    time.sleep(args.settle)
    idle = measure(components, agent)
    show(name, "idle", idle)
    took = asyncio.run(fill(kubeconfig, args.pods))
    print(f"  {args.pods} pods running after {took:.1f} s; machine: {machine()}", flush=True)
    time.sleep(args.settle)
    loaded = measure(components, agent)
    show(name, f"{args.pods} pods running", loaded)
    return {"idle": idle, "pods": loaded}


def inplace_side(args: argparse.Namespace) -> dict[str, dict[str, dict[str, float]]]:
    with inplace_up("--no-dashboard", node_memory="4Gi") as (data, up):
        components = {"inplace up (supervisor)": up.pid}
        agent = 0
        for child in psutil.Process(up.pid).children():
            argv = child.cmdline()
            role = argv[3] if len(argv) > 3 and argv[1:3] == ["-m", "inplace"] else argv[-1]
            if role == "node":
                agent = child.pid
            else:
                components[f"inplace {role}"] = child.pid
        return both_phases("inplace", data / "kubeconfig.yaml", components, agent, args)


def upstream_side(args: argparse.Namespace) -> dict[str, dict[str, dict[str, float]]]:
    with testbed(nodes=1, node_cpu="2", node_memory="4Gi") as plane:

        async def ready() -> None:
            async with session(plane.kubeconfig) as http:
                await wait_service_account(http)

        asyncio.run(ready())
        names = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
        components = {name: plane.pids[name] for name in names}
        return both_phases("upstream", plane.kubeconfig, components, plane.pids["node-1"], args)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pods", type=int, default=100)
    parser.add_argument("--settle", type=float, default=20.0, help="seconds before measuring")
    parser.add_argument("--sides", default="inplace,upstream", help="inplace, upstream or both")
    parser.add_argument("--json", metavar="FILE", help="also write each side's figures to FILE")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("upstream_memory needs root (real cgroups, and PSS)", file=sys.stderr)
        return 2
    print(f"machine: {machine()}; {args.pods} pods", flush=True)
    results = {}
    for name, side in (("inplace", inplace_side), ("upstream", upstream_side)):
        if name not in args.sides.split(","):
            continue
        print(f"\n== {name}", flush=True)
        results[name] = side(args)
    if args.json:
        Path(args.json).write_text(json.dumps({n: figures(r) for n, r in results.items()}))
    if len(results) < 2:
        return 0
    ours, theirs = results["inplace"], results["upstream"]
    rows = []
    for phase, label in (("idle", "idle"), ("pods", f"{args.pods} pods")):
        for key in ("rss", "pss"):
            rows.append(
                Row(
                    f"control plane {key.upper()}, {label}",
                    control_plane(ours[phase])[key],
                    control_plane(theirs[phase])[key],
                    "MiB",
                )
            )
    for phase, label in (("idle", "idle"), ("pods", f"{args.pods} pods")):
        rows.append(
            Row(
                f"node agent RSS, {label}",
                ours[phase]["node agent"]["rss"],
                theirs[phase]["node agent"]["rss"],
                "MiB",
            )
        )
    rows.append(
        Row(
            f"shims PSS, {args.pods} pods",
            ours["pods"]["shims"]["pss"],
            theirs["pods"]["shims"]["pss"],
            "MiB",
        )
    )
    side_by_side("Memory: inplace up vs the upstream control plane (one inplace node each)", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
