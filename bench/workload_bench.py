"""Workload resize: a Deployment's pods resized in place versus rolled out to the same size.

Part 1 runs a real `inplace up --nodes 2` (real processes, real cgroups) with a 20-replica
Deployment. Once every pod is Ready and the events of starting them are posted, from the
moment the PATCH of the Deployment's template returns:

* **in place**: the template's resources change (nothing else): the workload-resize
  controller resizes every pod through ``pods/resize``; measured until a pod watch (opened
  before, not polling) shows all 20 pods' ``containerStatuses[].resources`` at the new size,
  and the restarts counted (container restarts plus pods replaced);
* **baseline, the same size change forced through a new ReplicaSet** (the template also gets
  an annotation, so it rolls out as upstream would roll out any resource change): measured
  until all 20 pods at the new size are Ready and the old ones are gone.

Part 2 runs `inplace up --simulated-nodes 50` (the same API server, scheduler, controllers;
nodes without processes) with a 500-replica Deployment, and measures the in-place resize of
all 500 pods the same way.

Targets (issue 8): 0 restarts and at least 10x faster than the rollout; 500 replicas all resized
within 10 s.

    python bench/workload_bench.py [--replicas 20] [--simulated-replicas 500] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inplace.client import DEPLOYMENTS, EVENTS, PODS, Client, load_kubeconfig

SMALL = {"requests": {"cpu": "20m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}}
LARGE = {"requests": {"cpu": "30m", "memory": "24Mi"}, "limits": {"memory": "48Mi"}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "command": ["sleep", "1d"],
                            "resources": SMALL,
                            "resizePolicy": [
                                {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                                {"resourceName": "memory", "restartPolicy": "NotRequired"},
                            ],
                        }
                    ],
                },
            },
        },
    }


class Pods:
    """One pod watch, and waits on predicates over all the pods it has seen."""

    def __init__(self, client: Client, selector: str) -> None:
        self.client = client
        self.selector = selector
        self.pods: dict[str, dict[str, Any]] = {}
        self.ever: set[str] = set()
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listing = await self.client.list(PODS, namespace="default", label_selector=self.selector)
        for pod in listing["items"]:
            self._store("ADDED", pod)
        self.task = asyncio.create_task(self._run(listing["metadata"]["resourceVersion"]))

    def _store(self, kind: str, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        self.ever.add(uid)
        if kind == "DELETED":
            self.pods.pop(uid, None)
        else:
            self.pods[uid] = pod

    async def _run(self, rv: str) -> None:
        while True:
            async for event in self.client.watch(
                PODS, namespace="default", resource_version=rv, label_selector=self.selector
            ):
                rv = event.resource_version or rv
                if event.type != "BOOKMARK":
                    self._store(event.type, event.object)
                    self.changed.set()

    async def until(
        self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float
    ) -> float:
        deadline = time.perf_counter() + timeout
        while not predicate(list(self.pods.values())):
            self.changed.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError("not reached")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)
        return time.perf_counter()

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()


def live(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod.get("status", {}).get("conditions") or ()
    )


def at(pod: dict[str, Any], size: dict[str, Any]) -> bool:
    statuses = pod.get("status", {}).get("containerStatuses") or []
    return bool(statuses) and statuses[0].get("resources") == size


def all_at(count: int, size: dict[str, Any]) -> Callable[[list[dict[str, Any]]], bool]:
    def check(pods: list[dict[str, Any]]) -> bool:
        current = live(pods)
        return (
            len(current) == count
            and len(pods) == count
            and all(at(p, size) and ready(p) for p in current)
        )

    return check


def specs_at(count: int, size: dict[str, Any]) -> Callable[[list[dict[str, Any]]], bool]:
    """Every pod's spec asks for ``size`` (the workload-resize controller's part is done)."""

    def check(pods: list[dict[str, Any]]) -> bool:
        current = live(pods)
        return len(current) == count and all(
            p["spec"]["containers"][0].get("resources") == size for p in current
        )

    return check


def restarts(pods: list[dict[str, Any]]) -> int:
    return sum(
        int(s.get("restartCount") or 0)
        for p in pods
        for s in p.get("status", {}).get("containerStatuses") or ()
    )


async def events_settled(client: Client, *, still: float = 2.0, timeout: float = 120) -> None:
    """Wait until no Event was recorded for ``still`` seconds. The components post the events
    of starting the pods (``Scheduled``, ``Started``, ...) in the background, after the pods
    are Ready; the measurement is of the resize, not of that backlog draining under it."""
    deadline = time.perf_counter() + timeout
    seen: tuple[int, int] | None = None
    since = time.perf_counter()
    while time.perf_counter() < deadline:
        items = (await client.list(EVENTS, namespace="default"))["items"]
        now = (len(items), sum(int(e.get("count") or 1) for e in items))
        if now != seen:
            seen, since = now, time.perf_counter()
        elif time.perf_counter() - since >= still:
            return
        await asyncio.sleep(0.5)


async def resize_template(
    client: Client, name: str, size: dict[str, Any], *, force: str = ""
) -> float:
    template: dict[str, Any] = {"spec": {"containers": [{"name": "main", "resources": size}]}}
    if force:
        template["metadata"] = {"annotations": {"bench.inplace.dev/rollout": force}}
    await client.patch(
        DEPLOYMENTS,
        name,
        {"spec": {"template": template}},
        patch_type="strategic",
        namespace="default",
    )
    return time.perf_counter()


async def part_one(kubeconfig: Path, replicas: int) -> dict[str, Any]:
    async with Client(load_kubeconfig(str(kubeconfig))) as client:
        name = "workload-bench"
        pods = Pods(client, f"app={name}")
        await pods.start()
        await client.create(DEPLOYMENTS, deployment(name, replicas))
        await pods.until(all_at(replicas, SMALL), 180)
        await events_settled(client)
        before = {uid: restarts([p]) for uid, p in pods.pods.items()}

        started = await resize_template(client, name, LARGE)
        specs = asyncio.create_task(pods.until(specs_at(replicas, LARGE), 180))
        done = await pods.until(all_at(replicas, LARGE), 180)
        in_place = done - started
        patched = await specs - started
        replaced = len(set(pods.pods) - set(before))
        container_restarts = restarts(list(pods.pods.values())) - sum(before.values())

        known = set(pods.pods)
        started = await resize_template(client, name, SMALL, force="1")

        def rolled(current: list[dict[str, Any]]) -> bool:
            return all_at(replicas, SMALL)(current) and not (set(pods.pods) & known)

        done = await pods.until(rolled, 600)
        rollout = done - started
        pods_replaced_by_rollout = len(known - set(pods.pods))
        await client.delete(DEPLOYMENTS, name, namespace="default")
        with contextlib.suppress(TimeoutError):
            await pods.until(lambda current: not current, 120)
        pods.stop()
        return {
            "in_place": in_place,
            "patched": patched,
            "replaced": replaced,
            "container_restarts": container_restarts,
            "rollout": rollout,
            "rollout_replaced": pods_replaced_by_rollout,
        }


async def part_two(kubeconfig: Path, replicas: int) -> dict[str, Any]:
    async with Client(load_kubeconfig(str(kubeconfig))) as client:
        name = "workload-bench-sim"
        pods = Pods(client, f"app={name}")
        await pods.start()
        await client.create(DEPLOYMENTS, deployment(name, replicas))
        await pods.until(all_at(replicas, SMALL), 600)
        await events_settled(client)
        uids = set(pods.pods)
        started = await resize_template(client, name, LARGE)
        specs = asyncio.create_task(pods.until(specs_at(replicas, LARGE), 600))
        done = await pods.until(all_at(replicas, LARGE), 600)
        result = {
            "resize": done - started,
            "patched": await specs - started,
            "replaced": len(set(pods.pods) - uids),
            "restarts": restarts(list(pods.pods.values())),
        }
        await client.delete(DEPLOYMENTS, name, namespace="default")
        with contextlib.suppress(TimeoutError):
            await pods.until(lambda current: not current, 300)
        pods.stop()
        return result


def run_cluster(tmp: Path, extra: list[str], body: Callable[[Path], Any]) -> Any:
    tmp.mkdir(parents=True, exist_ok=True)
    data = tmp / "data"
    log_path = tmp / "up.log"
    log = open(log_path, "wb")  # noqa: SIM115
    up = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inplace",
            "up",
            "--data-dir",
            str(data),
            "--port",
            str(free_port()),
            *extra,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while b"ready in" not in log_path.read_bytes():
            if up.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(log_path.read_text())
            time.sleep(0.1)
        return asyncio.run(body(data / "kubeconfig.yaml"))
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(60)
        except subprocess.TimeoutExpired:
            up.kill()
        log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", type=int, default=20)
    parser.add_argument("--simulated-replicas", type=int, default=500)
    parser.add_argument("--simulated-nodes", type=int, default=50)
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("workload_bench needs root (real cgroup limits)", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="workload-bench-"))
    try:
        one = run_cluster(
            tmp / "real",
            ["--nodes", "2", "--node-cpu", "2", "--node-memory", "3Gi"],
            lambda kc: part_one(kc, args.replicas),
        )
        two = run_cluster(
            tmp / "sim",
            ["--nodes", "0", "--simulated-nodes", str(args.simulated_nodes)],
            lambda kc: part_two(kc, args.simulated_replicas),
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    speedup = one["rollout"] / max(one["in_place"], 1e-9)
    restarted = one["replaced"] + one["container_restarts"]
    if args.json:
        figures = {
            "in_place_s": one["in_place"],
            "rollout_s": one["rollout"],
            "restarts": restarted,
            "simulated_resize_s": two["resize"],
        }
        Path(args.json).write_text(json.dumps(figures))
    print(f"{args.replicas}-replica Deployment on 2 real nodes, one size change:")
    print(
        f"  in place (template resources only)    {one['in_place']:7.2f} s   restarts "
        f"{restarted} ({one['replaced']} pods replaced, {one['container_restarts']} "
        "container restarts)   (target 0)"
    )
    print(f"    of which: every pod's spec patched through pods/resize  {one['patched']:7.2f} s")
    print(
        f"  baseline: rollout via a new ReplicaSet {one['rollout']:7.2f} s   "
        f"{one['rollout_replaced']} pods replaced"
    )
    verdict = "PASS" if speedup >= 10 and restarted == 0 else "MISS"
    print(f"  in place is {speedup:.1f}x faster (target >= 10x, 0 restarts): {verdict}")
    print(
        f"{args.simulated_replicas}-replica Deployment on {args.simulated_nodes} simulated nodes:"
    )
    ok = two["resize"] <= 10 and two["replaced"] == 0
    print(
        f"  in place, all resized                 {two['resize']:7.2f} s   "
        f"{two['replaced']} pods replaced   (target <= 10 s): {'PASS' if ok else 'MISS'}"
    )
    print(f"    of which: every pod's spec patched through pods/resize  {two['patched']:7.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
