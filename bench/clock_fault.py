"""The chaos bench's clock fault against forking: does a process under it keep spawning?

A Python process under the clock fault (`tests/chaos/faults.py`) has threads reading the
wall clock in loops, and its main thread spawns `/bin/true` over and over, one way per run:
`uvloop` (its `create_subprocess_exec` forks and runs Python before `exec`, as the node
agent does), `preexec` (`subprocess.Popen` with `preexec_fn`, fork too), `asyncio` and
`popen` (vfork, no code before `exec`). The wall clock is stepped every second. A run hangs
when no spawn completes for 15 s; its stuck child is then described (threads, wait channel,
whether it ever reached `exec`). The baseline, measured in the same run: the same runs
under Debian's libfaketime, the fault's first mechanism (skipped when not installed).

    python bench/clock_fault.py --seconds 120
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.chaos import faults

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
MODES = ("uvloop", "preexec", "asyncio", "popen")
STALL_SECONDS = 15.0

SPAWNER = """
import asyncio, datetime, os, subprocess, sys, threading, time

mode, beat_path = sys.argv[1], sys.argv[2]

def read_clock():
    while True:
        time.time(); datetime.datetime.now()

for _ in range(4):
    threading.Thread(target=read_clock, daemon=True).start()

def beat(count):
    with open(beat_path + ".tmp", "w") as out:
        out.write(f"{count} {time.time()} {time.monotonic()}")
    os.replace(beat_path + ".tmp", beat_path)

async def spawn_async():
    count = 0
    while True:
        proc = await asyncio.create_subprocess_exec("/bin/true")
        await proc.wait()
        count += 1
        beat(count)

if mode == "uvloop":
    import uvloop
    uvloop.run(spawn_async())
elif mode == "asyncio":
    asyncio.run(spawn_async())
else:
    count = 0
    while True:
        hook = (lambda: None) if mode == "preexec" else None
        subprocess.Popen(["/bin/true"], preexec_fn=hook).wait()
        count += 1
        beat(count)
"""


def libfaketime_environment(workdir: Path) -> dict[str, str]:
    """The clock fault as it was: libfaketime re-reading its timestamp file every second."""
    (workdir / "faketime.rc").write_text("+0\n")
    return {
        "LD_PRELOAD": str(LIBFAKETIME),
        "FAKETIME_TIMESTAMP_FILE": str(workdir / "faketime.rc"),
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_CACHE_DURATION": "1",
    }


def describe_stuck(group: int) -> str:
    """The spawner's children still running: threads, wait channel, exec reached or not."""
    lines = []
    spawner = Path(f"/proc/{group}/cmdline").read_bytes()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines())
            if int(fields["PPid"]) != group:
                continue
            proc = status.parent
            execed = proc.joinpath("cmdline").read_bytes() != spawner
            lines.append(
                f"    child {proc.name}: {fields['Threads'].strip()} thread(s), waiting in "
                f"{proc.joinpath('wchan').read_text() or '-'}, "
                f"{'exec reached' if execed else 'still the spawner (no exec)'}"
            )
        except (OSError, KeyError, ValueError):
            continue
    return "\n".join(lines) or "    no child"


def run(mechanism: str, mode: str, seconds: float, workdir: Path) -> str:
    workdir.mkdir(parents=True)
    offset = workdir / faults.CLOCK_OFFSET_FILE
    if mechanism == "clockstep":
        env = faults.clock_environment(workdir)
    else:
        env = libfaketime_environment(workdir)
    beat = workdir / "beat"
    beat.write_text("0 0 0")
    spawner = subprocess.Popen(
        [sys.executable, "-c", SPAWNER, mode, str(beat)],
        env={**os.environ, **env},
        start_new_session=True,
    )
    started = last_change = time.monotonic()
    stepped, last, verdict, detail = 0, "", "clean", ""
    try:
        while time.monotonic() - started < seconds:
            time.sleep(1.0)
            stepped += 1
            if mechanism == "clockstep":
                faults.step_clock(offset, 1)
            else:
                (workdir / "faketime.rc").write_text(f"+{stepped}s\n")
            now = beat.read_text()
            if now != last:
                last, last_change = now, time.monotonic()
            elif time.monotonic() - last_change > STALL_SECONDS:
                verdict, detail = "HUNG", describe_stuck(spawner.pid)
                break
    finally:
        os.killpg(spawner.pid, signal.SIGKILL)
        spawner.wait()
        for name in (f"faketime_shm_{spawner.pid}", f"sem.faketime_sem_{spawner.pid}"):
            Path("/dev/shm", name).unlink(missing_ok=True)  # libfaketime's, left by the kill
    count, wall, mono = last.split()
    # monotonic clocks are the host's under either mechanism: the host's wall clock when the
    # child last read its own
    host_wall = time.time() - (time.monotonic() - float(mono))
    skew = float(wall) - host_wall if float(wall) else 0.0
    line = (
        f"{mechanism:<11} {mode:<8} {verdict:<5} after {time.monotonic() - started:5.0f} s: "
        f"{count:>5} spawns; clock stepped to +{stepped} s; at its last spawn the child's "
        f"wall clock read {skew:+.1f} s from the host's"
    )
    return line + ("\n" + detail if detail else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="per mechanism and mode")
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the spawner is killed on the way
    mechanisms = ["clockstep"] + (["libfaketime"] if LIBFAKETIME.exists() else [])
    if "libfaketime" not in mechanisms:
        print(f"baseline skipped: {LIBFAKETIME} not installed (apt-get install libfaketime)")
    with tempfile.TemporaryDirectory(prefix="clock-fault-") as scratch:
        for mechanism in mechanisms:
            for mode in args.modes.split(","):
                print(run(mechanism, mode, args.seconds, Path(scratch, mechanism, mode)))


if __name__ == "__main__":
    main()
