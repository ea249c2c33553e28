"""`inplace stress` as a program: its exit, its output, and what a memory limit does to it."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from inplace.cli.stress import parse_seconds, parse_size

CGROUP_MEMORY = Path("/sys/fs/cgroup/memory")


def stress(
    *args: str, preexec: object = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inplace", "stress", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("text", "size"),
    [("500M", 500 * 10**6), ("1.5G", 1500 * 10**6), ("512Mi", 512 * 2**20), ("4096", 4096)],
)
def test_sizes_are_quantities(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["0", "-1M", "lots", "1g"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_size(text)


@pytest.mark.parametrize(("text", "seconds"), [("5", 5.0), ("0.5", 0.5), ("1m30s", 90.0)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_seconds(text) == seconds


def test_memory_workers_allocate_hold_and_succeed() -> None:
    done = stress("--vm", "2", "--vm-bytes", "64Mi", "--vm-hold", "0.5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("allocated 64Mi") == 2
    assert "successful run completed" in done.stdout


def test_cpu_workers_stop_at_the_timeout() -> None:
    done = stress("--cpu", "1", "--vm", "1", "--vm-bytes", "1Mi", "--timeout", "0.5s", "-q")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_nothing_to_do_is_a_usage_error() -> None:
    assert stress().returncode == 2
    assert stress("--vm", "1", "--vm-bytes", "nope").returncode == 2


def test_a_killed_worker_kills_stress_with_the_same_signal() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inplace",
            "stress",
            "--vm",
            "1",
            "--vm-bytes",
            "1Mi",
            "--vm-hold",
            "60",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = ""
    while "allocated" not in line:
        line = proc.stdout.readline()
        assert line, "stress ended early"
    worker = int(line.split("[")[1].split("]")[0])
    os.kill(worker, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL
    assert f"worker {worker} got signal 9 (SIGKILL)" in proc.stdout.read()


@pytest.fixture
def memory_cgroup() -> Iterator[Path]:
    if os.geteuid() != 0 or not CGROUP_MEMORY.is_dir():
        pytest.skip("needs root and the cgroup v1 memory controller")
    path = CGROUP_MEMORY / f"inplace-stress-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        yield path
    finally:
        for _ in range(100):
            pids = (path / "cgroup.procs").read_text().split()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.05)
        path.rmdir()


def test_over_its_memory_limit_stress_dies_as_the_oom_killer_left_it(memory_cgroup: Path) -> None:
    (memory_cgroup / "memory.limit_in_bytes").write_text(str(128 * 2**20))

    def enter() -> None:
        (memory_cgroup / "cgroup.procs").write_text(str(os.getpid()))

    fits = stress("--vm", "1", "--vm-bytes", "64Mi", preexec=enter)
    assert fits.returncode == 0, fits.stdout + fits.stderr
    over = stress("--vm", "1", "--vm-bytes", "256Mi", preexec=enter)
    assert over.returncode == -signal.SIGKILL
    assert "got signal 9 (SIGKILL)" in over.stdout
    control = (memory_cgroup / "memory.oom_control").read_text()
    assert "oom_kill 1" in control
