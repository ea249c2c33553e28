"""Make the synthetic usage traces `inplace replay` and its tests use (seeded: same bytes
every run).

    python tools/make_vpa_traces.py [--out tests/controllers/vpa/traces]

Each pod is one CSV series ``time,pod,container,cpu,memory``; a workload is the pod name up
to its last ``-``, its shape the name's first word (``jvm-orders-0`` is a JVM).

``week.csv.gz`` (one-minute samples, 44 pods) and ``day.csv`` (tests) are the first set:
diurnal services (``web``, ``api`` with a sidecar, ``cache``), bursty services (``queue``,
``ingest``) and batch jobs (``etl`` linear growth, ``train`` growth in steps).

``borg.csv.gz``, ``alibaba.csv.gz`` and ``jvm.csv.gz`` are weeks of five-minute samples, the
resolution of the Google 2019 trace's usage records (each the window's peak), made of five
labelled shapes:

* ``svc`` — services with diurnal load and rare spikes;
* ``jvm`` — JVMs: the heap grows toward its maximum, a GC sawtooth on top;
* ``cache`` — caches that grow to a plateau after each start;
* ``batch`` — jobs run after run, each run's peak different;
* ``leak`` — services leaking memory until their next rollout.

The parameters follow what the traces' papers report:

* M. Tirmazi et al., "Borg: the Next Generation", EuroSys '20 (the Google 2019 trace: 8
  clusters, May 2019): usage in 5-minute windows; an extremely heavy-tailed workload, the
  top 1% of jobs consuming over 99% of the resources — pod sizes here are log-normal with
  sigma 1.0 in ``borg`` (a few pods hold most of the memory), batch runs are most of the
  pods, and vertical autoscaling is in use (so traces are of usage, not of limits).
* K. Rzadca et al., "Autopilot: workload autoscaling at Google", EuroSys '20: hand-set
  limits leave 46% relative slack, Autopilot's recommenders 23%, with 10x fewer jobs
  severely hit by OOM kills — the anchors ``inplace replay`` measures against.
* C. Jiang et al., "Characterizing Co-located Workloads in Alibaba Cloud Datacenters", IEEE
  TCC (Alibaba's cluster-trace-v2018: 4,034 machines, 8 days): containers' CPU follows the
  cluster's daily cycle while their memory stays approximately constant, and batch jobs'
  task counts are Zipf-distributed — ``alibaba`` services have a strong CPU day and a
  memory day of a few percent, and batch workloads have Zipf-distributed run counts.
* Y. Cheng et al. and C. Lu et al. on Alibaba's 2017 trace (APSys '18, IEEE BigData '17):
  online services are long-running and steady, batch jobs short and highly dynamic — batch
  runs here last 20 minutes to a few hours, the run-to-run peak varies by a log-normal
  factor (sigma 0.25).

Chosen here, not taken from a paper: a service's spike ramps up over two to four samples
(10-20 minutes; the one-minute ``week`` trace keeps bursts that jump within one sample), a
JVM's sawtooth climbs 1-5% of its heap per sample and drops at once, a cache fills with a
time constant of 1-6 hours, a leak adds 5-40% of its base a day, and every long-running
workload is rolled out (its pod replaced) every 1-4 days.
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
        yield (
            int(t[k]),
            pod,
            "main",
            max(cpu_s[k] + extra_cpu[k], 0.001),
            int(mem_s[k] + extra_mem[k]),
        )


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
        rng,
        "api-0",
        t,
        cpu=(0.05, 0.6),
        memory=(250 * MIB, 350 * MIB),
        containers=("main", "proxy"),
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


STEP5 = 300
Rows = list[tuple[int, str, str, float, int]]


def _noise(rng: np.random.Generator, size: int, sd: float) -> np.ndarray:
    return np.asarray(rng.normal(1.0, sd, size))


def _lives(
    rng: np.random.Generator, t: np.ndarray, days: tuple[float, float]
) -> list[tuple[int, int]]:
    """Index spans of a long-running workload's successive pods: each rollout replaces the
    pod after 1-4 days, the new one starting one sample before the old one ends."""
    spans = []
    start = 0
    while start < t.size - 1:
        end = min(t.size, start + int(rng.uniform(*days) * DAY / STEP5))
        spans.append((start, end))
        start = end - 1
    return spans


def _emit(
    pod: str, t: np.ndarray, cpu: np.ndarray, mem: np.ndarray, container: str = "main"
) -> Rows:
    return [
        (int(t[i]), pod, container, max(float(cpu[i]), 0.01), int(max(mem[i], 16 * MIB)))
        for i in range(t.size)
    ]


def svc(
    rng: np.random.Generator,
    name: str,
    t: np.ndarray,
    *,
    memory: float,
    cpu: float,
    memory_day: float,
    spikes_per_day: float,
    replicas: int,
) -> Rows:
    """A service: CPU follows the day, memory a little (``memory_day`` of its base at the
    peak), and rare spikes of 20-60% of the base that ramp up over 2-4 samples."""
    rows: Rows = []
    load = _load(t, peak_hour=rng.uniform(12.0, 18.0))
    lagged = np.convolve(load, np.ones(3) / 3, mode="same")
    for start, end in _lives(rng, t, (1.0, 4.0)):
        for replica in range(replicas):
            n = end - start
            cpu_s = cpu * (0.15 + 0.85 * load[start:end]) * _noise(rng, n, 0.1)
            mem_s = memory * (1 + memory_day * lagged[start:end]) * _noise(rng, n, 0.01)
            for _ in range(rng.poisson(spikes_per_day * n * STEP5 / DAY)):
                at = int(rng.integers(0, n))
                ramp, hold = int(rng.integers(2, 5)), int(rng.integers(2, 7))
                height = memory * rng.uniform(0.2, 0.6)
                shape = np.concatenate([np.arange(1, ramp + 1) / ramp, np.ones(hold), [0.5, 0.2]])
                span = slice(at, min(at + shape.size, n))
                mem_s[span] += height * shape[: span.stop - span.start]
                cpu_s[span] *= 1.8
            pod = f"{name}-{start}x{replica}"
            rows += _emit(pod, t[start:end], cpu_s, mem_s)
    return rows


def jvm(rng: np.random.Generator, name: str, t: np.ndarray, *, heap: float, cpu: float) -> Rows:
    """A JVM: the heap in use grows toward its maximum over hours after each start (time
    constant 2-8 h), with a GC sawtooth on top (climbing 8-20% of the heap over 20-60
    minutes, dropping at once), plus off-heap memory of a fifth of the heap."""
    rows: Rows = []
    load = _load(t, peak_hour=rng.uniform(12.0, 18.0))
    for start, end in _lives(rng, t, (1.0, 4.0)):
        n = end - start
        age = np.arange(n) * STEP5
        tau = rng.uniform(2, 8) * 3600
        period = rng.uniform(20, 60) * 60
        amplitude = heap * rng.uniform(0.08, 0.2)
        base = heap * (0.3 + 0.5 * (1 - np.exp(-age / tau)))
        saw = amplitude * ((age + rng.uniform(0, period)) % period) / period
        mem_s = (0.2 * heap + base + saw) * _noise(rng, n, 0.005)
        cpu_s = cpu * (0.2 + 0.8 * load[start:end]) * _noise(rng, n, 0.15)
        rows += _emit(f"{name}-{start}", t[start:end], cpu_s, mem_s)
    return rows


def cache(
    rng: np.random.Generator, name: str, t: np.ndarray, *, plateau: float, cpu: float
) -> Rows:
    """A cache: after each start it fills toward its plateau (time constant 1-6 h), then
    holds it within a few percent."""
    rows: Rows = []
    for start, end in _lives(rng, t, (1.0, 4.0)):
        n = end - start
        age = np.arange(n) * STEP5
        tau = rng.uniform(1, 6) * 3600
        mem_s = plateau * (0.1 + 0.9 * (1 - np.exp(-age / tau))) * _noise(rng, n, 0.01)
        cpu_s = cpu * _noise(rng, n, 0.2)
        rows += _emit(f"{name}-{start}", t[start:end], cpu_s, mem_s)
    return rows


def leak(rng: np.random.Generator, name: str, t: np.ndarray, *, memory: float, cpu: float) -> Rows:
    """A service leaking 5-40% of its base memory a day until its next rollout."""
    rows: Rows = []
    rate = rng.uniform(0.05, 0.4)
    load = _load(t, peak_hour=rng.uniform(12.0, 18.0))
    for start, end in _lives(rng, t, (1.0, 4.0)):
        n = end - start
        age_days = np.arange(n) * STEP5 / DAY
        mem_s = memory * (1 + rate * age_days) * _noise(rng, n, 0.01)
        cpu_s = cpu * (0.2 + 0.8 * load[start:end]) * _noise(rng, n, 0.1)
        rows += _emit(f"{name}-{start}", t[start:end], cpu_s, mem_s)
    return rows


def runs(
    rng: np.random.Generator,
    name: str,
    t: np.ndarray,
    *,
    memory: float,
    cpu: float,
    minutes: tuple[float, float],
    count: int | None = None,
) -> Rows:
    """A batch workload: runs one after another (or ``count`` runs spread over the week),
    each 20 minutes to hours long, its memory ramping up over the first 10-40% of the run to
    a peak that differs from run to run (log-normal, sigma 0.25), then holding it."""
    rows: Rows = []
    index = int(rng.integers(0, 24))
    run = 0
    while index < t.size - 2:
        n = max(3, int(rng.uniform(*minutes) * 60 / STEP5))
        n = min(n, t.size - index)
        peak = memory * float(rng.lognormal(0.0, 0.25))
        ramp = max(1.0, n * rng.uniform(0.1, 0.4))
        level = np.minimum(1.0, (np.arange(n) + 1) / ramp)
        mem_s = (0.15 * peak + 0.85 * peak * level) * _noise(rng, n, 0.01)
        cpu_s = cpu * _noise(rng, n, 0.15)
        rows += _emit(f"{name}-{run}", t[index : index + n], cpu_s, mem_s)
        run += 1
        if count is None:
            index += n + 1 + int(rng.exponential(45 * 60 / STEP5))
        else:
            index += n + 1 + int(rng.exponential(7 * DAY / STEP5 / count))
    return rows


def _size(rng: np.random.Generator, median_mib: float, sigma: float) -> float:
    """A log-normal size, clipped to 64Mi-6Gi."""
    return float(np.clip(rng.lognormal(math.log(median_mib), sigma), 64, 6144)) * MIB


def borg(rng: np.random.Generator) -> Rows:
    """Google-like: heavy-tailed sizes (sigma 1.0), every shape, batch runs most of the pods."""
    t = np.arange(0, 7 * DAY, STEP5, dtype=np.int64)
    rows: Rows = []
    for i in range(8):
        rows += svc(
            rng,
            f"svc-{i}",
            t,
            memory=_size(rng, 300, 1.0),
            cpu=rng.uniform(0.1, 2.0),
            memory_day=rng.uniform(0.05, 0.3),
            spikes_per_day=rng.uniform(0.1, 0.5),
            replicas=int(rng.integers(1, 4)),
        )
    for i in range(5):
        rows += jvm(rng, f"jvm-{i}", t, heap=_size(rng, 800, 0.8), cpu=rng.uniform(0.2, 1.5))
    for i in range(4):
        rows += cache(
            rng, f"cache-{i}", t, plateau=_size(rng, 600, 1.0), cpu=rng.uniform(0.05, 0.5)
        )
    for i in range(3):
        rows += leak(rng, f"leak-{i}", t, memory=_size(rng, 300, 0.8), cpu=rng.uniform(0.05, 0.5))
    for i in range(8):
        rows += runs(
            rng,
            f"batch-{i}",
            t,
            memory=_size(rng, 500, 1.0),
            cpu=rng.uniform(0.5, 3.0),
            minutes=(20, 240),
        )
    return rows


def alibaba(rng: np.random.Generator) -> Rows:
    """Alibaba-like: services whose CPU follows the day and memory barely moves, and batch
    workloads with Zipf-distributed run counts."""
    t = np.arange(0, 7 * DAY, STEP5, dtype=np.int64)
    rows: Rows = []
    for i in range(12):
        rows += svc(
            rng,
            f"svc-{i}",
            t,
            memory=_size(rng, 1024, 0.6),
            cpu=rng.uniform(0.2, 2.0),
            memory_day=rng.uniform(0.01, 0.05),
            spikes_per_day=rng.uniform(0.05, 0.3),
            replicas=int(rng.integers(1, 4)),
        )
    for i in range(3):
        rows += jvm(rng, f"jvm-{i}", t, heap=_size(rng, 1500, 0.5), cpu=rng.uniform(0.5, 2.0))
    rows += leak(rng, "leak-0", t, memory=_size(rng, 500, 0.5), cpu=rng.uniform(0.1, 0.5))
    counts = np.minimum(200, np.ceil(120 / np.arange(1, 11) ** 1.1)).astype(int)  # Zipf
    for i, count in enumerate(counts):
        rows += runs(
            rng,
            f"batch-{i}",
            t,
            memory=_size(rng, 400, 0.8),
            cpu=rng.uniform(0.5, 2.0),
            minutes=(15, 90),
            count=int(count),
        )
    return rows


def jvms(rng: np.random.Generator) -> Rows:
    """A Java shop: JVMs, caches and leaks, with a few services and batch workloads."""
    t = np.arange(0, 7 * DAY, STEP5, dtype=np.int64)
    rows: Rows = []
    for i in range(10):
        rows += jvm(rng, f"jvm-{i}", t, heap=_size(rng, 1024, 0.7), cpu=rng.uniform(0.2, 2.0))
    for i in range(5):
        rows += cache(
            rng, f"cache-{i}", t, plateau=_size(rng, 800, 0.7), cpu=rng.uniform(0.05, 0.5)
        )
    for i in range(4):
        rows += leak(rng, f"leak-{i}", t, memory=_size(rng, 400, 0.6), cpu=rng.uniform(0.05, 0.5))
    for i in range(4):
        rows += svc(
            rng,
            f"svc-{i}",
            t,
            memory=_size(rng, 400, 0.6),
            cpu=rng.uniform(0.1, 1.0),
            memory_day=rng.uniform(0.05, 0.2),
            spikes_per_day=rng.uniform(0.1, 0.5),
            replicas=2,
        )
    for i in range(3):
        rows += runs(
            rng,
            f"batch-{i}",
            t,
            memory=_size(rng, 800, 0.6),
            cpu=rng.uniform(0.5, 2.0),
            minutes=(30, 300),
        )
    return rows


def write(
    rows: list[tuple[int, str, str, float, int]], path: Path, *, coarse: bool = False
) -> None:
    """``coarse``: CPU to 0.01 cores and memory in whole MiB (a quarter of the bytes)."""
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    text = io.StringIO()
    text.write("time,pod,container,cpu,memory\n")
    for at, pod, container, cpu, memory in rows:
        if coarse:
            text.write(f"{at},{pod},{container},{cpu:.2f},{round(memory / MIB)}Mi\n")
        else:
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
    for offset, (name, make) in enumerate(
        (("borg", borg), ("alibaba", alibaba), ("jvm", jvms)), start=2
    ):
        write(make(np.random.default_rng(SEED + offset)), args.out / f"{name}.csv.gz", coarse=True)


if __name__ == "__main__":
    main()
