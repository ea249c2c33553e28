"""`inplace replay` as a user runs it: the real command over the shipped day trace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TRACES = Path(__file__).resolve().parents[1] / "controllers" / "vpa" / "traces"


def replay(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="160")
    return subprocess.run(
        [sys.executable, "-m", "inplace", "replay", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )


def test_replay_prints_every_policy_and_draws_the_plot(tmp_path: Path) -> None:
    plot = tmp_path / "day.png"
    done = replay(str(TRACES / "day.csv"), "--no-progress", "--plot", str(plot))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "day.csv: 6 pods over 1.0 days every 60s" in out
    for policy in ("static-peak", "upstream", "inplace", "inplace+pause"):
        assert f"│ {policy} " in out
    for column in ("mem slack", "CPU slack", "OOM kills", "pauses", "resizes", "mem GiB-h"):
        assert column in out
    data = plot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # six pods, two panels each


def test_replay_one_policy_with_given_nodes_and_a_progress_bar() -> None:
    done = replay(
        str(TRACES / "day.csv"),
        "--policy",
        "upstream",
        "--nodes",
        "2",
        "--node-cpu",
        "8",
        "--node-memory",
        "16Gi",
    )
    assert done.returncode == 0, done.stderr
    assert "on 2 node(s) of 8 CPU and 16Gi memory" in done.stdout
    assert "│ upstream " in done.stdout and "static-peak" not in done.stdout


def test_replay_refuses_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("0,web-0,main,1\n")
    done = replay(str(bad), "--no-progress")
    assert done.returncode == 1
    assert "bad.csv:1: want time,pod,container,cpu,memory" in done.stderr
    assert replay(str(tmp_path / "missing.csv")).returncode == 1
    unknown = replay(str(TRACES / "day.csv"), "--policy", "clairvoyant")
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr
    size = replay(str(TRACES / "day.csv"), "--node-memory", "lots")
    assert size.returncode == 2 and "lots" in size.stderr
