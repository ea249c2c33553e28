"""The kernel's part of cgroup v2, played on the plain directory tree the v2 driver tests use.

A thread watches every cgroup of the tree that has processes (``cgroup.procs``, as
:class:`~inplace.node.cgroups.V2Driver` with ``plain_files=True`` writes it) and does to the
real processes listed there what the kernel would:

* ``memory.current`` is their resident memory (the listed processes and their descendants);
* at or above ``memory.high``: a ``high`` event in ``memory.events`` (which wakes an inotify
  watcher, as the kernel's fsnotify does) and throttling: the tasks are stopped for up to
  :data:`THROTTLE` seconds (the kernel sleeps an over-``high`` task up to 2 s per return to
  user space) and go on unless frozen meanwhile;
* above ``memory.max``: an OOM kill of the largest task not exempt (``oom_score_adj`` -1000,
  as the container's shim is), ``oom``/``oom_kill`` counted;
* ``cgroup.freeze``: 1 stops the tasks (SIGSTOP), 0 continues them; ``cgroup.events`` says
  ``frozen``.

It samples every :data:`TICK` seconds, so it is coarser than the kernel: the workloads of the
tests allocate in small steps with pauses between them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import psutil

TICK: Final = 0.002
THROTTLE: Final = 2.0


@dataclass
class _State:
    events: dict[str, int] = field(
        default_factory=lambda: {"low": 0, "high": 0, "max": 0, "oom": 0, "oom_kill": 0}
    )
    frozen: bool = False
    throttled_until: float | None = None


def _limit(directory: Path, name: str) -> float:
    try:
        text = (directory / name).read_text().strip()
    except FileNotFoundError:
        return float("inf")
    return float("inf") if text in ("", "max") else float(int(text))


class FakeKernel:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._states: dict[Path, _State] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-kernel", daemon=True)

    def start(self) -> FakeKernel:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            for procs in list(self.root.rglob("cgroup.procs")):
                with contextlib.suppress(OSError, psutil.Error):
                    self._step(procs.parent)
            time.sleep(TICK)

    def _processes(self, directory: Path) -> list[psutil.Process]:
        found: dict[int, psutil.Process] = {}
        for word in (directory / "cgroup.procs").read_text().split():
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(int(word))
                if p.status() == psutil.STATUS_ZOMBIE:
                    continue
                found[p.pid] = p
                for child in p.children(recursive=True):
                    found.setdefault(child.pid, child)
        return list(found.values())

    def _signal(self, processes: list[psutil.Process], sig: signal.Signals) -> None:
        for p in processes:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, sig)

    def _write_events(self, directory: Path, state: _State) -> None:
        _rewrite(
            directory / "memory.events", "".join(f"{k} {v}\n" for k, v in state.events.items())
        )

    def _step(self, directory: Path) -> None:
        state = self._states.setdefault(directory, _State())
        processes = self._processes(directory)
        current = 0
        for p in processes:
            with contextlib.suppress(psutil.Error):
                current += p.memory_info().rss
        _rewrite(directory / "memory.current", f"{current}\n")
        try:
            freeze = (directory / "cgroup.freeze").read_text().strip() == "1"
        except FileNotFoundError:
            freeze = False
        now = time.monotonic()
        if freeze != state.frozen:
            state.frozen = freeze
            if not freeze:
                state.throttled_until = None
            self._signal(processes, signal.SIGSTOP if freeze else signal.SIGCONT)
            _rewrite(directory / "cgroup.events", f"populated 1\nfrozen {int(freeze)}\n")
        if state.frozen or not processes:
            return
        if state.throttled_until is not None:
            if now < state.throttled_until:
                return
            state.throttled_until = None
            self._signal(processes, signal.SIGCONT)
        if current > _limit(directory, "memory.max"):
            state.events["max"] += 1
            state.events["oom"] += 1
            state.events["oom_kill"] += 1
            self._signal([_victim(processes)], signal.SIGKILL)
            self._write_events(directory, state)
        elif current >= _limit(directory, "memory.high"):
            state.events["high"] += 1
            state.throttled_until = now + THROTTLE
            self._signal(processes, signal.SIGSTOP)
            self._write_events(directory, state)


def _victim(processes: list[psutil.Process]) -> psutil.Process:
    """The OOM killer's choice: the largest resident set among the tasks it may kill."""

    def exempt(p: psutil.Process) -> bool:
        with contextlib.suppress(OSError):
            return Path(f"/proc/{p.pid}/oom_score_adj").read_text().strip() == "-1000"
        return False

    def rss(p: psutil.Process) -> int:
        with contextlib.suppress(psutil.Error):
            return int(p.memory_info().rss)
        return 0

    candidates = [p for p in processes if not exempt(p)] or processes
    return max(candidates, key=rss)


def _rewrite(path: Path, text: str) -> None:
    """Change a file in place with one write of a fixed width (the kernel's files never read
    half-written, and an inotify watch stays on the same inode), padded with spaces."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, text.ljust(_WIDTH).encode(), 0)
    finally:
        os.close(fd)


_WIDTH: Final = 160
