"""Process runtime: a pod's container is a host process in its own cgroup and session.

Requirements and how they are met:

**The workload outlives the agent.** SIGKILL of the agent must neither kill nor block a
workload. So no pipe connects the workload to the agent: stdout and stderr go straight to the
log file (opened ``O_APPEND``, so several writers and log rotation by copy-truncate behave),
stdin is ``/dev/null``, and the process runs in a new session (``setsid``), out of reach of the
agent's process group and terminal signals. Log lines are therefore *raw*, without CRI framing
(``<RFC3339Nano> stdout F <line>``), and stdout and stderr are interleaved in one file;
:func:`format_cri_log` adds the framing when a reader wants it (with the read time, since no
per-line time is recorded).

**The exit code survives an agent restart.** The exit status of a process that is not our child
is unknowable from outside. Each container therefore gets a tiny supervisor, the *shim*
(:mod:`inplace.node.shim`, its own stdlib-only program, :func:`~inplace.node.shim.command`): it
forks the workload, waits for it, and writes ``<log_path>.exit.json`` (exit code, signal, finish
time) atomically; once the workload runs, the waiting is done by the shim's native half
(``inplace-shim.c``, a few dozen KiB), which the shim execs under the same pid. The shim lives
in the container's session, so it survives the agent exactly as the workload does, but not in
its cgroup: its memory is not charged to the container, and the container's OOM killer (or
freezer) cannot take the witness — lowering its ``oom_score_adj`` is not enough, and is refused
where the agent lacks CAP_SYS_RESOURCE. The agent writes ``<log_path>.state.json`` at start
(workload and shim pid + start time, cgroup path, the cgroup's OOM-kill count at start) so a new
agent can :meth:`ProcessRuntime.adopt` the process and still answer :meth:`wait` with the right
exit code and OOM verdict — even when the workload exited while no agent was running.

**The workload is in its cgroup before its first instruction.** The shim forks the workload
at once and reports ``child N``; the child waits for ``go`` on a pipe. The agent puts the
child's pid in the cgroup (:meth:`CgroupDriver.add_process`, any driver) and only then writes
``go``; the child then becomes the container's user and execs (it joined its sandbox and
built its root meanwhile: see :func:`inplace.node.shim.supervise._workload`), so everything
the workload allocates is charged to the cgroup. If the agent dies before ``go``, the child
reads EOF and exits 125 without running anything. Alternatives rejected: ``preexec_fn``
(unsafe in a process with threads — ``asyncio.to_thread`` pools — and driver-specific), and a
``sh -c 'echo $$ > cgroup.procs; exec …'`` trampoline (cgroup-file-specific, racy to report
errors, and it still leaves no one to record the exit code).

Process groups: the shim is the session leader; the workload leads its own process group
(pgid = its pid) inside that session. :meth:`ProcessRuntime.stop` signals the workload's group
(SIGTERM, then SIGKILL after the grace period) without touching the shim, which then records the
outcome. When the workload's main process exits, the shim SIGKILLs what is left of its process
group (a container's processes die with its main process). The shim ignores SIGTERM/SIGINT/
SIGHUP and sets its own ``oom_score_adj`` to -1000 (the workload gets the original value back)
so the OOM killer picks the workload, not the witness.

**PID reuse.** A process is named by pid *and* start time (psutil ``create_time``); every
check and signal verifies both first.

**OOMKilled.** A workload killed by SIGKILL while its cgroup's OOM-kill counter rose since the
start is reported ``oom_killed``. Like containerd, only the container's own cgroup is consulted:
an OOM kill triggered by the pod-level limit is counted on the pod cgroup and is not seen here.

Waiting uses ``pidfd_open`` + ``loop.add_reader`` (works for non-children; Linux ≥ 5.3), with a
psutil polling fallback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psutil

from . import shim
from .cgroups.base import CgroupDriver, CgroupError
from .spares import ForkedShim, Spares, Zygote

_log = logging.getLogger(__name__)

Shim = subprocess.Popen[bytes] | ForkedShim
"""A container's shim process: the agent's child, or forked by its zygote."""

__all__ = [
    "EXIT_SUFFIX",
    "LAUNCH_SUFFIX",
    "STATE_SUFFIX",
    "ExitStatus",
    "ProcessRuntime",
    "ProcessSpec",
    "ProcessStartError",
    "RunningProcess",
    "enter_command",
    "format_cri_log",
    "is_running",
]

LAUNCH_SUFFIX = ".launch.json"
"""Written by the agent next to the log: how the container enters its sandbox (also read by
:func:`enter_command`)."""
EXIT_SUFFIX = ".exit.json"
"""Written by the shim next to the log when the workload ends."""
STATE_SUFFIX = ".state.json"
"""Written by the agent next to the log when the workload starts (for re-adoption)."""

UNKNOWN_EXIT_CODE = 137
"""Reported when nothing recorded how the process ended (kubelet's ContainerStatusUnknown)."""

_START_TIME_TOLERANCE = 0.01
"""create_time has clock-tick (10 ms) resolution; a checkpoint may round-trip it as text."""

_HANDSHAKE_TIMEOUT = 30.0
_POLL_INTERVAL = 0.05


class ProcessStartError(RuntimeError):
    """The workload could not be started (bad command, working dir, cgroup, shim failure)."""

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class ProcessSpec:
    """What to run. ``command`` is the container's command + args, already resolved (looked
    up in ``env["PATH"]``); ``env`` is the complete environment (nothing is inherited from
    the agent); ``working_dir`` None means the agent's own working directory; ``cgroup_path``
    (relative to the driver root) must exist."""

    command: list[str]
    env: dict[str, str]
    working_dir: str | None
    log_path: str
    cgroup_path: str
    launch: Mapping[str, Any] | None = None
    """How the workload enters its sandbox (:meth:`inplace.node.sandbox.PodSandboxes.launch`):
    namespace, user, capabilities, seccomp filter, working directory. None: run as the agent,
    in ``working_dir``."""


@dataclass(frozen=True)
class RunningProcess:
    """A started workload, named by pid and start time so that PID reuse is detected."""

    pid: int
    start_time: float
    """psutil ``create_time`` of ``pid``."""
    log_path: str


@dataclass(frozen=True)
class ExitStatus:
    """How a workload ended. ``exit_code`` is ``128 + signal`` for a signal death, as
    container runtimes report it."""

    exit_code: int
    signal: int | None
    oom_killed: bool
    finished_at: datetime
    unknown: bool = False
    """True when nothing recorded the outcome (the shim itself was killed): ``exit_code`` is
    then :data:`UNKNOWN_EXIT_CODE` and ``finished_at`` the time it was noticed."""


@dataclass
class _Record:
    """What the agent knows about a workload beyond :class:`RunningProcess`."""

    shim_pid: int | None = None
    shim_start_time: float | None = None
    cgroup_path: str | None = None
    oom_kills_at_start: int | None = None
    popen: Shim | None = None
    result: ExitStatus | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @classmethod
    def from_state(cls, state: dict[str, Any] | None) -> _Record:
        if not state:
            return cls()
        return cls(
            shim_pid=state.get("shim_pid"),
            shim_start_time=state.get("shim_start_time"),
            cgroup_path=state.get("cgroup_path"),
            oom_kills_at_start=state.get("oom_kills_at_start"),
        )


class ProcessRuntime:
    """Starts, waits for, stops and re-adopts workload processes (see the module docstring)."""

    def __init__(
        self,
        driver: CgroupDriver,
        spares: Spares | None = None,
        zygote: Zygote | None = None,
        *,
        waiter: str | None = shim.NATIVE_PROGRAM,
    ) -> None:
        self._driver = driver
        #: Where shims come from: forked by the node's zygote, or (without) a spare's or
        #: one started per container.
        self._spares = spares if spares is not None else Spares(keep=0)
        self._zygote = zygote
        self._records: dict[tuple[int, float], _Record] = {}
        #: The shim's native half the shims exec to wait (``-``: they wait in Python).
        self._waiter = waiter if waiter is not None and os.access(waiter, os.X_OK) else "-"
        if waiter is not None and self._waiter == "-":
            _log.warning(
                "the container shim's native half %s is not built (pip install without a C "
                "compiler?): each container's shim waits in Python, ~1.4 MiB more per process",
                waiter,
            )

    # -- start ---------------------------------------------------------------------------

    async def start(self, spec: ProcessSpec) -> RunningProcess:
        """Start the workload through its shim, in ``spec.cgroup_path`` (which must exist)."""
        if not spec.command:
            raise ProcessStartError("empty command")
        log_dir = os.path.dirname(spec.log_path)
        if log_dir:
            os.makedirs(log_dir, exist_ok=True)
        exit_path, state_path = spec.log_path + EXIT_SUFFIX, spec.log_path + STATE_SUFFIX
        for stale in (exit_path, state_path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)
        oom_base = await asyncio.to_thread(self._oom_kills, spec.cgroup_path)
        launch_path = "-"
        if spec.launch is not None:
            launch_path = spec.log_path + LAUNCH_SUFFIX
            _write_json_atomic(launch_path, dict(spec.launch), mode=0o600)

        cwd = "/" if spec.launch is not None else (spec.working_dir or os.getcwd())
        if not os.path.isdir(cwd):
            raise ProcessStartError(
                f"cannot start {spec.command[0]!r}: no such working directory: {cwd!r}"
            )
        log_fd = os.open(
            spec.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644
        )
        go_r, go_w = os.pipe()
        report_r, report_w = os.pipe()
        try:
            start = self._spares.run if self._zygote is None else self._zygote.fork
            popen: Shim = start(
                ("shim", "{fd0}", "{fd1}", exit_path, launch_path, self._waiter, *spec.command),
                stdout=log_fd,
                stderr=log_fd,
                fds=(go_r, report_w),
                env=spec.env,
                cwd=cwd,
            )
        except OSError as exc:
            os.close(go_w)
            os.close(report_r)
            raise ProcessStartError(f"cannot start {spec.command[0]!r}: {exc}") from exc
        finally:
            os.close(log_fd)
            os.close(go_r)
            os.close(report_w)

        pid: int | None = None
        child: int | None = None
        try:
            pipe = _Pipe(report_r)
            forked = (await pipe.read_line(_HANDSHAKE_TIMEOUT)).decode(errors="replace").split()
            if len(forked) != 2 or forked[0] != "child":
                raise ProcessStartError(
                    f"the shim did not fork the workload (shim said {forked!r}; its errors are "
                    f"in {spec.log_path})"
                )
            child = int(forked[1])
            try:
                await asyncio.to_thread(self._driver.add_process, spec.cgroup_path, child)
            except (CgroupError, OSError) as exc:
                raise ProcessStartError(f"cannot put the process in its cgroup: {exc}") from exc
            os.write(go_w, b"go")
            report = await pipe.read_to_eof(_HANDSHAKE_TIMEOUT)
            words = report.decode(errors="replace").split(" ", 2)
            if words[0] == "error" and len(words) >= 2:
                code = int(words[1])
                message = words[2] if len(words) > 2 else ""
                if code == 128:  # entering the sandbox failed, before any exec
                    raise ProcessStartError(message, exit_code=code)
                raise ProcessStartError(f"exec failed: {message}", exit_code=code)
            if words[0] != "pid" or len(words) != 2:
                raise ProcessStartError(
                    f"the shim did not start the workload (shim said {report!r}; its errors are "
                    f"in {spec.log_path})"
                )
            pid = int(words[1])
            start_time = psutil.Process(pid).create_time()  # still unreaped: the shim awaits ack
            shim_start = psutil.Process(popen.pid).create_time()
            _write_json_atomic(
                state_path,
                {
                    "pid": pid,
                    "start_time": start_time,
                    "shim_pid": popen.pid,
                    "shim_start_time": shim_start,
                    "cgroup_path": spec.cgroup_path,
                    "oom_kills_at_start": oom_base,
                    "command": spec.command,
                },
            )
        except BaseException:
            if pid is not None:  # started, but we cannot track it: do not leave it running
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
            elif child is not None:  # closing go makes it exit; a kill does not wait for that
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
            os.close(go_w)
            os.close(report_r)
            await _reap_after_failure(popen)
            raise
        os.close(report_r)
        try:
            os.write(go_w, b"ok")  # the ack: the workload is recorded, the shim may reap it
        except OSError:  # the shim is gone: the workload's exit is found when it is polled
            pass
        os.close(go_w)

        record = _Record(
            shim_pid=popen.pid,
            shim_start_time=shim_start,
            cgroup_path=spec.cgroup_path,
            oom_kills_at_start=oom_base,
            popen=popen,
        )
        proc = RunningProcess(pid=pid, start_time=start_time, log_path=spec.log_path)
        self._records[(pid, start_time)] = record
        return proc

    def _oom_kills(self, cgroup_path: str) -> int | None:
        try:
            return self._driver.oom_kill_count(cgroup_path)
        except (CgroupError, OSError):
            return None

    # -- liveness and adoption -----------------------------------------------------------

    def is_alive(self, proc: RunningProcess) -> bool:
        """The pid exists, is not a zombie, and started at ``proc.start_time``."""
        return is_running(proc)

    def adopt(self, pid: int, start_time: float, log_path: str) -> RunningProcess | None:
        """Take over a workload started by an earlier agent. Returns None when there is no
        such process and no record of how it ended; a workload that exited while no agent ran
        is still adopted, and :meth:`wait` then returns its recorded status at once."""
        state = _read_json(log_path + STATE_SUFFIX)
        if state is not None and not (
            state.get("pid") == pid
            and abs(float(state.get("start_time", -1.0)) - start_time) <= _START_TIME_TOLERANCE
        ):
            state = None  # another run's record
        record = _Record.from_state(state)
        proc = RunningProcess(pid=pid, start_time=start_time, log_path=log_path)
        alive = _matches(pid, start_time, allow_zombie=True)
        ended = state is not None and _exit_record_for(log_path, pid) is not None
        shim_alive = (
            record.shim_pid is not None
            and record.shim_start_time is not None
            and _matches(record.shim_pid, record.shim_start_time, allow_zombie=True)
        )
        if not (alive or ended or shim_alive):
            return None
        self._records[(pid, start_time)] = record
        return proc

    def _record(self, proc: RunningProcess) -> _Record:
        key = (proc.pid, proc.start_time)
        record = self._records.get(key)
        if record is None:
            state = _read_json(proc.log_path + STATE_SUFFIX)
            if state is not None and state.get("pid") != proc.pid:
                state = None
            record = self._records[key] = _Record.from_state(state)
        return record

    # -- wait and stop -------------------------------------------------------------------

    async def wait(self, proc: RunningProcess) -> ExitStatus:
        """Wait for the workload to end and return how it ended (also for adopted processes)."""
        record = self._record(proc)
        async with record.lock:
            if record.result is None:
                record.result = await self._wait_uncached(proc, record)
            return record.result

    async def _wait_uncached(self, proc: RunningProcess, record: _Record) -> ExitStatus:
        await _wait_gone(proc.pid, proc.start_time)
        if record.shim_pid is not None and record.shim_start_time is not None:
            await _wait_gone(record.shim_pid, record.shim_start_time)  # it writes, then exits
        if record.popen is not None:
            await asyncio.to_thread(record.popen.wait)
            record.popen = None
        exit_record = _exit_record_for(proc.log_path, proc.pid)
        if exit_record is None and record.shim_pid is None:
            # Unknown supervisor (no state file): give a live shim a moment to write.
            for _ in range(20):
                await asyncio.sleep(_POLL_INTERVAL)
                exit_record = _exit_record_for(proc.log_path, proc.pid)
                if exit_record is not None:
                    break
        if exit_record is None:
            return ExitStatus(
                exit_code=UNKNOWN_EXIT_CODE,
                signal=None,
                oom_killed=False,
                finished_at=datetime.now(UTC),
                unknown=True,
            )
        sig = exit_record.get("signal")
        oom_killed = False
        if sig == signal.SIGKILL and record.cgroup_path is not None:
            base = record.oom_kills_at_start
            now = await asyncio.to_thread(self._oom_kills, record.cgroup_path)
            oom_killed = base is not None and now is not None and now > base
        return ExitStatus(
            exit_code=int(exit_record["exit_code"]),
            signal=int(sig) if sig is not None else None,
            oom_killed=oom_killed,
            finished_at=datetime.fromtimestamp(float(exit_record["finished_at"]), UTC),
        )

    async def stop(self, proc: RunningProcess, *, grace_period: float) -> ExitStatus:
        """SIGTERM the workload's process group, SIGKILL it after ``grace_period`` seconds.

        The cgroup is thawed first (best effort): a frozen task cannot act on any signal, and
        on cgroup v1 not even die of SIGKILL, until thawed."""
        record = self._record(proc)
        waiter = asyncio.ensure_future(self.wait(proc))
        if not self.is_alive(proc):
            return await waiter
        await self._thaw(record)
        _signal_group(proc, signal.SIGTERM)
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), timeout=max(0.0, grace_period))
        except TimeoutError:
            pass
        await self._thaw(record)
        _signal_group(proc, signal.SIGKILL)
        return await waiter

    async def _thaw(self, record: _Record) -> None:
        if record.cgroup_path is None:
            return
        with contextlib.suppress(CgroupError, OSError):
            await asyncio.to_thread(self._driver.thaw, record.cgroup_path)


# -- helpers ---------------------------------------------------------------------------------


def format_cri_log(raw: bytes, *, timestamp: datetime, stream: str = "stdout") -> bytes:
    """Frame raw log bytes as CRI log lines: ``<RFC3339Nano> <stream> F|P <line>``. A trailing
    line without a newline is marked ``P`` (partial), as the CRI does. All lines get
    ``timestamp``: the log file records no per-line time."""
    ts = timestamp.astimezone(UTC)
    stamp = ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond:06d}000Z"
    out = bytearray()
    lines = raw.split(b"\n")
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if last and not line:
            break
        tag = b"P" if last else b"F"
        out += stamp.encode() + b" " + stream.encode() + b" " + tag + b" " + line + b"\n"
    return bytes(out)


def is_running(proc: RunningProcess) -> bool:
    """The process is there, not a zombie, and the one that started at ``proc.start_time``
    (what :meth:`ProcessRuntime.is_alive` answers, without a runtime)."""
    return _matches(proc.pid, proc.start_time, allow_zombie=False)


def _matches(pid: int, start_time: float, *, allow_zombie: bool) -> bool:
    try:
        p = psutil.Process(pid)
        if abs(p.create_time() - start_time) > _START_TIME_TOLERANCE:
            return False
        return allow_zombie or p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal_group(proc: RunningProcess, sig: signal.Signals) -> None:
    """Signal the workload's process group (pgid = its pid), or just the process when it left
    its group; after checking it is still the same process."""
    if not _matches(proc.pid, proc.start_time, allow_zombie=True):
        return
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)


async def _wait_gone(pid: int, start_time: float) -> None:
    """Return once ``pid`` (started at ``start_time``) has exited; works for non-children."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # no pidfd (old kernel, seccomp): poll
        while _matches(pid, start_time, allow_zombie=False):
            await asyncio.sleep(_POLL_INTERVAL)
        return
    try:
        # Opened by pid: check it is still the process we mean (not a reused pid).
        if not _matches(pid, start_time, allow_zombie=True):
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def ready() -> None:
            if not done.done():
                done.set_result(None)

        loop.add_reader(fd, ready)
        try:
            await done
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)


async def _reap_after_failure(popen: Shim) -> None:
    """The shim exits by itself once the go pipe closes (before the workload starts, 125) or
    after its workload; kill it if it does not, and reap it either way."""
    try:
        await asyncio.to_thread(popen.wait, 5.0)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGKILL)
        await asyncio.to_thread(popen.wait)


class _Pipe:
    """Reads the shim's report pipe on the event loop (no thread left behind on cancellation):
    first the ``child N`` line, then the rest to EOF."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd
        self.data = bytearray()
        self.eof = False

    async def read_line(self, timeout: float) -> bytes:
        await self._read(timeout, lambda: b"\n" in self.data)
        line, _, rest = bytes(self.data).partition(b"\n")
        self.data = bytearray(rest)
        return line

    async def read_to_eof(self, timeout: float) -> bytes:
        await self._read(timeout, lambda: False)
        return bytes(self.data)

    async def _read(self, timeout: float, enough: Callable[[], bool]) -> None:
        if self.eof or enough():
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            try:
                chunk = os.read(self.fd, 4096)
            except BlockingIOError:
                return
            except OSError as exc:
                if not done.done():
                    done.set_exception(exc)
                return
            if not chunk:
                self.eof = True
            self.data.extend(chunk)
            if (self.eof or enough()) and not done.done():
                done.set_result(None)

        loop.add_reader(self.fd, readable)
        try:
            async with asyncio.timeout(timeout):
                await done
        except TimeoutError:
            raise ProcessStartError(
                "timed out waiting for the shim to start the workload"
            ) from None
        finally:
            loop.remove_reader(self.fd)


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as fh:
            value = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _exit_record_for(log_path: str, pid: int) -> dict[str, Any] | None:
    record = _read_json(log_path + EXIT_SUFFIX)
    if record is None or record.get("pid") != pid:
        return None
    return record


def _write_json_atomic(path: str, value: dict[str, Any], *, mode: int = 0o644) -> None:
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "w") as fh:
        json.dump(value, fh)
    os.replace(tmp, path)


def enter_command(proc: RunningProcess, argv: Sequence[str]) -> list[str]:
    """The command line that runs ``argv`` inside ``proc``'s container: the namespaces of its
    main process (mount — its own root —, PID, IPC, UTS), its user and groups, capabilities,
    no_new_privs, seccomp filter, working directory and environment (what ``kubectl exec``
    runs). The caller puts the process in the container's cgroup and wires its stdio."""
    return shim.command("enter", str(proc.pid), proc.log_path + LAUNCH_SUFFIX, *argv)
