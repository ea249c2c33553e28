"""Usage traces for ``inplace replay``: CSV rows ``time,pod,container,cpu,memory``.

Time is seconds from the trace's start or RFC 3339; CPU is cores or a quantity such as
``250m``; memory is bytes or a quantity; ``.csv.gz`` is read too, and a header row is
optional. A pod exists from its first row to its last; its workload (the VPA's target) is
its name up to the last ``-`` (``web-0`` and ``web-1`` are two replicas of ``web``).
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from inplace.api.quantity import Quantity, QuantityError
from inplace.api.timestamps import parse_rfc3339

__all__ = ["Row", "Trace", "TraceError", "read_trace", "workload_of"]


class TraceError(ValueError):
    """A trace that cannot be read; the message names the line."""


@dataclass(frozen=True)
class Row:
    pod: str
    container: str
    cpu_milli: int
    memory: int


@dataclass
class Trace:
    """Rows grouped by time step, and what is known about each pod from the whole trace."""

    steps: list[tuple[float, list[Row]]]
    first_seen: dict[str, float] = field(default_factory=dict)
    last_seen: dict[str, float] = field(default_factory=dict)
    peaks: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    """(pod, container) → (peak CPU millicores, peak memory bytes)."""
    template_peaks: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    """(workload, container) → the peaks over all the workload's pods (its hand-set size)."""
    containers: dict[str, list[str]] = field(default_factory=dict)

    @property
    def duration(self) -> float:
        if not self.steps:
            return 0.0
        return self.steps[-1][0] - self.steps[0][0]

    @property
    def step(self) -> float:
        """The trace's sampling period (the smallest gap between two time steps)."""
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(self.steps)]
        return min(gaps) if gaps else 60.0

    def pods(self) -> list[str]:
        return sorted(self.first_seen)


def workload_of(pod: str) -> str:
    return pod.rsplit("-", 1)[0] if "-" in pod else pod


def _time(raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        return parse_rfc3339(raw).timestamp()


def _cpu_milli(raw: str) -> int:
    return Quantity.parse(raw.strip()).milli_value()


def _bytes(raw: str) -> int:
    return Quantity.parse(raw.strip()).value()


def _open(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def read_trace(path: Path) -> Trace:
    """Parse a trace file (``.csv`` or ``.csv.gz``; a header row is optional)."""
    by_time: dict[float, list[Row]] = {}
    with _open(path) as handle:
        for number, fields in enumerate(csv.reader(handle), start=1):
            if not fields or fields[0].startswith("#"):
                continue
            if number == 1 and fields[0].strip().lower() == "time":
                continue
            if len(fields) != 5:
                raise TraceError(f"{path}:{number}: want time,pod,container,cpu,memory")
            try:
                at = _time(fields[0])
                row = Row(fields[1], fields[2], _cpu_milli(fields[3]), _bytes(fields[4]))
            except (ValueError, QuantityError) as exc:
                raise TraceError(f"{path}:{number}: {exc}") from exc
            if row.cpu_milli < 0 or row.memory < 0:
                raise TraceError(f"{path}:{number}: usage cannot be negative")
            by_time.setdefault(at, []).append(row)
    if not by_time:
        raise TraceError(f"{path}: no samples")
    trace = Trace(sorted(by_time.items()))
    for at, rows in trace.steps:
        for row in rows:
            trace.first_seen.setdefault(row.pod, at)
            trace.last_seen[row.pod] = at
            key = (row.pod, row.container)
            cpu, memory = trace.peaks.get(key, (0, 0))
            trace.peaks[key] = (max(cpu, row.cpu_milli), max(memory, row.memory))
            template = (workload_of(row.pod), row.container)
            cpu, memory = trace.template_peaks.get(template, (0, 0))
            trace.template_peaks[template] = (max(cpu, row.cpu_milli), max(memory, row.memory))
            names = trace.containers.setdefault(row.pod, [])
            if row.container not in names:
                names.append(row.container)
    return trace
