"""Faults beyond SIGKILL, run by the chaos thread: a node agent paused past the node grace
period, the data dir's file system full, and a step of the cluster's wall clock.

None changes anything outside the cluster under test: the full disk is a tmpfs mounted on
its data dir; the clock step is seen only by the cluster's processes, through
`clockstep.c`, compiled here and preloaded into `inplace up` (so every component): it adds
an offset, read from a shared 8-byte file the chaos thread rewrites, to `CLOCK_REALTIME`
and what derives from it (`gettimeofday`, `time`), and leaves monotonic clocks alone, as an
NTP step would. The host's clock never moves (time namespaces cannot offset
`CLOCK_REALTIME`).

Not libfaketime, which this fault used first: it wraps `pthread_cond_init`/`_timedwait`
around a process-wide rwlock that other threads hold while they wait for the GIL; a fork
copies it held, and a child that runs Python before `exec` (uvloop's subprocess spawn and
`preexec_fn` both call `PyOS_AfterFork_Child`, which re-creates the GIL's condition) waits
on it for ever, and so does the agent that spawned it (chaos seed 83). No libfaketime
setting avoids that lock. `clockstep.c` takes no lock at all.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import shutil
import signal
import struct
import subprocess
import threading
from pathlib import Path

NODE_GRACE_SECONDS = 8
"""`--node-monitor-grace-period` when the `stop` fault is on: short, so a pause outlives it."""
DISK_SIZE = "384m"
CLOCK_SOURCE = Path(__file__).with_name("clockstep.c")
CLOCK_OFFSET_FILE = "clock.offset"
"""In the run's work directory: the cluster's clock offset, nanoseconds as a native int64."""
CLOCK_OFFSET_VARIABLE = "INPLACE_CHAOS_CLOCK_OFFSET"


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


def build_clock_library(out_dir: Path) -> Path:
    """Compile `clockstep.c` into ``out_dir`` (a C compiler is needed: `apt-get install gcc`)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("the clock fault compiles tests/chaos/clockstep.c: no cc on PATH")
    library = out_dir / "clockstep.so"
    out_dir.mkdir(parents=True, exist_ok=True)
    flags = ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror"]
    subprocess.run([compiler, *flags, "-o", str(library), str(CLOCK_SOURCE), "-ldl"], check=True)
    return library


def clock_environment(workdir: Path) -> dict[str, str]:
    """What `inplace up` runs with for the clock fault: the library preloaded, offset zero."""
    library = build_clock_library(workdir)
    offset = workdir / CLOCK_OFFSET_FILE
    offset.write_bytes(struct.pack("=q", 0))
    return {"LD_PRELOAD": str(library), CLOCK_OFFSET_VARIABLE: str(offset)}


def step_clock(offset: Path, seconds: int) -> int:
    """Step the cluster's wall clock by ``seconds`` more; returns the total offset in seconds.
    One aligned 8-byte store into the mapping the cluster's processes read (never a new file:
    they mapped this one)."""
    with open(offset, "r+b") as file, mmap.mmap(file.fileno(), 8) as shared:
        cell = memoryview(shared).cast("q")
        try:
            total = cell[0] + seconds * 1_000_000_000
            cell[0] = total
        finally:
            cell.release()
    return total // 1_000_000_000
