"""Make the synthetic usage traces `inplace replay` and its tests use (seeded: same bytes
every run).

    python tools/make_vpa_traces.py [--out tests/controllers/vpa/traces]

Three kinds of workload, each pod one CSV series ``time,pod,container,cpu,memory`` (seconds,
cores, bytes); a workload is the pod name up to its last ``-``:

* diurnal services (``web`` with two replicas, ``api`` with a sidecar, ``cache``): load
  follows the day, peaking mid-afternoon, lighter at the weekend; memory follows load with
  a lag, and ``cache`` slowly grows;
* bursty services (``queue``, ``ingest`` with two replicas): a quiet baseline with bursts of
  CPU and memory, a few an day at random, lasting minutes;
* batch jobs (``etl``, ``train``): runs one after another, each growing its memory from a
  small start to a size that varies from run to run (``etl`` linearly, ``train`` in steps).

``week.csv.gz`` is a week at 1-minute resolution (what the benchmark figures use);
``day.csv`` is a day at 1-minute resolution with one workload of each kind (for tests).
"""

from __future__ import annotations

import argparse
import gzip
import io
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

DAY = 86400
MIB = 1024 * 1024
SEED = 20261203

Series = Iterator[tuple[int, str, str, float, int]]


def _load(t: np.ndarray, peak_hour: float = 15.0) -> np.ndarray:
    """Diurnal load in [0, 1]: high in the afternoon, low at night, 40% lower at weekends."""
    phase = (t % DAY) / DAY - peak_hour / 24.0
    load = 0.5 + 0.5 * np.cos(2 * math.pi * phase)
    weekend = ((t // DAY) % 7) >= 5
    return np.where(weekend, load * 0.6, load)


def diurnal(
    rng: np.random.Generator,
    pod: str,
    t: np.ndarray,
    *,
    cpu: tuple[float, float],
    memory: tuple[float, float],
    growth_per_day: float = 0.0,
    containers: tuple[str, ...] = ("main",),
) -> Series:
    load = _load(t, peak_hour=rng.uniform(13.0, 17.0))
    lagged = np.convolve(load, np.ones(6) / 6, mode="same")  # memory follows load slowly
    for container in containers:
        share = 1.0 if container == "main" else 0.15
        cpu_s = share * (cpu[0] + cpu[1] * load) * rng.normal(1.0, 0.08, t.size)
        mem_s = share * (memory[0] + memory[1] * lagged + growth_per_day * t / DAY)
        mem_s = mem_s * rng.normal(1.0, 0.015, t.size)
        for i in range(t.size):
            yield int(t[i]), pod, container, max(cpu_s[i], 0.001), int(max(mem_s[i], 8 * MIB))


def bursty(
    rng: np.random.Generator,
    pod: str,
    t: np.ndarray,
    *,
    cpu: float,
    memory: float,
    bursts_per_day: float,
) -> Series:
    step = float(t[1] - t[0])
    cpu_s = cpu * rng.normal(1.0, 0.1, t.size)
    mem_s = memory * rng.normal(1.0, 0.02, t.size)
    extra_cpu = np.zeros(t.size)
    extra_mem = np.zeros(t.size)
    i = 0
    while i < t.size:
        i += int(rng.exponential(DAY / bursts_per_day / step)) + 1
        length = max(1, int(rng.uniform(5 * 60, 40 * 60) / step))
        height_cpu = cpu * rng.uniform(2.0, 5.0)
        height_mem = memory * rng.uniform(0.4, 1.2)
        for k in range(i, min(i + length, t.size)):
            ramp = min(1.0, (k - i + 1) / max(1, length // 4))
            extra_cpu[k] = max(extra_cpu[k], height_cpu)
            extra_mem[k] = max(extra_mem[k], height_mem * ramp)
        i += length
    for k in range(t.size):
        yield int(t[k]), pod, "main", max(cpu_s[k] + extra_cpu[k], 0.001), int(mem_s[k] + extra_mem[k])


def batch(
    rng: np.random.Generator,
    workload: str,
    t: np.ndarray,
    *,
    cpu: float,
    final_memory: float,
    hours: tuple[float, float],
    steps: bool,
) -> Series:
    step = float(t[1] - t[0])
    start = int(rng.uniform(0, 2 * 3600) / step)
    run = 0
    while start < t.size:
        length = int(rng.uniform(*hours) * 3600 / step)
        end = min(start + length, t.size)
        final = final_memory * rng.uniform(0.7, 1.3)
        pod = f"{workload}-{run}"
        for k in range(start, end):
            progress = (k - start) / max(1, length - 1)
            if steps:
                progress = math.floor(progress * 5) / 5 + 0.2
            mem = (150 * MIB + (final - 150 * MIB) * min(progress, 1.0)) * rng.normal(1.0, 0.01)
            yield int(t[k]), pod, "main", max(cpu * rng.normal(1.0, 0.15), 0.01), int(mem)
        run += 1
        start = end + int(rng.uniform(0.5, 3) * 3600 / step)


def week(rng: np.random.Generator) -> list[tuple[int, str, str, float, int]]:
    t = np.arange(0, 7 * DAY, 60, dtype=np.int64)
    rows: list[tuple[int, str, str, float, int]] = []
    for pod in ("web-0", "web-1"):
        rows += diurnal(rng, pod, t, cpu=(0.10, 0.9), memory=(300 * MIB, 500 * MIB))
    rows += diurnal(
        rng, "api-0", t, cpu=(0.05, 0.6), memory=(250 * MIB, 350 * MIB), containers=("main", "proxy")
    )
    rows += diurnal(
        rng, "cache-0", t, cpu=(0.05, 0.2), memory=(900 * MIB, 300 * MIB), growth_per_day=60 * MIB
    )
    rows += bursty(rng, "queue-0", t, cpu=0.08, memory=250 * MIB, bursts_per_day=5)
    for pod in ("ingest-0", "ingest-1"):
        rows += bursty(rng, pod, t, cpu=0.15, memory=400 * MIB, bursts_per_day=3)
    rows += batch(rng, "etl", t, cpu=1.2, final_memory=1800 * MIB, hours=(3, 8), steps=False)
    rows += batch(rng, "train", t, cpu=1.8, final_memory=2600 * MIB, hours=(6, 14), steps=True)
    return rows


def day(rng: np.random.Generator) -> list[tuple[int, str, str, float, int]]:
    t = np.arange(0, DAY, 60, dtype=np.int64)
    rows: list[tuple[int, str, str, float, int]] = []
    rows += diurnal(rng, "web-0", t, cpu=(0.10, 0.9), memory=(300 * MIB, 500 * MIB))
    rows += bursty(rng, "queue-0", t, cpu=0.08, memory=250 * MIB, bursts_per_day=5)
    rows += batch(rng, "etl", t, cpu=1.2, final_memory=1800 * MIB, hours=(3, 6), steps=False)
    return rows


def write(rows: list[tuple[int, str, str, float, int]], path: Path) -> None:
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    text = io.StringIO()
    text.write("time,pod,container,cpu,memory\n")
    for at, pod, container, cpu, memory in rows:
        text.write(f"{at},{pod},{container},{cpu:.3f},{memory}\n")
    data = text.getvalue().encode()
    if path.suffix == ".gz":
        # mtime=0: the same bytes on every run.
        with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
            out.write(data)
    else:
        path.write_bytes(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("tests/controllers/vpa/traces"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    write(week(np.random.default_rng(SEED)), args.out / "week.csv.gz")
    write(day(np.random.default_rng(SEED + 1)), args.out / "day.csv")


if __name__ == "__main__":
    main()
