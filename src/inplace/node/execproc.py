"""A command run inside a running container (``kubectl exec``): the process and its stdio.

**Inside the container.** :func:`inplace.node.runtime.enter_command` gives the command line
that enters the container's sandbox (mount namespace, user, capabilities, seccomp filter,
working directory, environment) and execs the command; this module runs it in the container's
cgroup, so its memory and CPU count against the container's limits as upstream's runtimes
count an exec's.

**Born in the cgroup.** The command must not run a single instruction outside the cgroup, or
its first allocations would be charged elsewhere. So the agent starts a tiny *gate*
(``python3 -I -S``) that waits for ``go`` on a pipe; the agent moves the gate's pid into the
container's cgroup and only then writes ``go``; the gate execs the sandbox entry, which execs
the command: one pid throughout, born in the cgroup. (The same handshake as the container
shim's, see :mod:`inplace.node.runtime`.) If the agent dies first, the gate reads EOF and
exits 125 without running anything.

**Stdio.** Without a terminal the command gets a pipe for each stream the client asked for
(``/dev/null`` otherwise); with one (``kubectl exec -t``) a pseudo-terminal whose slave is its
stdin, stdout and stderr and its controlling terminal (the gate is a session leader and takes
it with ``TIOCSCTTY``), ``TERM=xterm`` unless the container sets ``TERM`` (as containerd does
for a terminal exec), and window sizes from the client (``TIOCSWINSZ``). The agent's ends are
non-blocking and driven by the event loop, with back-pressure both ways: output is read only as
fast as the client takes it, and input is written only as fast as the command reads it.

**The end.** When the command exits, what it wrote before is already in the pipes: each
output is drained until it would block, then ends (a background child keeping the pipe open
does not hold the session). The exit code is upstream's: the status, or 128 + the signal. A
client that goes away first takes the command with it: its process group is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from inplace.api.remotecommand import StreamOptions

from .cgroups.base import CgroupDriver, CgroupError
from .runtime import LAUNCH_SUFFIX, RunningProcess, enter_command

__all__ = ["ExecError", "ExecProcess", "ExecTarget"]

_GATE = """\
import os, sys
fd = int(sys.argv[1])
go = os.read(fd, 2) == b"go"
os.close(fd)
if not go:
    os._exit(125)
if sys.argv[2] == "tty":
    import fcntl, termios
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
os.execv(sys.argv[3], sys.argv[3:])
"""
"""Waits for ``go`` (the agent moved it into the cgroup), takes the terminal, execs the rest."""

_CHUNK = 32 * 1024
_ENV = "/usr/bin/env"


class ExecError(Exception):
    """The command could not be started (the session reports it as an internal error)."""


@dataclass(frozen=True)
class ExecTarget:
    """Where to run: the container's main process (for its launch) and its cgroup."""

    process: RunningProcess
    cgroup_path: str


def _launch_env(process: RunningProcess) -> dict[str, str] | None:
    """The container's environment from its launch (None when it cannot be read)."""
    try:
        with open(process.log_path + LAUNCH_SUFFIX, "rb") as fh:
            launch = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    env = launch.get("env") if isinstance(launch, dict) else None
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else None


def command_line(target: ExecTarget, command: Sequence[str], *, tty: bool) -> list[str]:
    """What the gate execs: the sandbox entry of ``command`` (``TERM=xterm`` added for a
    terminal when the container's environment has no ``TERM``)."""
    argv = list(command)
    if tty and os.path.exists(_ENV) and "TERM" not in (_launch_env(target.process) or {}):
        argv = [_ENV, "TERM=xterm", *argv]
    return enter_command(target.process, argv)


class ExecProcess:
    """One running command (see the module docstring). :meth:`start` it, feed it with
    :meth:`write_stdin`, :meth:`pump` its outputs, :meth:`wait` for its exit code."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        *,
        stdin: int | None,
        outputs: dict[int, int],
        pty: int | None,
    ) -> None:
        self._popen = popen
        self.pid = popen.pid
        self._stdin = stdin
        self._outputs = outputs
        """channel → our end (the terminal's master serves stdout and stdin)."""
        self._pty = pty
        self._exited = asyncio.Event()
        self._exit_code: int | None = None
        self._closed = False
        self._watcher: asyncio.Task[None] | None = None
        self._waiters: set[asyncio.Future[None]] = set()
        """Waits for an fd that the exit ends too (the outputs drain, stdin gives up)."""

    @classmethod
    async def start(
        cls,
        driver: CgroupDriver,
        target: ExecTarget,
        command: Sequence[str],
        streams: StreamOptions,
    ) -> ExecProcess:
        """Start ``command`` in ``target``'s container and cgroup (ExecError if it cannot)."""
        if not command:
            raise ExecError("cmd cannot be empty")
        if not os.path.exists(target.process.log_path + LAUNCH_SUFFIX):
            raise ExecError(
                "the container was started without a launch record (by an older node agent); "
                "restart it to exec into it"
            )
        ours: list[int] = []
        theirs: list[int] = []
        try:
            stdin, outputs, pty, child = _stdio(streams, ours, theirs)
            gate_r, gate_w = os.pipe()
            ours.append(gate_w)
            theirs.append(gate_r)
            try:
                popen = subprocess.Popen(
                    [
                        sys.executable,
                        "-I",
                        "-S",
                        "-c",
                        _GATE,
                        str(gate_r),
                        "tty" if streams.tty else "-",
                        *command_line(target, command, tty=streams.tty),
                    ],
                    stdin=child[0],
                    stdout=child[1],
                    stderr=child[2],
                    pass_fds=(gate_r,),
                    close_fds=True,
                    start_new_session=True,
                    cwd="/",
                    env={"PATH": os.defpath},
                )
            except OSError as exc:
                raise ExecError(f"cannot start the command: {exc}") from exc
        except BaseException:
            for fd in ours:
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        process = cls(popen, stdin=stdin, outputs=outputs, pty=pty)
        try:
            await asyncio.to_thread(driver.add_process, target.cgroup_path, popen.pid)
        except (CgroupError, OSError) as exc:
            os.close(gate_w)  # EOF: the gate exits without running the command
            await process._reap()
            process.close()
            raise ExecError(f"cannot put the command in the container's cgroup: {exc}") from exc
        try:
            os.write(gate_w, b"go")
        finally:
            os.close(gate_w)
        process._watcher = asyncio.get_running_loop().create_task(process._watch())
        return process

    # -- input -------------------------------------------------------------------------------

    async def write_stdin(self, data: bytes) -> None:
        """Write all of ``data`` as the command reads it; dropped once stdin is closed or
        the command stopped reading."""
        fd = self._stdin
        view = memoryview(data)
        while view and fd is not None and fd == self._stdin:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                if self._exited.is_set():
                    return
                await self._ready(fd, write=True)
                continue
            except OSError:  # EPIPE: the command closed its stdin or exited
                self.close_stdin()
                return
            view = view[written:]

    def close_stdin(self) -> None:
        """The client's stdin ended: the command reads EOF (a terminal has no such thing)."""
        if self._stdin is not None and self._stdin != self._pty:
            os.close(self._stdin)
        self._stdin = None

    def resize(self, width: int, height: int) -> None:
        if self._pty is not None:
            with contextlib.suppress(OSError):
                fcntl.ioctl(self._pty, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))

    # -- output ------------------------------------------------------------------------------

    async def pump(self, channel: int, send: Callable[[bytes], Awaitable[None]]) -> None:
        """Send what the command writes on ``channel`` (stdout or stderr) until it ends."""
        fd = self._outputs.get(channel)
        if fd is None:
            return
        while not self._closed:
            try:
                data = os.read(fd, _CHUNK)
            except BlockingIOError:
                if self._exited.is_set():
                    return  # drained: what it wrote before it exited has been sent
                await self._ready(fd, write=False)
                continue
            except OSError as exc:
                if exc.errno == errno.EIO:  # a terminal whose last writer is gone
                    return
                raise
            if not data:
                return
            await send(data)

    # -- the end -----------------------------------------------------------------------------

    async def wait(self) -> int:
        """The exit code: the status, or 128 + the signal that ended it."""
        await self._exited.wait()
        assert self._exit_code is not None
        return self._exit_code

    def kill(self) -> None:
        """Kill the command and everything in its process group (the client went away)."""
        if not self._exited.is_set():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    def close(self) -> None:
        """Release our ends of its stdio (after :meth:`wait`, or after :meth:`kill`)."""
        if self._closed:
            return
        self._closed = True
        fds = {*self._outputs.values()}
        if self._stdin is not None:
            fds.add(self._stdin)
        if self._pty is not None:
            fds.add(self._pty)
        self._stdin = None
        loop = asyncio.get_running_loop()
        for fd in fds:
            loop.remove_reader(fd)
            loop.remove_writer(fd)
            with contextlib.suppress(OSError):
                os.close(fd)

    async def _watch(self) -> None:
        await self._reap()
        self._exited.set()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _reap(self) -> None:
        """Wait for the process (a pidfd tells when, without a thread) and keep its code."""
        try:
            pidfd = os.pidfd_open(self.pid)
        except OSError:
            pidfd = None
        if pidfd is None:
            code = await asyncio.to_thread(self._popen.wait)
        else:
            try:
                await self._ready(pidfd, write=False, stop_on_exit=False)
            finally:
                os.close(pidfd)
            code = self._popen.wait()  # it has exited: no wait
        self._exit_code = 128 - code if code < 0 else code

    async def _ready(self, fd: int, *, write: bool, stop_on_exit: bool = True) -> None:
        """Until ``fd`` is readable (writable), or the command exited."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        if stop_on_exit:
            if self._exited.is_set():
                return
            self._waiters.add(ready)
        (loop.add_writer if write else loop.add_reader)(fd, wake)
        try:
            await ready
        finally:
            (loop.remove_writer if write else loop.remove_reader)(fd)
            self._waiters.discard(ready)


def _stdio(
    streams: StreamOptions, ours: list[int], theirs: list[int]
) -> tuple[int | None, dict[int, int], int | None, tuple[int, int, int]]:
    """Our ends (stdin, outputs by channel, the terminal) and the child's three fds; every fd
    opened is appended to ``ours`` or ``theirs`` for the caller to close."""
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    theirs.append(null)
    outputs: dict[int, int]
    if streams.tty:
        master, slave = os.openpty()
        ours.append(master)
        theirs.append(slave)
        os.set_blocking(master, False)
        os.set_inheritable(master, False)
        outputs = {1: master} if streams.stdout else {}
        return (master if streams.stdin else None), outputs, master, (slave, slave, slave)
    stdin = None
    child = [null, null, null]
    outputs = {}
    if streams.stdin:
        read_end, write_end = os.pipe()
        ours.append(write_end)
        theirs.append(read_end)
        os.set_blocking(write_end, False)
        stdin, child[0] = write_end, read_end
    for channel, wanted in ((1, streams.stdout), (2, streams.stderr)):
        if wanted:
            read_end, write_end = os.pipe()
            ours.append(read_end)
            theirs.append(write_end)
            os.set_blocking(read_end, False)
            outputs[channel] = read_end
            child[channel] = write_end
    return stdin, outputs, None, (child[0], child[1], child[2])
