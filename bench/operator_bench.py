"""``inplace operator`` vs the stock rollout: the same resources-only change of a Deployment,
carried out in place by the operator and rolled out by the real kube-controller-manager, on one
upstream test bed (``upstream/testbed``: kube-apiserver, kube-controller-manager and
kube-scheduler of the release ``upstream/go.mod`` pins, inplace's node agents as nodes).

One bed, two Deployments of ``--replicas`` pods each running a real process (``sleep``):

* **stock**: annotated ``inplace.dev/in-place: "false"``, so the operator's webhook lets the
  change through and kube-controller-manager rolls it out (a new ReplicaSet, every pod
  replaced), as on any cluster;
* **operator**: no annotation; ``inplace operator`` runs as a host process (as
  ``tests/upstream/test_operator.py`` runs it), holds the change in its webhook and resizes the
  same pods through ``pods/resize``.

With ``--kubelet-nodes`` the nodes are real ones (the kubelet, containerd and runc of
``scripts/upstream up --kubelet-nodes``) and the operator is installed as a user installs it,
by its chart from its image (``--operator``): the resize is the kubelet's, the rollout's pods
are started by containerd.

Each round raises requests and limits of both (limits stay twice the requests: Burstable kept)
with ``kubectl set resources``, one Deployment after the other (the order alternates between
rounds), and times each from running kubectl until every one of the Deployment's pods runs at
the new size, in its spec and in ``status.containerStatuses[].resources`` (what its node
applied), and until it is settled (the stock rollout's old pods gone, the operator's hold
released). Counted per change: pods replaced (a pod at the end whose UID was not there at the
start), container restarts, ReplicaSets created.

    python bench/operator_bench.py [--replicas 20] [--rounds 5] [--quick] [--kubelet-nodes]
                                   [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from inplace.api.quantity import parse_quantity
from upstream_common import (
    WORKLOAD_IMAGE,
    ControlPlane,
    machine,
    session,
    testbed,
    wait_service_account,
)

NAMESPACE = "inplace-system"
STOCK, OPERATOR = "stock", "operator"
POLL = 0.2  # seconds between two LISTs of a Deployment's pods while waiting

Resources = dict[str, dict[str, str]]


def size(step: int) -> Resources:
    """The resources of round ``step`` (0: as created): requests and limits both grow, limits
    twice the requests, so the QoS class (Burstable) stays."""
    cpu, memory = 10 + 5 * step, 16 + 4 * step
    return {
        "requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"},
        "limits": {"cpu": f"{2 * cpu}m", "memory": f"{2 * memory}Mi"},
    }


def deployment(name: str, replicas: int, opt_out: bool) -> dict[str, Any]:
    annotations = {"inplace.dev/in-place": "false"} if opt_out else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "terminationGracePeriodSeconds": 2,
                    "containers": [
                        {
                            "name": "main",
                            "image": WORKLOAD_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["sh", "-c", "echo started; exec sleep 36000"],
                            "resources": size(0),
                        }
                    ],
                },
            },
        },
    }


def kubectl(plane: ControlPlane, *args: str, input: str | None = None) -> str:
    out = subprocess.run(
        ["kubectl", f"--kubeconfig={plane.kubeconfig}", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if out.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed: {out.stderr}")
    return out.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def operator(plane: ControlPlane, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``inplace operator`` on the host with the bed's admin kubeconfig, its webhook on
    127.0.0.1 (the bed routes no Service traffic); stopped on exit."""
    port = free_port()
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inplace",
                "operator",
                "--kubeconfig",
                str(plane.kubeconfig),
                "--namespace",
                NAMESPACE,
                "--identity",
                "bench",
                "--webhook-host",
                "127.0.0.1",
                "--webhook-port",
                str(port),
                "--webhook-url",
                f"https://127.0.0.1:{port}/mutate",
                "--health-port",
                str(free_port()),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        subprocess.run(
            [
                "kubectl",
                f"--kubeconfig={plane.kubeconfig}",
                "delete",
                "mutatingwebhookconfiguration",
                "inplace-operator",
                "--ignore-not-found",
            ],
            capture_output=True,
            timeout=60,
        )


async def get(http: aiohttp.ClientSession, path: str) -> dict[str, Any]:
    async with http.get(path) as r:
        if r.status == 404:
            return {}
        r.raise_for_status()
        return dict(await r.json())


async def pods_of(http: aiohttp.ClientSession, app: str) -> list[dict[str, Any]]:
    """The Deployment's pods, those being deleted included."""
    body = await get(http, f"/api/v1/namespaces/default/pods?labelSelector=app%3D{app}")
    return list(body.get("items") or [])


async def replica_sets(http: aiohttp.ClientSession, app: str) -> set[str]:
    body = await get(
        http, f"/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3D{app}"
    )
    return {rs["metadata"]["uid"] for rs in body.get("items") or []}


def same(actual: dict[str, Any], wanted: Resources) -> bool:
    """Requests and limits equal by value (``0.02`` is ``20m``)."""
    for kind in ("requests", "limits"):
        got = actual.get(kind) or {}
        if set(got) != set(wanted[kind]):
            return False
        if any(parse_quantity(got[r]) != parse_quantity(v) for r, v in wanted[kind].items()):
            return False
    return True


def at_size(pods: list[dict[str, Any]], replicas: int, wanted: Resources) -> bool:
    """Exactly ``replicas`` live pods, each running at ``wanted`` in spec and status."""
    live = [p for p in pods if "deletionTimestamp" not in p["metadata"]]
    if len(live) != replicas:
        return False
    for pod in live:
        statuses = pod["status"].get("containerStatuses") or []
        if not statuses:
            return False
        for container, status in zip(pod["spec"]["containers"], statuses, strict=False):
            if "running" not in status.get("state", {}):
                return False
            if not same(container.get("resources") or {}, wanted):
                return False
            if not same(status.get("resources") or {}, wanted):
                return False
    return True


def restarts(pods: list[dict[str, Any]]) -> dict[str, int]:
    return {
        p["metadata"]["uid"]: sum(
            cs.get("restartCount", 0) for cs in p["status"].get("containerStatuses") or []
        )
        for p in pods
    }


async def settled(
    http: aiohttp.ClientSession, app: str, replicas: int, wanted: Resources, timeout: float = 600
) -> list[dict[str, Any]]:
    """Wait until the Deployment is quiet: its pods at ``wanted``, none left terminating, and
    (the operator's) no hold on it; returns the pods."""
    deadline = time.monotonic() + timeout
    while True:
        pods = await pods_of(http, app)
        d = await get(http, f"/apis/apps/v1/namespaces/default/deployments/{app}")
        held = "inplace.dev/held" in (d["metadata"].get("annotations") or {})
        quiet = not held and not d["spec"].get("paused")
        if quiet and len(pods) == replicas and at_size(pods, replicas, wanted):
            return pods
        if time.monotonic() > deadline:
            raise RuntimeError(f"{app} not settled at {wanted} after {timeout:.0f} s")
        await asyncio.sleep(POLL)


@dataclass
class Change:
    """One measured change of one Deployment."""

    seconds: float
    settled: float
    replaced: int
    restarts: int
    replica_sets: int


async def change(
    plane: ControlPlane, http: aiohttp.ClientSession, app: str, replicas: int, step: int
) -> Change:
    before = await settled(http, app, replicas, size(step - 1))
    sets = await replica_sets(http, app)
    wanted = size(step)
    args = [
        f"--requests=cpu={wanted['requests']['cpu']},memory={wanted['requests']['memory']}",
        f"--limits=cpu={wanted['limits']['cpu']},memory={wanted['limits']['memory']}",
    ]
    started = time.monotonic()
    await asyncio.to_thread(kubectl, plane, "set", "resources", f"deployment/{app}", *args)
    deadline = started + 600
    while True:
        pods = await pods_of(http, app)
        if at_size(pods, replicas, wanted):
            seconds = time.monotonic() - started
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"{app}: not every pod at {wanted} after 600 s")
        await asyncio.sleep(POLL)
    after = await settled(http, app, replicas, wanted)
    quiet = time.monotonic() - started
    first, last = restarts(before), restarts(after)
    return Change(
        seconds=seconds,
        settled=quiet,
        replaced=sum(1 for uid in last if uid not in first),
        restarts=sum(n - first.get(uid, 0) for uid, n in last.items()),
        replica_sets=len(await replica_sets(http, app) - sets),
    )


async def wait_leading(
    http: aiohttp.ClientSession, process: subprocess.Popen[bytes] | None, name: str
) -> None:
    """Until an operator holds the lease ``name`` and has registered the webhook configuration
    of that name (the host process's, or the chart's when ``process`` is None)."""
    deadline = time.monotonic() + 120
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"inplace operator exited with {process.returncode}")
        lease = await get(
            http, f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{name}"
        )
        hook = await get(
            http, f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{name}"
        )
        holder = lease.get("spec", {}).get("holderIdentity")
        if holder and (process is None or holder == "bench") and hook.get("webhooks"):
            return
        if time.monotonic() > deadline:
            raise RuntimeError("inplace operator not leading with its webhook after 120 s")
        await asyncio.sleep(0.5)


async def run(plane: ControlPlane, args: argparse.Namespace, log: Path) -> dict[str, list[Change]]:
    results: dict[str, list[Change]] = {STOCK: [], OPERATOR: []}
    async with session(plane.kubeconfig) as http:
        await wait_service_account(http)
        if plane.operator:  # the chart's, from its image
            running: contextlib.AbstractContextManager[subprocess.Popen[bytes] | None]
            running = contextlib.nullcontext()
        else:
            kubectl(plane, "create", "namespace", NAMESPACE)
            running = operator(plane, log)
        with running as process:
            await wait_leading(http, process, plane.operator.get("release", "inplace-operator"))
            print("  the operator leads, its webhook registered", flush=True)
            for name in (STOCK, OPERATOR):
                manifest = deployment(name, args.replicas, opt_out=name == STOCK)
                kubectl(plane, "apply", "-f", "-", input=json.dumps(manifest))
            started = time.monotonic()
            for name in (STOCK, OPERATOR):
                await settled(http, name, args.replicas, size(0))
            print(
                f"  {2 * args.replicas} pods running in {time.monotonic() - started:.0f} s; "
                f"machine: {machine()}",
                flush=True,
            )
            for step in range(1, args.rounds + 1):
                order = (STOCK, OPERATOR) if step % 2 else (OPERATOR, STOCK)
                for name in order:
                    result = await change(plane, http, name, args.replicas, step)
                    results[name].append(result)
                    print(
                        f"  round {step}, {name:>8}: all at limits {size(step)['limits']} in "
                        f"{result.seconds:.1f} s, {result.replaced} pods replaced, "
                        f"{result.restarts} restarts, {result.replica_sets} ReplicaSets new; "
                        f"load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"inplace operator exited with {process.returncode}")
        for name in (STOCK, OPERATOR):
            kubectl(plane, "delete", "deployment", name, "--wait=false")
    return results


def _fmt(value: float, unit: str) -> str:
    return f"{value:.1f} s" if unit == "s" else f"{value:g}"


def table(results: dict[str, list[Change]], replicas: int) -> None:
    ours, theirs = results[OPERATOR], results[STOCK]
    rounds = len(ours)

    def p50(changes: list[Change]) -> float:
        return statistics.median(c.seconds for c in changes)

    rows = [
        (
            f"kubectl set resources → all {replicas} pods at the new size, p50",
            p50(ours),
            p50(theirs),
            "s",
        ),
        (
            "  the same, slowest round",
            max(c.seconds for c in ours),
            max(c.seconds for c in theirs),
            "s",
        ),
        (
            "  → settled (no old pod left, no hold), p50",
            statistics.median(c.settled for c in ours),
            statistics.median(c.settled for c in theirs),
            "s",
        ),
        (
            "pods replaced, per change",
            sum(c.replaced for c in ours) / rounds,
            sum(c.replaced for c in theirs) / rounds,
            "",
        ),
        (
            "container restarts, per change",
            sum(c.restarts for c in ours) / rounds,
            sum(c.restarts for c in theirs) / rounds,
            "",
        ),
        (
            "ReplicaSets created, per change",
            sum(c.replica_sets for c in ours) / rounds,
            sum(c.replica_sets for c in theirs) / rounds,
            "",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"\nOperator: in place vs the stock rollout, {replicas} replicas, {rounds} rounds")
    print(f"  {'figure':<{width}}  {'operator':>10}  {'stock':>10}  {'operator/stock':>14}")
    for name, op, stock, unit in rows:
        ratio = f"{op / stock:.2f}x" if stock and unit == "s" else ""
        print(f"  {name:<{width}}  {_fmt(op, unit):>10}  {_fmt(stock, unit):>10}  {ratio:>14}")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--replicas", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one round (smoke test)")
    parser.add_argument(
        "--kubelet-nodes",
        action="store_true",
        help="on kubelet nodes, the operator installed by its chart from its image",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 1
    if os.geteuid() != 0:
        print("operator_bench needs root (real pods in cgroups)", file=sys.stderr)
        return 2
    print(
        f"machine: {machine()}; 2 Deployments of {args.replicas} replicas, {args.rounds} rounds",
        flush=True,
    )
    log = Path(tempfile.mkdtemp(prefix="operator-bench-")) / "operator.log"
    # 2 nodes: both Deployments, and a rollout's surge, at the last round's size fit twice over
    nodes = {"nodes": 0, "kubelet_nodes": 2, "operator": True} if args.kubelet_nodes else {}
    with testbed(**{"nodes": 2, "node_cpu": "2", "node_memory": "4Gi", **nodes}) as plane:
        kind = "kubelet nodes, the chart's operator" if args.kubelet_nodes else "inplace agents"
        print(f"  {plane.version} control plane, 2 {kind}; operator log {log}", flush=True)
        results = asyncio.run(run(plane, args, log))
    table(results, args.replicas)
    if args.json:
        figures = {
            f"{name}_{key}": statistics.median(getattr(c, key) for c in changes)
            for name, changes in results.items()
            for key in ("seconds", "settled", "replaced", "restarts")
        }
        Path(args.json).write_text(json.dumps(figures))
    print(f"machine now: {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
