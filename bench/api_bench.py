"""API server benchmark: creates, gets, patches and lists of 10,000 pods with 50 watchers.

Runs a real `inplace apiserver` process (HTTPS, token auth, SQLite) and drives it over HTTP
from this process. Baseline in the same run: GET /version, the floor of one HTTPS round trip
through the same server, so the figures can be read on a noisy shared machine.

Targets (issue 3): mutating calls p99 ≤ 50 ms at 200 writes/s with 10,000 pods stored;
LIST of 10,000 pods ≤ 1 s; watch delivery p99 ≤ 50 ms with 50 watchers.

    python bench/api_bench.py [--pods 10000] [--watchers 50] [--rate 200] [--seconds 10]
                              [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import re
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
from inplace.loop import run as run_event_loop

SEQ = re.compile(rb'"bench-seq":"(\d+)"')


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)] * 1000


def pod(i: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{i:05d}",
            "namespace": "default",
            "labels": {"app": "bench", "shard": str(i % 10)},
        },
        "spec": {
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
            ]
        },
    }


def report(name: str, samples: list[float], *, target_ms: float | None = None) -> None:
    p50, p99 = pct(samples, 0.5), pct(samples, 0.99)
    line = f"{name:<34} n={len(samples):>6}  p50={p50:7.2f} ms  p99={p99:7.2f} ms"
    if target_ms is not None:
        verdict = "PASS" if pct(samples, 0.99) <= target_ms else "MISS"
        line += f"  target p99 ≤ {target_ms:.0f} ms: {verdict}"
    print(line, flush=True)


def start_apiserver(tmp: str) -> tuple[subprocess.Popen[bytes], str, ssl.SSLContext, str]:
    """A real `inplace apiserver` process on the fresh data dir ``tmp``: (process, base URL,
    TLS context trusting its CA, admin bearer token). The caller terminates the process."""
    data = DataDir(Path(tmp))
    port = pick_port("127.0.0.1", 0)
    prepare(data, host="127.0.0.1", port=port)
    from inplace.apiserver.auth import TokenFile

    token = TokenFile(data.tokens).token_for("admin", ("system:masters",))
    server = subprocess.Popen(
        [sys.executable, "-m", "inplace", "apiserver", "--data-dir", tmp, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    context = ssl.create_default_context(cafile=str(data.pki / "ca.crt"))
    return server, f"https://127.0.0.1:{port}", context, token


def figures(results: dict[str, Any]) -> dict[str, float]:
    """The run's figures for ``bench/run.py`` (milliseconds, per second, or a count)."""
    return {
        "create_p50": pct(results["create"], 0.5),
        "creates_per_s": results["creates_per_s"],
        "list_p50": pct(results["list"], 0.5),
        "patch_p50": pct(results["patch"], 0.5),
        "patch_p99": pct(results["patch"], 0.99),
        "watch_p50": pct(results["delivery"], 0.5),
        "watch_p99": pct(results["delivery"], 0.99),
        "watch_delivered": results["delivered"] / max(results["expected"], 1),
    }


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="inplace-bench-") as tmp:
        server, base, context, token = start_apiserver(tmp)
        headers = {"Authorization": f"Bearer {token}"}
        connector = aiohttp.TCPConnector(ssl=context, limit=200)
        try:
            async with aiohttp.ClientSession(base, headers=headers, connector=connector) as session:
                results = await bench(args, session)
            if args.json:
                Path(args.json).write_text(json.dumps(figures(results)))
        finally:
            server.terminate()
            server.wait(30)


async def bench(args: argparse.Namespace, session: aiohttp.ClientSession) -> dict[str, Any]:
    """The load on one API server through ``session`` (its base URL, TLS context and
    credentials set by the caller); prints each figure and returns the samples (seconds)."""
    results: dict[str, Any] = {}
    json_body = {"Content-Type": "application/json"}
    for _ in range(300):
        try:
            async with session.get("/readyz") as r:
                if r.status == 200:
                    break
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)

    async def timed(method: str, path: str, **kw: object) -> float:
        started = time.perf_counter()
        async with session.request(method, path, **kw) as r:  # type: ignore[arg-type]
            await r.read()
            if r.status >= 300:
                raise RuntimeError(f"{method} {path}: {r.status}")
        return time.perf_counter() - started

    baseline = [await timed("GET", "/version") for _ in range(300)]
    report("baseline GET /version", baseline)

    sem = asyncio.Semaphore(50)
    create_lat: list[float] = []

    async def create(i: int) -> None:
        async with sem:
            create_lat.append(
                await timed(
                    "POST",
                    "/api/v1/namespaces/default/pods",
                    data=orjson.dumps(pod(i)),
                    headers=json_body,
                )
            )

    started = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(args.pods)))
    elapsed = time.perf_counter() - started
    print(f"created {args.pods} pods in {elapsed:.1f}s: {args.pods / elapsed:.0f} creates/s")
    report("create (50 concurrent)", create_lat)
    results["creates_per_s"] = args.pods / elapsed
    results["create"] = create_lat

    gets = [
        await timed("GET", f"/api/v1/namespaces/default/pods/pod-{i:05d}")
        for i in range(0, args.pods, max(args.pods // 1000, 1))
    ]
    report("get", gets)
    results["get"] = gets

    lists = [await timed("GET", "/api/v1/namespaces/default/pods") for _ in range(5)]
    report(f"list {args.pods} pods (JSON)", lists, target_ms=1000)
    async with session.get("/api/v1/namespaces/default/pods") as r:
        results["list_bytes"] = len(await r.read())
    results["list"] = lists
    tables = [
        await timed(
            "GET",
            "/api/v1/namespaces/default/pods",
            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        )
        for _ in range(3)
    ]
    report(f"list {args.pods} pods (Table)", tables)
    results["table"] = tables

    # Watchers, then paced patches; delivery = receipt time - patch send time.
    sent: dict[int, float] = {}
    delivered: list[float] = []
    async with session.get("/api/v1/namespaces/default/pods?limit=1") as r:
        rv = (await r.json())["metadata"]["resourceVersion"]

    async def watcher() -> None:
        async with session.get(
            f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}",
            timeout=aiohttp.ClientTimeout(total=None),
        ) as r:
            async for line in r.content:
                now = time.perf_counter()
                match = SEQ.search(line)
                if match:
                    seq = int(match.group(1))
                    if seq in sent:
                        delivered.append(now - sent[seq])

    watchers = [asyncio.create_task(watcher()) for _ in range(args.watchers)]
    await asyncio.sleep(1.0)
    patch_lat: list[float] = []
    total = args.rate * args.seconds
    interval = 1.0 / args.rate
    tasks = []
    begin = time.perf_counter()

    async def patch(seq: int) -> None:
        body = orjson.dumps({"metadata": {"labels": {"bench-seq": str(seq)}}})
        sent[seq] = time.perf_counter()
        patch_lat.append(
            await timed(
                "PATCH",
                f"/api/v1/namespaces/default/pods/pod-{seq % args.pods:05d}",
                data=body,
                headers={"Content-Type": "application/merge-patch+json"},
            )
        )

    for seq in range(total):
        target = begin + seq * interval
        delay = target - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(patch(seq)))
    await asyncio.gather(*tasks)
    achieved = total / (time.perf_counter() - begin)
    await asyncio.sleep(2.0)
    for task in watchers:
        task.cancel()
    print(
        f"patched at {achieved:.0f} writes/s with {args.pods} pods stored and "
        f"{args.watchers} watchers"
    )
    report("patch (mutating)", patch_lat, target_ms=50)
    report(f"watch delivery ({args.watchers} watchers)", delivered, target_ms=50)
    expected = total * args.watchers
    print(f"watch events delivered: {len(delivered)} of {expected}")
    results.update(patch=patch_lat, delivery=delivered, delivered=len(delivered), expected=expected)
    results["patches_per_s"] = achieved
    return results


def main() -> None:
    # The load generator must not pause either: keep full collections out of the run.
    gc.freeze()
    gc.set_threshold(50_000, 50, 1_000_000_000)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--watchers", type=int, default=50)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    run_event_loop(run(parser.parse_args()))


if __name__ == "__main__":
    main()
