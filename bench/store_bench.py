"""Benchmark of inplace.store against naive baselines measured in the same run.

Run: `python bench/store_bench.py [--quick] [--json FILE]`. Prints, for each figure, the store's
number, the baseline's, and PASS/MISS against the target (never exits non-zero on a miss):

- durable writes (WAL, synchronous=FULL): creates/s and CAS updates/s with 64 concurrent
  callers (so group commit has something to group), p50/p99 call latency; baseline: a plain
  sqlite3 loop, one transaction (and fsync) per write, json.dumps.
- list of 10,000 pods at the current revision (and, for information, at a past revision
  through SQL), p50/p99; baseline: SELECT all rows + json.loads per row.
- watch fan-out to 100 watchers: from the start of the write call to each watcher's receipt,
  p50/p99 over every (write, watcher) pair; baseline: the same writes' own call latency with no
  watchers (what delivery cannot beat).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from inplace.store import Store

TARGET_WRITES_PER_S = 2000
TARGET_LIST_MS = 200
TARGET_WATCH_P99_MS = 20


def make_pod(i: int, namespace: str = "default") -> dict[str, Any]:
    """A realistic ~1 KB pod."""
    name = f"web-{i}"
    resources = {
        "requests": {"cpu": "500m", "memory": "256Mi"},
        "limits": {"cpu": "1", "memory": "512Mi"},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"0b6f2a0e-1f0e-4d5e-9a3b-{i:012d}",
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {"inplace.dev/resize-policy": "InPlaceOnly"},
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "generation": 1,
        },
        "spec": {
            "nodeName": f"node-{i % 10}",
            "restartPolicy": "Always",
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.25",
                    "command": ["sleep", "3600"],
                    "resources": resources,
                    "resizePolicy": [
                        {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                        {"resourceName": "memory", "restartPolicy": "NotRequired"},
                    ],
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                }
            ],
        },
        "status": {
            "phase": "Running",
            "qosClass": "Burstable",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}
            ],
            "containerStatuses": [
                {
                    "name": "app",
                    "ready": True,
                    "restartCount": 0,
                    "allocatedResources": {"cpu": "500m", "memory": "256Mi"},
                    "resources": resources,
                }
            ],
        },
    }


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def row(label: str, ours: str, baseline: str, note: str = "") -> None:
    print(f"  {label:<34} {ours:<28} {baseline:<28} {note}")


# -- writes ------------------------------------------------------------------------------------


def naive_writes(path: str, n: int) -> tuple[float, list[float]]:
    """One transaction + fsync per write: the kine-without-batching floor."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute(
        "CREATE TABLE kine (id INTEGER PRIMARY KEY, name TEXT, created INT, deleted INT,"
        " create_revision INT, prev_revision INT, value BLOB)"
    )
    conn.execute("CREATE INDEX kine_name_id ON kine (name, id)")
    latencies = []
    start = time.perf_counter()
    for i in range(n):
        t0 = time.perf_counter()
        pod = make_pod(i)
        pod["metadata"]["resourceVersion"] = str(i + 1)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO kine VALUES (?, ?, 1, 0, ?, 0, ?)",
            (i + 1, f"/pods/default/web-{i}", i + 1, json.dumps(pod).encode()),
        )
        conn.execute("COMMIT")
        latencies.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - start
    conn.close()
    return n / elapsed, latencies


async def store_writes(
    store: Store, n: int, callers: int, *, update: bool, tag: str
) -> tuple[float, list[float]]:
    latencies: list[float] = []
    per_caller = n // callers

    async def caller(c: int) -> None:
        revisions: dict[str, int] = {}
        if update:
            for entry in (await store.list(f"/pods/{tag}-{c}/")).items:
                revisions[entry.key] = entry.revision
        for j in range(per_caller):
            i = c * per_caller + j
            t0 = time.perf_counter()
            if update:
                key = f"/pods/{tag}-{c}/web-{j % 20}"
                pod = make_pod(i, f"{tag}-{c}")
                entry = await store.update(key, pod, expected_revision=revisions[key])
                revisions[key] = entry.revision
            else:
                await store.create(f"/pods/{tag}-{c}/web-{j}", make_pod(i, f"{tag}-{c}"))
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    await asyncio.gather(*(caller(c) for c in range(callers)))
    return len(latencies) / (time.perf_counter() - start), latencies


async def bench_writes(tmp: str, n: int) -> dict[str, float]:
    print("\ndurable writes (WAL, synchronous=FULL)")
    row("", "store", "baseline (txn per write)")
    base_rate, base_lat = naive_writes(os.path.join(tmp, "naive.db"), max(500, n // 4))
    store = await Store.open(os.path.join(tmp, "writes.db"))
    try:
        seq_rate, _ = await store_writes(store, 500, 1, update=False, tag="seq")
        rate, lat = await store_writes(store, n, 64, update=False, tag="c")
        upd_rate, upd_lat = await store_writes(store, n, 64, update=True, tag="c")
    finally:
        await store.close()
    base = f"{base_rate:,.0f}/s"
    row(
        "creates/s (64 callers)",
        f"{rate:,.0f}/s",
        base,
        f"x{rate / base_rate:.1f}  target >= {TARGET_WRITES_PER_S}: "
        f"{verdict(rate >= TARGET_WRITES_PER_S)}",
    )
    row(
        "CAS updates/s (64 callers)",
        f"{upd_rate:,.0f}/s",
        base,
        f"x{upd_rate / base_rate:.1f}  target >= {TARGET_WRITES_PER_S}: "
        f"{verdict(upd_rate >= TARGET_WRITES_PER_S)}",
    )
    row("creates/s (1 caller)", f"{seq_rate:,.0f}/s", base)
    blat = f"{pct(base_lat, 0.5) * 1e3:.2f} / {pct(base_lat, 0.99) * 1e3:.2f} ms"
    row("create p50 / p99", f"{pct(lat, 0.5) * 1e3:.2f} / {pct(lat, 0.99) * 1e3:.2f} ms", blat)
    row(
        "CAS update p50 / p99",
        f"{pct(upd_lat, 0.5) * 1e3:.2f} / {pct(upd_lat, 0.99) * 1e3:.2f} ms",
        blat,
    )
    return {"creates_per_s": rate, "updates_per_s": upd_rate, "create_p50": pct(lat, 0.5) * 1e3}


# -- list --------------------------------------------------------------------------------------


async def bench_list(tmp: str, count: int, rounds: int) -> dict[str, float]:
    print(f"\nlist of {count:,} pods")
    row("", "store", "baseline (SELECT + json.loads)")
    path = os.path.join(tmp, "list.db")
    store = await Store.open(path, durability="normal")
    try:
        for start in range(0, count, 1000):
            await asyncio.gather(
                *(
                    store.create(f"/pods/default/web-{i:05d}", make_pod(i))
                    for i in range(start, start + 1000)
                )
            )
        past = store.current_revision
        await store.create("/pods/other/x", make_pod(0, "other"))
        times: list[float] = []
        past_times: list[float] = []
        for _ in range(rounds):
            result = None  # free the previous page outside the timed region
            t0 = time.perf_counter()
            result = await store.list("/pods/default/")
            times.append(time.perf_counter() - t0)
            assert len(result.items) == count
            result = None
            t0 = time.perf_counter()
            result = await store.list("/pods/default/", revision=past)
            past_times.append(time.perf_counter() - t0)
            assert len(result.items) == count
    finally:
        await store.close()

    conn = sqlite3.connect(path)
    base_times: list[float] = []
    items: list[Any] = []
    for _ in range(rounds):
        items = []
        t0 = time.perf_counter()
        rows = conn.execute(
            "SELECT name, value FROM kine WHERE name >= '/pods/default/'"
            " AND name < '/pods/default0' AND deleted = 0 ORDER BY name"
        ).fetchall()
        items = [(name, json.loads(value)) for name, value in rows]
        base_times.append(time.perf_counter() - t0)
        assert len(items) == count
    conn.close()
    p50, p99 = pct(times, 0.5) * 1e3, pct(times, 0.99) * 1e3
    b50, b99 = pct(base_times, 0.5) * 1e3, pct(base_times, 0.99) * 1e3
    row(
        "current revision p50 / p99",
        f"{p50:.1f} / {p99:.1f} ms",
        f"{b50:.1f} / {b99:.1f} ms",
        f"x{b50 / p50:.1f} faster  target p99 <= {TARGET_LIST_MS} ms: "
        f"{verdict(p99 <= TARGET_LIST_MS)}",
    )
    s50, s99 = pct(past_times, 0.5) * 1e3, pct(past_times, 0.99) * 1e3
    row("past revision (SQL) p50 / p99", f"{s50:.1f} / {s99:.1f} ms", f"{b50:.1f} / {b99:.1f} ms")
    return {"list_p50": p50, "list_p99": p99, "list_count": count}


# -- watch -------------------------------------------------------------------------------------


async def watch_round(
    store: Store, watchers: int, writes: int, writers: int
) -> tuple[list[float], list[float]]:
    """(write call latencies, delivery latencies over every watcher x write)."""
    starts: dict[int, float] = {}
    deliveries: list[float] = []
    write_lat: list[float] = []
    streams = [store.watch("/pods/", from_revision=store.current_revision) for _ in range(watchers)]

    async def consume(stream: Any) -> None:
        seen = 0
        async for event in stream:
            deliveries.append(time.perf_counter() - starts[event.value["seq"]])
            seen += 1
            if seen == writes:
                return

    consumers = [asyncio.create_task(consume(s)) for s in streams]
    keys = [f"/pods/default/watch-{w}" for w in range(writers)]
    for key in keys:
        if await store.get(key) is None:
            await store.create(key, {"metadata": {"name": key}, "seq": -1})
    if watchers:  # the setup creates above were delivered; drop them from the sample
        await asyncio.sleep(0.05)
        deliveries.clear()
        for stream in streams:
            await stream.aclose()
        consumers = []
        streams = [
            store.watch("/pods/", from_revision=store.current_revision) for _ in range(watchers)
        ]
        consumers = [asyncio.create_task(consume(s)) for s in streams]
    seq = 0

    async def writer(key: str, n: int) -> None:
        nonlocal seq
        for _ in range(n):
            seq += 1
            mine = seq
            pod = make_pod(mine)
            pod["seq"] = mine
            t0 = time.perf_counter()
            starts[mine] = t0
            await store.update(key, pod, expected_revision=None)
            write_lat.append(time.perf_counter() - t0)
            await asyncio.sleep(0.002)  # a steady stream, not a saturating burst

    await asyncio.gather(*(writer(k, writes // writers) for k in keys))
    await asyncio.gather(*consumers)
    for stream in streams:
        await stream.aclose()
    return write_lat, deliveries


async def bench_watch(tmp: str, watchers: int, writes: int) -> dict[str, float]:
    print(f"\nwatch fan-out: {writes} writes (4 writers) to {watchers} watchers")
    row("", "store", "baseline")
    store = await Store.open(os.path.join(tmp, "watch.db"))
    try:
        base_lat, _ = await watch_round(store, 0, writes, 4)
        one_lat, one_del = await watch_round(store, 1, writes, 4)
        write_lat, deliveries = await watch_round(store, watchers, writes, 4)
    finally:
        await store.close()
    assert len(deliveries) == watchers * writes
    p50, p99 = pct(deliveries, 0.5) * 1e3, pct(deliveries, 0.99) * 1e3
    b50, b99 = pct(base_lat, 0.5) * 1e3, pct(base_lat, 0.99) * 1e3
    row(
        f"delivery to {watchers} p50 / p99",
        f"{p50:.2f} / {p99:.2f} ms",
        f"{b50:.2f} / {b99:.2f} ms (write only)",
        f"target p99 <= {TARGET_WATCH_P99_MS} ms: {verdict(p99 <= TARGET_WATCH_P99_MS)}",
    )
    row(
        "delivery to 1 p50 / p99",
        f"{pct(one_del, 0.5) * 1e3:.2f} / {pct(one_del, 0.99) * 1e3:.2f} ms",
        f"{pct(one_lat, 0.5) * 1e3:.2f} / {pct(one_lat, 0.99) * 1e3:.2f} ms (write only)",
    )
    row(
        f"write p50 / p99 with {watchers}",
        f"{pct(write_lat, 0.5) * 1e3:.2f} / {pct(write_lat, 0.99) * 1e3:.2f} ms",
        f"{b50:.2f} / {b99:.2f} ms (no watchers)",
    )
    return {"watch_p50": p50, "watch_p99": p99, "watchers": watchers}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs (smoke test)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    writes, rounds, watch_writes = (2000, 5, 200) if args.quick else (8000, 20, 1000)
    print(
        f"inplace.store benchmark (python {sys.version.split()[0]}, "
        f"sqlite {sqlite3.sqlite_version}, {os.cpu_count()} cpus)"
    )
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMPDIR")) as tmp:
        figures = await bench_writes(tmp, writes)
        figures |= await bench_list(tmp, 10_000, rounds)
        figures |= await bench_watch(tmp, 100, watch_writes)
    if args.json:
        Path(args.json).write_text(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main())
