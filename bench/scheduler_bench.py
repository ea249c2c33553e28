"""Scheduler benchmark, end to end through the API server as upstream's figure is.

For each node count: a fresh `inplace apiserver` process (HTTPS, token auth, SQLite), N
simulated Node objects (``inplace.dev/simulated=true``; no agent is needed to place pods),
the scheduler as its own process (``python -m inplace.scheduler``), then 10,000 pods created
by 50 concurrent clients; throughput = pods / (first create → a watcher has seen the last
one bound). Then resize decisions/s: every pod gets ``allocatedResources`` (as an agent
would report), half of them are resized at once, and the clock runs until a watcher has
seen each one's ``PodResizeScheduled`` condition.

Baseline in the same run, on the same server: the create-only throughput (pods nobody
schedules), and the resize-only PATCH throughput — the floor under each figure, so they
read on a noisy machine.

Target (issue 5): >= 700 pods/s at 5,000 nodes and 10,000 pods (upstream's kube-scheduler
integration threshold is 680 pods/s). With ``--profile`` the scheduler runs under cProfile
and the top functions are printed.

    python bench/scheduler_bench.py [--nodes 1000,5000] [--pods 10000] [--profile] [--json FILE]

``--json`` writes the figures of the largest node count (``bench/run.py`` reads them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from inplace.cli.paths import DataDir
from inplace.cli.up import pick_port, prepare

CONCURRENCY = 50


def make_node(i: int) -> dict[str, Any]:
    res = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i:05d}",
            "labels": {"inplace.dev/simulated": "true", "kubernetes.io/hostname": f"node-{i:05d}"},
        },
        "status": {
            "capacity": dict(res),
            "allocatable": dict(res),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def make_pod(i: int, namespace: str, scheduler: str = "default-scheduler") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": namespace, "labels": {"app": "bench"}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "1d"],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"cpu": "200m", "memory": "128Mi"},
                    },
                }
            ],
        },
    }


class API:
    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def call(self, method: str, path: str, body: Any = None, ctype: str = "") -> Any:
        headers = {"Content-Type": ctype or "application/json"}
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(method, path, data=data, headers=headers) as r:
            raw = await r.read()
            if r.status >= 300:
                raise RuntimeError(f"{method} {path}: {r.status} {raw[:300]!r}")
            return orjson.loads(raw) if raw else None

    async def many(self, calls: list[tuple[str, str, Any, str]]) -> float:
        """Run calls with CONCURRENCY in flight; returns the elapsed seconds."""
        it = iter(calls)

        async def worker() -> None:
            for method, path, body, ctype in it:
                await self.call(method, path, body, ctype)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return time.perf_counter() - started


async def watch_pods(
    session: aiohttp.ClientSession,
    namespace: str,
    rv: str,
    done: dict[str, float],
    predicate: Any,
    target: int,
    finished: asyncio.Event,
) -> None:
    """Record when each pod first satisfies ``predicate``; set ``finished`` at ``target``.
    A watch the server ends (kube-apiserver closes one that does not keep up) is opened again
    from the last resourceVersion seen; one too old to resume (410) is replaced by a LIST."""
    while True:
        url = f"/api/v1/namespaces/{namespace}/pods?watch=1&resourceVersion={rv}"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as r:
            buf, gone = b"", False
            async for chunk in r.content.iter_any():
                buf += chunk
                *lines, buf = buf.split(b"\n")
                now = time.perf_counter()
                for line in lines:
                    if not line.strip():
                        continue
                    event = orjson.loads(line)
                    obj = event["object"]
                    if event["type"] == "ERROR":
                        async with session.get(f"/api/v1/namespaces/{namespace}/pods") as listed:
                            listing = orjson.loads(await listed.read())
                        objs, rv = listing["items"], listing["metadata"]["resourceVersion"]
                        now = time.perf_counter()
                    else:
                        objs, rv = [obj], obj["metadata"]["resourceVersion"]
                    for obj in objs:
                        name = obj["metadata"]["name"]
                        if name not in done and predicate(obj):
                            done[name] = now
                            if len(done) >= target:
                                finished.set()
                                return
                    if event["type"] == "ERROR":
                        gone = True
                        break
                if gone:
                    break


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def is_bound(obj: dict[str, Any]) -> bool:
    return bool(obj.get("spec", {}).get("nodeName"))


def resize_scheduled(obj: dict[str, Any]) -> bool:
    generation = obj["metadata"].get("generation")
    return any(
        c.get("type") == "PodResizeScheduled"
        and c.get("status") == "True"
        and c.get("observedGeneration") == generation
        and generation
        and generation > 1
        for c in obj.get("status", {}).get("conditions", [])
    )


async def wait_http(session: aiohttp.ClientSession, url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            async with session.get(url) as r:
                if r.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    raise RuntimeError(f"{url} not ready after {timeout}s")


def stop_processes(
    scheduler: subprocess.Popen[bytes] | None, server: subprocess.Popen[bytes]
) -> None:
    """Stop the scheduler (SIGINT, so it writes its profile; SIGKILL after 60 s), then the API
    server."""
    if scheduler is not None:
        scheduler.send_signal(signal.SIGINT)
        try:
            scheduler.wait(60)
        except subprocess.TimeoutExpired:
            scheduler.kill()
            scheduler.wait()
    server.terminate()
    server.wait(30)


def scheduler_argv(kubeconfig: Path, metrics_port: int) -> list[str]:
    """inplace's scheduler as its own process, its health and metrics on ``metrics_port``."""
    return [
        sys.executable,
        "-m",
        "inplace.scheduler",
        "--kubeconfig",
        str(kubeconfig),
        "--metrics-port",
        str(metrics_port),
        "--log-level",
        "WARNING",
    ]


async def create_nodes(api: API, nodes: int) -> float:
    """Create the simulated Node objects; returns the elapsed seconds."""
    return await api.many([("POST", "/api/v1/nodes", make_node(i), "") for i in range(nodes)])


async def place(api: API, pods: int, namespace: str = "default") -> dict[str, Any]:
    """Create ``pods`` pods (CONCURRENCY in flight) while a watcher records when each is first
    seen bound. Returns ``elapsed`` (first create → last pod seen bound), ``create_s`` (the
    creates alone) and ``latency``: per pod, its create sent → seen bound (seconds)."""
    listing = await api.call("GET", f"/api/v1/namespaces/{namespace}/pods?limit=1")
    rv = listing["metadata"]["resourceVersion"]
    bound: dict[str, float] = {}
    finished = asyncio.Event()
    watcher = asyncio.create_task(
        watch_pods(api.session, namespace, rv, bound, is_bound, pods, finished)
    )
    await asyncio.sleep(0.5)
    sent: dict[str, float] = {}
    todo = iter(range(pods))

    async def worker() -> None:
        for i in todo:
            body = make_pod(i, namespace)
            sent[body["metadata"]["name"]] = time.perf_counter()
            await api.call("POST", f"/api/v1/namespaces/{namespace}/pods", body)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    create_s = time.perf_counter() - started
    await asyncio.wait_for(finished.wait(), 600)
    await watcher
    return {
        "elapsed": max(bound.values()) - started,
        "create_s": create_s,
        "latency": [bound[name] - sent[name] for name in bound],
    }


async def one_run(args: argparse.Namespace, nodes: int) -> dict[str, float]:
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="inplace-sched-bench-") as tmp:
        data = DataDir(Path(tmp))
        port = pick_port("127.0.0.1", 0)
        kubeconfigs = prepare(data, host="127.0.0.1", port=port)
        from inplace.apiserver.auth import TokenFile

        token = TokenFile(data.tokens).token_for("admin", ("system:masters",))
        server = subprocess.Popen(
            [sys.executable, "-m", "inplace", "apiserver", "--data-dir", tmp, "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        scheduler: subprocess.Popen[bytes] | None = None
        context = ssl.create_default_context(cafile=str(data.pki / "ca.crt"))
        connector = aiohttp.TCPConnector(ssl=context, limit=200)
        headers = {"Authorization": f"Bearer {token}"}
        try:
            async with aiohttp.ClientSession(
                f"https://127.0.0.1:{port}", headers=headers, connector=connector
            ) as session:
                api = API(session)
                await wait_http(session, "/readyz")
                t = await create_nodes(api, nodes)
                print(f"  created {nodes} nodes in {t:.1f}s", flush=True)
                await api.call(
                    "POST",
                    "/api/v1/namespaces",
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "baseline"}},
                )
                # Baseline: the same creates, for pods no scheduler takes.
                t = await api.many(
                    [
                        (
                            "POST",
                            "/api/v1/namespaces/baseline/pods",
                            make_pod(i, "baseline", "nobody"),
                            "",
                        )
                        for i in range(args.pods)
                    ]
                )
                results["baseline_creates_per_s"] = args.pods / t
                print(
                    f"  baseline: {args.pods} creates (no scheduler) in {t:.1f}s = "
                    f"{args.pods / t:.0f} creates/s",
                    flush=True,
                )

                metrics_port = pick_port("127.0.0.1", 0)
                argv = scheduler_argv(kubeconfigs["scheduler"], metrics_port)
                if args.no_events:
                    argv.append("--no-scheduled-events")
                prof = Path(tmp) / "scheduler.prof"
                if args.profile:
                    argv[1:3] = ["-m", "cProfile", "-o", str(prof), "-m", "inplace.scheduler"]
                scheduler = subprocess.Popen(argv, stdout=sys.stdout, stderr=sys.stderr)
                await wait_http(session, f"http://127.0.0.1:{metrics_port}/healthz")

                cpu0 = (cpu_seconds(server.pid), cpu_seconds(scheduler.pid), time.process_time())
                placed = await place(api, args.pods)
                elapsed, create_t = placed["elapsed"], placed["create_s"]
                cpu1 = (cpu_seconds(server.pid), cpu_seconds(scheduler.pid), time.process_time())
                results["pods_per_s"] = args.pods / elapsed
                sched_cpu = cpu1[1] - cpu0[1]
                results["scheduler_cpu_pods_per_s"] = args.pods / max(sched_cpu, 1e-9)
                print(
                    f"  placed {args.pods} pods on {nodes} nodes: {elapsed:.1f}s = "
                    f"{args.pods / elapsed:.0f} pods/s (creates alone took {create_t:.1f}s "
                    f"with the scheduler running)",
                    flush=True,
                )
                print(
                    f"  where the time went: API server {cpu1[0] - cpu0[0]:.1f} CPU-s, "
                    f"scheduler {sched_cpu:.1f} CPU-s ({1e6 * sched_cpu / args.pods:.0f} us "
                    f"per pod: {args.pods / max(sched_cpu, 1e-9):.0f} pods/s of scheduler CPU), "
                    f"benchmark client {cpu1[2] - cpu0[2]:.1f} CPU-s, over {elapsed:.1f}s "
                    f"on {os.cpu_count()} CPUs",
                    flush=True,
                )

                # Resizes: report allocatedResources (as the agent would), then resize half.
                k = args.pods // 2
                names = [f"pod-{i:05d}" for i in range(k)]
                status_patch = {
                    "status": {
                        "phase": "Running",
                        "containerStatuses": [
                            {
                                "name": "main",
                                "image": "busybox",
                                "imageID": "",
                                "ready": True,
                                "restartCount": 0,
                                "allocatedResources": {"cpu": "100m", "memory": "64Mi"},
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                            }
                        ],
                    }
                }
                merge = "application/merge-patch+json"
                await api.many(
                    [
                        (
                            "PATCH",
                            f"/api/v1/namespaces/default/pods/{n}/status",
                            status_patch,
                            merge,
                        )
                        for n in names
                    ]
                )
                await asyncio.sleep(1.0)
                listing = await api.call("GET", "/api/v1/namespaces/default/pods?limit=1")
                rv = listing["metadata"]["resourceVersion"]
                approved: dict[str, float] = {}
                finished = asyncio.Event()
                watcher = asyncio.create_task(
                    watch_pods(session, "default", rv, approved, resize_scheduled, k, finished)
                )
                await asyncio.sleep(0.5)
                resize = {
                    "spec": {
                        "containers": [
                            {
                                "name": "main",
                                "resources": {
                                    "requests": {"cpu": "150m", "memory": "96Mi"},
                                    "limits": {"cpu": "200m", "memory": "128Mi"},
                                },
                            }
                        ]
                    }
                }
                smp = "application/strategic-merge-patch+json"
                started = time.perf_counter()
                patch_t = await api.many(
                    [
                        ("PATCH", f"/api/v1/namespaces/default/pods/{n}/resize", resize, smp)
                        for n in names
                    ]
                )
                await asyncio.wait_for(finished.wait(), 600)
                elapsed = max(approved.values()) - started
                results["resize_decisions_per_s"] = k / elapsed
                results["resize_patches_per_s"] = k / patch_t
                print(
                    f"  resized {k} pods: all approved and seen in {elapsed:.1f}s = "
                    f"{k / elapsed:.0f} resize decisions/s (baseline: the resize PATCHes "
                    f"alone ran at {k / patch_t:.0f}/s)",
                    flush=True,
                )
                await watcher
                async with session.get(f"http://127.0.0.1:{metrics_port}/metrics") as r:
                    text = await r.text()
                for line in text.splitlines():
                    if line.startswith(
                        ("scheduler_schedule_attempts_total", "inplace_resize_decisions_total")
                    ) and not line.endswith(" 0.0"):
                        print(f"    {line}")
        finally:
            stop_processes(scheduler, server)
            if args.profile and scheduler is not None and (Path(tmp) / "scheduler.prof").exists():
                print("  scheduler profile (top 25 by cumulative time):")
                stats = pstats.Stats(str(Path(tmp) / "scheduler.prof"))
                stats.sort_stats("tottime").print_stats(25)
    return results


async def algorithm_only(nodes: int, pods: int) -> float:
    """The scheduling cycle alone (no API server, no network), in this process: pods/s."""
    from inplace.scheduler import Scheduler
    from inplace.scheduler.framework import Framework, PodInfo, Status
    from inplace.scheduler.plugins import default_plugins

    class NoBinder:
        name = "NoBinder"

        async def bind(self, pod: PodInfo, node: str) -> Status:
            return Status.success()

    class NoActions:
        async def evict(self, pod: PodInfo) -> None: ...
        async def delete(self, pod: PodInfo) -> None: ...
        async def patch_status(self, pod: PodInfo, patch: Any) -> None: ...
        def event(self, pod: PodInfo, type_: str, reason: str, message: str) -> None: ...

    sched = Scheduler(
        None, actions=NoActions(), framework=Framework([*default_plugins(None), NoBinder()])
    )
    for i in range(nodes):
        sched.on_node_add(make_node(i))
    objs = []
    for i in range(pods):
        obj = make_pod(i, "default")
        obj["metadata"]["uid"] = f"uid-{i}"
        obj["metadata"]["generation"] = 1
        obj["status"] = {"phase": "Pending", "qosClass": "Burstable"}
        objs.append(obj)
    started = time.perf_counter()
    for obj in objs:
        sched.on_pod_add(obj)
    while (qp := sched.queue.pop_nowait()) is not None:
        sched.schedule_one(qp)
    await sched.settle()
    return pods / (time.perf_counter() - started)


async def run(args: argparse.Namespace) -> None:
    print(f"machine: {os.cpu_count()} CPUs; pods per run: {args.pods}", flush=True)
    summary: list[tuple[int, dict[str, float]]] = []
    for nodes in [int(n) for n in args.nodes.split(",")]:
        print(f"== {nodes} nodes", flush=True)
        algo = await algorithm_only(nodes, args.pods)
        print(
            f"  scheduling cycle alone (in process, no API server): {algo:.0f} pods/s",
            flush=True,
        )
        result = await one_run(args, nodes)
        result["algorithm_pods_per_s"] = algo
        summary.append((nodes, result))
    print("\nsummary")
    for nodes, r in summary:
        verdict = ""
        if nodes >= 5000:
            verdict = "  target >= 700 pods/s: " + ("PASS" if r["pods_per_s"] >= 700 else "MISS")
        print(
            f"  {nodes:>5} nodes: {r['pods_per_s']:6.0f} pods/s "
            f"(baseline creates {r['baseline_creates_per_s']:.0f}/s), "
            f"{r['resize_decisions_per_s']:.0f} resize decisions/s "
            f"(baseline patches {r['resize_patches_per_s']:.0f}/s); scheduler CPU alone "
            f"would place {r['scheduler_cpu_pods_per_s']:.0f} pods/s, the cycle alone "
            f"{r['algorithm_pods_per_s']:.0f} pods/s{verdict}"
        )
    if args.json:
        nodes, largest = max(summary, key=lambda run: run[0])
        Path(args.json).write_text(json.dumps({**largest, "nodes": nodes, "pods": args.pods}))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", default="1000,5000")
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--no-events", action="store_true", help="no Scheduled events")
    parser.add_argument("--profile", action="store_true", help="run the scheduler in cProfile")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
