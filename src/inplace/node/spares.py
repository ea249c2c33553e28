"""Spare shims: started ahead of need, so a container's shim or a pod's sandbox tool
starts without waiting for an interpreter (see :mod:`inplace.node.shim.spare`).

:meth:`Spares.run` hands the job to the spare ready (or starts one for it, the first time or
when the spare is gone) and starts the next in the background once the job is out, a little
later, so the replacement's start does not compete with the job it follows for the CPU. The
job's process is the spare's: its :class:`subprocess.Popen` is what the caller gets.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import shim

log = logging.getLogger(__name__)

REPLACE_AFTER = 0.05
"""Seconds between a job handed out and the next spare's start."""


@dataclass
class _Spare:
    popen: subprocess.Popen[bytes]
    sock: socket.socket
    fresh: bool = True
    """Started for the job at hand (its failure is the job's), not one that waited."""


class Spares:
    """The node's spare shims: up to ``keep`` waiting (a pod start takes two, its sandbox
    tool's and its container's shim). With ``keep=0`` none waits: each job starts its own
    (the same protocol, for runtimes that start a few processes)."""

    def __init__(self, *, keep: int = 2) -> None:
        self.keep = keep
        self._ready: list[_Spare] = []
        self._replacing: asyncio.TimerHandle | None = None
        self.closed = False

    @property
    def ready(self) -> int:
        """How many spares wait now."""
        return len(self._ready)

    def run(
        self,
        argv: Sequence[str],
        *,
        stdout: int,
        stderr: int,
        fds: Sequence[int] = (),
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
    ) -> subprocess.Popen[bytes]:
        """Start the shim's mode ``argv`` (``{fd0}``... in it name ``fds``, in order) with
        ``stdout`` and ``stderr``, in its own session; raises OSError when no process can be
        started."""
        job = _job(argv, env, cwd)
        try:
            while True:
                spare = self._ready.pop(0) if self._ready else _start()
                try:
                    socket.send_fds(spare.sock, [job], [stdout, stderr, *fds])
                except OSError:  # the spare died (killed, or the machine short of memory)
                    _discard(spare)
                    if spare.fresh:
                        raise
                    continue
                spare.sock.close()
                return spare.popen
        finally:
            self._replace_later()

    def _replace_later(self) -> None:
        if self.closed or self._replacing is not None or len(self._ready) >= self.keep:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not under the agent's loop (tests): the next job starts one
            return
        self._replacing = loop.call_later(REPLACE_AFTER, self._replace)

    def _replace(self) -> None:
        self._replacing = None
        while not self.closed and len(self._ready) < self.keep:
            try:
                spare = _start()
            except OSError as exc:
                log.warning("could not start a spare shim: %s", exc)
                return
            spare.fresh = False
            self._ready.append(spare)

    def close(self) -> None:
        """Stop the spares waiting (each reads the end of its socket and exits)."""
        self.closed = True
        if self._replacing is not None:
            self._replacing.cancel()
            self._replacing = None
        ready, self._ready = self._ready, []
        for spare in ready:
            _discard(spare)


class ForkedShim:
    """A shim the node's zygote forked: not the agent's child (the zygote reaps it), so it is
    waited for through a pidfd, as one the agent adopted."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def wait(self, timeout: float | None = None) -> None:
        """Return once the shim has ended; :class:`subprocess.TimeoutExpired` after
        ``timeout`` seconds."""
        try:
            fd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            return
        try:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                raise subprocess.TimeoutExpired(f"shim {self.pid}", timeout or 0.0)
        finally:
            os.close(fd)


class Zygote:
    """The node's shim zygote (:mod:`inplace.node.shim.zygote`), started at its first job
    and again when it is found gone."""

    ANSWER_TIMEOUT = 5.0
    """Seconds a job waits for the zygote's answer before it is taken for gone."""

    def __init__(self) -> None:
        self._running: _Spare | None = None

    def fork(
        self,
        argv: Sequence[str],
        *,
        stdout: int,
        stderr: int,
        fds: Sequence[int] = (),
        env: Mapping[str, str] | None = None,
        cwd: str = "/",
    ) -> ForkedShim:
        """A shim forked for the job (as :meth:`Spares.run`'s); raises OSError when no
        zygote answers."""
        job = _job(argv, env, cwd)
        for attempt in range(2):
            if self._running is None:
                self._running = _start("zygote")
                self._running.sock.settimeout(self.ANSWER_TIMEOUT)
            zygote = self._running
            try:
                socket.send_fds(zygote.sock, [job], [stdout, stderr, *fds])
                answer = zygote.sock.recv(32)
                if answer.isdigit():
                    return ForkedShim(int(answer))
                raise OSError(f"the shim zygote answered {answer!r}")
            except OSError:  # gone, stopped or garbled (TimeoutError is an OSError)
                self._running = None
                _discard(zygote)
                if attempt:
                    raise
        raise OSError("no shim zygote")  # pragma: no cover

    def close(self) -> None:
        """End the zygote (its shims go on: each is in its own session)."""
        if self._running is not None:
            _discard(self._running)
            self._running = None


def _job(argv: Sequence[str], env: Mapping[str, str] | None, cwd: str) -> bytes:
    return json.dumps(
        {"argv": list(argv), "env": dict(env or {}), "cwd": cwd}, separators=(",", ":")
    ).encode()


def _start(mode: str = "spare") -> _Spare:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        popen = subprocess.Popen(
            shim.command(mode, str(theirs.fileno())),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env={},
            start_new_session=True,
            pass_fds=(theirs.fileno(),),
            close_fds=True,
        )
    except OSError:
        ours.close()
        raise
    finally:
        theirs.close()
    return _Spare(popen, ours)


def _discard(spare: _Spare) -> None:
    """Close the spare's socket (it exits on the empty read) and reap it."""
    spare.sock.close()
    try:
        spare.popen.wait(timeout=1)
    except subprocess.TimeoutExpired:
        spare.popen.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            spare.popen.wait(timeout=1)
