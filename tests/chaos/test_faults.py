"""The clock fault on real processes: a step moves a running process's wall clock and not its
monotonic clock, and a process under it keeps forking children that run Python before
`exec` (the path that hung under libfaketime, chaos seed 83)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.chaos import faults

CLOCKS = """
import sys, time
for _ in sys.stdin:
    print(time.time(), time.monotonic(), flush=True)
"""

SPAWNER = """
import asyncio, datetime, subprocess, sys, threading, time
import uvloop

def busy():  # threads that read the clock and wait for the GIL, as the agent's pools do
    while True:
        time.time(); datetime.datetime.now()

for _ in range(3):
    threading.Thread(target=busy, daemon=True).start()

async def spawn(count):
    for _ in range(count):
        proc = await asyncio.create_subprocess_exec("/bin/true")  # uvloop: fork, Python, exec
        await proc.wait()
        subprocess.Popen(["/bin/true"], preexec_fn=lambda: None).wait()
        print("spawned", flush=True)

uvloop.run(spawn(int(sys.argv[1])))
"""


def _child_env(workdir: Path) -> dict[str, str]:
    return {**os.environ, **faults.clock_environment(workdir)}


def test_a_step_moves_the_wall_clock_of_a_running_process_and_not_its_monotonic_clock(
    tmp_path: Path,
) -> None:
    offset = tmp_path / faults.CLOCK_OFFSET_FILE
    with subprocess.Popen(
        [sys.executable, "-c", CLOCKS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_child_env(tmp_path),
    ) as child:
        assert child.stdin is not None and child.stdout is not None

        def read_clocks(expected_offset: int) -> None:
            wall_before, mono_before = time.time(), time.monotonic()
            child.stdin.write("now\n")
            child.stdin.flush()
            wall, mono = map(float, child.stdout.readline().split())
            wall_after, mono_after = time.time(), time.monotonic()
            assert wall_before + expected_offset <= wall <= wall_after + expected_offset
            assert mono_before <= mono <= mono_after

        read_clocks(0)
        assert faults.step_clock(offset, 120) == 120
        read_clocks(120)
        assert faults.step_clock(offset, 120) == 240
        read_clocks(240)
        child.stdin.close()


def test_children_that_run_python_before_exec_all_exec_under_the_clock_fault(
    tmp_path: Path,
) -> None:
    offset = tmp_path / faults.CLOCK_OFFSET_FILE
    spawns = 40
    with subprocess.Popen(
        [sys.executable, "-c", SPAWNER, str(spawns)],
        stdout=subprocess.PIPE,
        text=True,
        env=_child_env(tmp_path),
        start_new_session=True,  # its children too are killed at the end, hung or not
    ) as child:
        assert child.stdout is not None
        hang_guard = threading.Timer(300, os.killpg, (child.pid, signal.SIGKILL))
        hang_guard.start()
        try:
            for done in range(spawns):
                line = child.stdout.readline()
                assert line == "spawned\n", f"hung or died after {done} spawns"
                if done % 10 == 0:
                    faults.step_clock(offset, 120)
            assert child.wait() == 0
        finally:
            hang_guard.cancel()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
