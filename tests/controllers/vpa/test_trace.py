"""Reading usage traces: quantities, times, and errors that name the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from inplace.controllers.vpa.settings import MIB
from inplace.controllers.vpa.trace import TraceError, read_trace, workload_of


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    return path


def test_read_trace_accepts_quantities_and_times(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "time,pod,container,cpu,memory\n"
        "0,web-0,main,250m,256Mi\n"
        "60,web-0,main,0.5,268435456\n"
        "2026-01-05T00:02:00Z,web-0,main,1,1Gi\n",
    )
    trace = read_trace(path)
    assert [t for t, _ in trace.steps][:2] == [0.0, 60.0]
    assert trace.peaks[("web-0", "main")] == (1000, 1024 * MIB)
    assert trace.step == 60.0
    assert workload_of("web-0") == "web" and workload_of("etl-run-3") == "etl-run"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0,web-0,main,1\n", "trace.csv:1: want time,pod,container,cpu,memory"),
        ("0,web-0,main,1,1Gi\n60,web-0,main,lots,1Gi\n", "trace.csv:2:"),
        ("0,web-0,main,-1,1Gi\n", "trace.csv:1: usage cannot be negative"),
        ("time,pod,container,cpu,memory\n", "no samples"),
    ],
)
def test_bad_traces_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        read_trace(write(tmp_path, text))
