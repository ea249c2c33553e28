"""The shipped traces: made by tools/make_vpa_traces.py (same bytes when remade), and the
cluster-shaped ones hold the five labelled shapes over a week."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from inplace.controllers.vpa.trace import read_trace, workload_of

TRACES = Path(__file__).parent / "traces"
TOOL = Path(__file__).parents[3] / "tools" / "make_vpa_traces.py"
SHAPES = {"svc", "jvm", "cache", "batch", "leak"}


def test_the_tool_remakes_the_shipped_traces_byte_for_byte(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(TOOL), "--out", str(tmp_path)], check=True)
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made == sorted(p.name for p in TRACES.iterdir())
    for name in made:
        assert (tmp_path / name).read_bytes() == (TRACES / name).read_bytes(), name


def test_the_cluster_shaped_traces() -> None:
    pods = 0
    for name in ("borg.csv.gz", "alibaba.csv.gz", "jvm.csv.gz"):
        trace = read_trace(TRACES / name)
        assert trace.step == 300.0 and trace.duration >= 7 * 86400 - 300
        shapes = {workload_of(p).split("-")[0] for p in trace.pods()}
        assert shapes <= SHAPES and {"svc", "jvm", "batch", "leak"} <= shapes, name
        pods += len(trace.pods())
    assert pods >= 200 * 3
    assert (
        sum((TRACES / n).stat().st_size for n in ("borg.csv.gz", "alibaba.csv.gz", "jvm.csv.gz"))
        < 1_500_000
    )
