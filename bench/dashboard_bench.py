"""Dashboard load check: 1,000 pods on simulated nodes, the pods page in a real browser.

Runs a real `inplace up --nodes 0 --simulated-nodes N` (API server, scheduler, the simulated
node agents and the dashboard, each its own process), creates ``--pods`` pods whose usage
follows the ``inplace.dev/usage-profile`` annotation (ramps and waves of different sizes),
waits until every one runs and the dashboard has usage for it, then opens the pods page in
Debian's Chromium (Playwright) and measures:

* **render**: from the start of the page load (``#/pods`` opened in a new tab) to every row
  drawn, sparklines included — the median and the worst of ``--loads`` loads;
* **live updates**: every metrics round changes every row; the page redraws them in slices
  of about 12 ms (so input is never blocked long): the median and the longest slice over
  ~20 s, which is how long a click or a key may wait;
* **sort**: a click on a column header to the reordered table painted;
* **RSS** of the dashboard process, before the pods exist and at the end (peak sampled).

Baseline in the same run: the same page filtered to one namespace of ``--baseline-pods``
pods (the fixed cost: HTML, scripts, the stream), and the JSON snapshot fetched without a
browser (the server's share).

Targets (issue 13): render < 2 s and RSS < 300 MB with 1,000 pods. Printed as PASS/MISS;
nothing here is a test assertion.

    python bench/dashboard_bench.py [--pods 1000] [--nodes 20] [--loads 5] [--watch-seconds 20]
                                    [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from playwright.sync_api import sync_playwright

from inplace.client import PODS, Client, load_kubeconfig

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
BASELINE_NAMESPACE = "small"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def profile(rng: random.Random) -> str:
    """A usage profile: a ramp, or a wave through a few points."""
    base = rng.randint(8, 120)
    if rng.random() < 0.5:
        return json.dumps(
            {
                "ramp": {
                    "from": {"cpu": f"{rng.randint(5, 50)}m", "memory": f"{base}Mi"},
                    "to": {"cpu": f"{rng.randint(50, 200)}m", "memory": f"{base * 2}Mi"},
                    "seconds": rng.randint(60, 600),
                }
            }
        )
    points = [
        [t, f"{rng.randint(5, 250)}m", f"{base + rng.randint(0, base)}Mi"]
        for t in range(0, 600, rng.choice((30, 60, 90)))
    ]
    return json.dumps({"points": points})


def pod(i: int, namespace: str, rng: random.Random) -> dict[str, Any]:
    memory = rng.choice((64, 128, 256))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"load-{i:04d}",
            "namespace": namespace,
            "labels": {"app": f"app-{i % 25}", "tier": rng.choice(("web", "batch", "cache"))},
            "annotations": {"inplace.dev/usage-profile": profile(rng)},
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "1d"],
                    "resources": {
                        "requests": {"cpu": "20m", "memory": f"{memory // 2}Mi"},
                        "limits": {"cpu": "250m", "memory": f"{memory}Mi"},
                    },
                }
            ]
        },
    }


async def create_pods(kubeconfig: Path, pods: int, baseline: int) -> None:
    rng = random.Random(13)
    bodies = [pod(i, f"team-{i % 8}", rng) for i in range(pods - baseline)]
    bodies += [pod(i, BASELINE_NAMESPACE, rng) for i in range(pods - baseline, pods)]
    async with Client(load_kubeconfig(str(kubeconfig)), connection_limit=64) as client:
        for ns in sorted({b["metadata"]["namespace"] for b in bodies}):
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            await client.request("POST", "/api/v1/namespaces", body=body)
        queue = list(bodies)

        async def worker() -> None:
            while queue:
                await client.create(PODS, queue.pop())

        await asyncio.gather(*(worker() for _ in range(32)))

        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            listed = await client.list_all(PODS)
            running = sum(
                1 for p in listed["items"] if (p.get("status") or {}).get("phase") == "Running"
            )
            if running >= pods:
                return
            await asyncio.sleep(1)
        raise SystemExit(f"only {running} of {pods} pods running after 300 s")


def get_json(url: str, token: str) -> tuple[Any, float, int]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    return json.loads(body), time.perf_counter() - started, len(body)


def dashboard_process(up: subprocess.Popen[bytes]) -> psutil.Process:
    for child in psutil.Process(up.pid).children(recursive=True):
        argv = child.cmdline()
        if argv[1:4] == ["-m", "inplace", "dashboard"]:  # (the data dir's name has it too)
            return child
    raise SystemExit("no dashboard process under inplace up")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def measure_page(context: Any, base: str, route: str, rows: int) -> float:
    """Milliseconds from the start of loading ``route`` in a new tab to ``rows`` rows drawn."""
    page = context.new_page()
    try:
        page.goto(f"{base}/#{route}")
        handle = page.wait_for_function(
            "(n) => document.querySelectorAll('#pods tbody tr').length >= n && performance.now()",
            arg=rows,
            timeout=120_000,
        )
        return float(handle.json_value())
    finally:
        page.close()


def browse(
    base: str, url: str, pods: int, baseline: int, loads: int, watch_seconds: float = 20.0
) -> dict[str, Any]:
    profile_dir = tempfile.mkdtemp(prefix="inplace-bench-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile_dir,
                executable_path=CHROMIUM,
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1400, "height": 1000},
            )
            try:
                page = context.new_page()
                page.goto(url)  # trades the token for the cookie
                page.close()
                measure_page(context, base, "/pods", pods)  # warm the server's row cache
                render = [measure_page(context, base, "/pods", pods) for _ in range(loads)]
                small = [
                    measure_page(context, base, f"/pods?namespace={BASELINE_NAMESPACE}", baseline)
                    for _ in range(loads)
                ]
                page = context.new_page()
                page.goto(f"{base}/#/pods")
                page.wait_for_function(
                    "(n) => document.querySelectorAll('#pods tbody tr').length >= n",
                    arg=pods,
                    timeout=120_000,
                )
                page.evaluate("inplaceDashboard.drawMs.length = 0")
                # live updates: every row changes each round
                page.wait_for_timeout(watch_seconds * 1000)
                redraw = page.evaluate("inplaceDashboard.drawMs.slice()")
                sort = page.evaluate(
                    """() => new Promise((done) => {
                        const t = performance.now();
                        document.querySelector("th[data-col=memoryUsage] button").click();
                        requestAnimationFrame(() => requestAnimationFrame(
                            () => done(performance.now() - t)));
                    })"""
                )
                page.click("th[data-col=memoryUsage] button")  # the biggest users first
                page.wait_for_timeout(500)
                shots = Path(os.environ.get("INPLACE_TEST_ARTIFACTS", "build/test-artifacts"))
                (shots / "dashboard").mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(shots / "dashboard" / "bench-pods-1000.png"))
                page.close()
            finally:
                context.close()
    finally:
        shutil.rmtree(profile_dir, ignore_errors=True)
    return {"render": render, "small": small, "redraw": redraw, "sort": float(sort)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=20, help="simulated nodes (4 CPU, 16Gi)")
    parser.add_argument("--loads", type=int, default=5, help="page loads measured")
    parser.add_argument("--baseline-pods", type=int, default=10)
    parser.add_argument(
        "--watch-seconds", type=float, default=20.0, help="live updates watched, seconds"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")

    workdir = Path(tempfile.mkdtemp(prefix="inplace-dashboard-bench-"))
    data = workdir / "data"
    log = open(workdir / "up.log", "wb")  # noqa: SIM115 - the child writes to it
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
            "--nodes",
            "0",
            "--simulated-nodes",
            str(args.nodes),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        found = None
        while found is None and time.monotonic() < deadline:
            if up.poll() is not None:
                raise SystemExit((workdir / "up.log").read_text())
            found = re.search(
                r"dashboard on (http://127\.0\.0\.1:\d+)/\?token=(\S+)",
                (workdir / "up.log").read_text(),
            )
            time.sleep(0.2)
        if found is None:
            raise SystemExit("inplace up did not print the dashboard's URL")
        base, token = found.group(1), found.group(2)
        url = f"{base}/?token={token}"
        while time.monotonic() < deadline:
            try:
                get_json(f"{base}/api/view?view=cluster", token)
                break
            except OSError:
                time.sleep(0.2)
        board = dashboard_process(up)
        time.sleep(3)
        rss_empty = board.memory_info().rss

        print(f"creating {args.pods} pods on {args.nodes} simulated nodes ...", flush=True)
        started = time.monotonic()
        asyncio.run(create_pods(data / "kubeconfig.yaml", args.pods, args.baseline_pods))
        print(f"  all running after {time.monotonic() - started:.1f}s", flush=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            view, _, _ = get_json(f"{base}/api/view?view=pods", token)
            with_usage = sum(1 for r in view["rows"] if r["memory"]["usage"] is not None)
            if with_usage >= args.pods:
                break
            time.sleep(1)
        print(f"  the dashboard has usage for {with_usage} pods", flush=True)
        snapshot = [get_json(f"{base}/api/view?view=pods", token) for _ in range(5)]
        snapshot_ms = [s[1] * 1000 for s in snapshot]
        snapshot_bytes = snapshot[-1][2]

        peak = board.memory_info().rss
        figures = browse(base, url, args.pods, args.baseline_pods, args.loads, args.watch_seconds)
        peak = max(peak, board.memory_info().rss)
        rss_end = board.memory_info().rss

        render, small, redraw = figures["render"], figures["small"], figures["redraw"]
        mb = 2**20
        print()
        print(f"dashboard, {args.pods} pods on {args.nodes} simulated nodes")
        print(f"{'figure':<46}{'measured':>22}{'baseline':>22}  target")
        print(
            f"{'pods page load → all rows drawn, p50 / max':<46}"
            f"{statistics.median(render):>13.0f} / {max(render):>4.0f} ms"
            f"{statistics.median(small):>13.0f} / {max(small):>4.0f} ms"
            f"  < 2000 ms {verdict(max(render) < 2000)}"
        )
        print(
            f"{'JSON snapshot of every row (server), p50':<46}"
            f"{statistics.median(snapshot_ms):>17.0f} ms{'':>22}  ({snapshot_bytes / mb:.1f} MB)"
        )
        if redraw:
            print(
                f"{'live updates: drawing slice, p50 / longest':<46}"
                f"{statistics.median(redraw):>13.0f} / {max(redraw):>4.0f} ms"
                f"{'':>22}  ({len(redraw)} slices in {args.watch_seconds:g} s)"
            )
        print(f"{'sort by memory usage (click → painted)':<46}{figures['sort']:>19.0f} ms")
        print(
            f"{'dashboard RSS, end / peak':<46}"
            f"{rss_end / mb:>13.0f} / {peak / mb:>4.0f} MB"
            f"{rss_empty / mb:>16.0f} MB (0 pods)"
            f"  < 300 MB {verdict(peak < 300 * mb)}"
        )
        if args.json:
            measured = {
                "render_p50": statistics.median(render),
                "render_max": max(render),
                "snapshot_p50": statistics.median(snapshot_ms),
                "sort": figures["sort"],
                "rss_peak": peak / mb,
            }
            Path(args.json).write_text(json.dumps(measured))
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait()
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
