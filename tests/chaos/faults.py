"""Faults beyond SIGKILL, run by the chaos thread: a node agent paused past the node grace
period, the data dir's file system full, and a step of the cluster's wall clock.

None changes anything outside the cluster under test: the full disk is a tmpfs mounted on
its data dir; the clock step is seen only by the cluster's processes, through libfaketime
(Debian's `libfaketime`, preloaded into `inplace up` and so every component and workload;
`FAKETIME_TIMESTAMP_FILE` is re-read every second, so writing it steps their clocks while
they run; `FAKETIME_DONT_FAKE_MONOTONIC` keeps monotonic clocks, as an NTP step would).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import threading
from pathlib import Path

NODE_GRACE_SECONDS = 8
"""`--node-monitor-grace-period` when the `stop` fault is on: short, so a pause outlives it."""
DISK_SIZE = "384m"
LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def mount_small_disk(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "chaos-disk", str(data_dir)],
        check=True,
    )


def fill_disk(data_dir: Path, hold: float, halt: threading.Event) -> int:
    """Fill the data dir's file system to the last byte, hold it full, free it; returns the
    bytes written."""
    filler = data_dir / "chaos-filler"
    written = 0
    chunk = b"\0" * (1 << 20)
    try:
        with open(filler, "wb", buffering=0) as out:
            while True:
                try:
                    written += out.write(chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
            with contextlib.suppress(OSError):
                while out.write(b"\0" * 4096):  # the last pages too
                    written += 4096
        halt.wait(hold)
    finally:
        with contextlib.suppress(FileNotFoundError):
            filler.unlink()
    return written


def pause(pid: int, seconds: float, halt: threading.Event) -> None:
    """SIGSTOP ``pid`` for ``seconds`` (cut short when the chaos stops), then SIGCONT."""
    os.kill(pid, signal.SIGSTOP)
    try:
        halt.wait(seconds)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def clock_environment(rc: Path) -> dict[str, str]:
    rc.write_text("+0\n")
    return {
        "LD_PRELOAD": str(LIBFAKETIME),
        "FAKETIME_TIMESTAMP_FILE": str(rc),
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_CACHE_DURATION": "1",
    }


def step_clock(rc: Path, seconds: int) -> int:
    """Step the cluster's wall clock by ``seconds`` more; returns the total offset."""
    current = int(rc.read_text().strip().removesuffix("s") or 0)
    total = current + seconds
    rc.write_text(f"{total:+d}s\n")
    return total
