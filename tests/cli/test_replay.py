"""`inplace replay` as a user runs it: the real command over the shipped day trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TRACES = Path(__file__).resolve().parents[1] / "controllers" / "vpa" / "traces"


def replay(*args: str, columns: int = 160) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS=str(columns))
    return subprocess.run(
        [sys.executable, "-m", "inplace", "replay", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )


def is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_replay_prints_every_policy_and_draws_the_summary_and_the_pods_asked_for(
    tmp_path: Path,
) -> None:
    plot = tmp_path / "day.png"
    done = replay(str(TRACES / "day.csv"), "--no-progress", "--plot", str(plot), "--pods", "web-0")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "day.csv: 6 pods over 1.0 days every 60s" in out
    for policy in ("static-peak", "upstream", "inplace", "inplace+pause"):
        assert f" {policy} " in out and f"  {policy}: " in out  # a row, and what it is
    for column in ("memory slack", "memory saved", "OOM kills", "pauses", "CPU slack"):
        assert column in out
    assert "…" not in out  # no name cut short
    assert is_png(plot) and plot.stat().st_size > 30_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day-web-0-main.png", "day.png"]
    assert is_png(tmp_path / "day-web-0-main.png")


def test_a_narrow_terminal_gets_one_block_per_policy_with_full_names() -> None:
    done = replay(
        str(TRACES / "day.csv"), "--no-progress", "--policy", "upstream", "--policy",
        "static-peak", columns=50,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "static-peak" in lines and "upstream" in lines  # a heading each, baseline first
    assert lines.index("static-peak") < lines.index("upstream")
    saved = [line for line in lines if "memory-hours saved vs static-peak" in line]
    assert len(saved) == 2 and saved[0].endswith(" 0.0%")
    assert any(line.startswith("  memory requested (GiB-hours)") for line in lines)
    assert "…" not in done.stdout


def test_json_for_scripts(tmp_path: Path) -> None:
    done = replay(
        str(TRACES / "day.csv"), "--json", "--policy", "inplace", "--policy", "static-peak"
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["trace"] == "day.csv" and data["pods"] == 6 and data["step_seconds"] == 60
    by_name = {p["policy"]: p for p in data["policies"]}
    assert list(by_name) == ["static-peak", "inplace"]
    assert by_name["static-peak"]["oom_kills"] == 0 and by_name["static-peak"]["memory_saved"] == 0
    inplace = by_name["inplace"]
    assert 0 < inplace["memory_slack"] < by_name["static-peak"]["memory_slack"]
    assert inplace["memory_saved"] > 0 and inplace["resizes"] > 0


def test_the_worst_pods_get_pages(tmp_path: Path) -> None:
    plot = tmp_path / "w.png"
    done = replay(
        str(TRACES / "day.csv"), "--no-progress", "--policy", "inplace", "--plot", str(plot),
        "--worst", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pages = sorted(p.name for p in tmp_path.iterdir() if p != plot)
    assert len(pages) == 2 and all(p.startswith("w-") for p in pages)


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
    assert " upstream " in done.stdout and " static-peak " not in done.stdout


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
    pod = replay(str(TRACES / "day.csv"), "--pods", "web-9")
    assert pod.returncode == 2 and "no pod web-9 in day.csv" in pod.stderr
