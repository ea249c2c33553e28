"""The per-container supervisor: forks the workload (through its own PID 1 when the container
has its own PID namespace), reports its host pid, waits for it and records how it ended.

Its protocol with the agent (:mod:`inplace.node.runtime`), over the two pipes of its command
line ``shim GO_FD REPORT_FD EXIT_PATH LAUNCH_PATH|- COMMAND...``: agent →
``child N`` line on report_fd (the forked workload, waiting); agent → ``go`` on go_fd (after
moving that child into the cgroup); shim → ``pid N`` or ``error CODE MSG`` on report_fd then
closes it; agent → ``ok`` on go_fd and closes it (the ack, after recording the workload's
start time); shim waits, then writes exit_path. A go_fd closed without ``ok`` is an agent that
died before it recorded the workload: the shim kills it, since no agent would ever track it.
The workload enters its sandbox (the launch file) before ``execve``.

The waiting is done by the shim's native half when the agent names it (``WAITER``, the
program ``inplace-shim.c`` builds): once the workload is recorded, the supervisor execs it,
and so does the container's PID 1 once it has forked the workload. Each keeps its pid and its
children and drops the interpreter's pages (~1.4 MiB of its own per process). Without it,
both wait here in Python, as before; either writes the same exit record, so an agent adopts
workloads started under either."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from .containerroot import fresh_layer
from .enter import become, join_namespaces, prepare_env, read_launch, read_seccomp
from .kernel import CLONE_NEWPID, SetupError, checked, libc

TYPE_CHECKING = False  # typing costs ~6 ms of the shim's start: names for the checkers only
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

# -- the container shim ------------------------------------------------------------------------


def write_status(path: str, status: dict[str, Any]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(status, f)
    os.replace(tmp, path)


def _workload(
    go_fd: int,
    report_fd: int,
    err_w: int,
    old_adj: str | None,
    launch: dict[str, Any] | None,
    argv: list[str],
    init_ready: int | None = None,
) -> NoReturn:
    """The forked workload: join the sandbox's namespaces and build the container's root
    while the agent moves it into its cgroup, wait for ``go``, become the container's user
    and exec (errors to ``err_w``).

    The root is built before ``go``, not after: both that and the agent's cgroup move wait
    for the kernel (an unmount's and a cgroup v1 migration's RCU grace period, tens of ms
    each on a busy VM), so they overlap instead of adding up. Nothing of the workload runs
    before ``go``; what the build allocates is the runtime's (mount structures), as runc's
    namespace setup is."""
    code = 127
    try:
        os.setpgid(0, 0)
        os.close(report_fd)
        seccomp: bytes | None = None
        problem: SetupError | None = None
        if launch is not None:
            try:
                seccomp = read_seccomp(launch["seccomp"]) if launch.get("seccomp") else None
                join_namespaces(launch, None)
            except SetupError as exc:
                problem = exc
        # The agent moves this process (not the shim) into the container's cgroup, then
        # says go: the workload is charged there from its first instruction.
        if os.read(go_fd, 2) != b"go":  # the agent died before the cgroup move
            os._exit(125)
        os.close(go_fd)
        if init_ready is not None:  # PID 1 handles signals before the workload can send one
            os.read(init_ready, 1)
            os.close(init_ready)
        for s in signal.valid_signals():
            if s not in (signal.SIGKILL, signal.SIGSTOP):
                try:
                    signal.signal(s, signal.SIG_DFL)
                except (OSError, ValueError):
                    pass
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        if old_adj is not None:
            with open(OOM_SCORE_ADJ, "w") as f:
                f.write(old_adj)
        os.set_inheritable(err_w, False)
        if launch is not None:
            try:  # the launch's env, not ours: Python's locale coercion adds LC_CTYPE
                if problem is not None:
                    raise problem
                env = become(launch, launch.get("env", os.environ), seccomp)
            except SetupError as exc:
                code = 128
                os.write(err_w, f"128 {exc}".encode())
                os._exit(code)
        else:
            env = prepare_env(os.environ, os.getuid())
        os.execvpe(argv[0], argv, env)
    except BaseException as e:
        code = 126 if isinstance(e, PermissionError) else 127
        try:
            os.write(err_w, f"{code} {argv[0] if argv else ''}: {e}".encode())
        except BaseException:
            pass
    os._exit(code)


class ContainerInit:
    """PID 1 of a container's own PID namespace (``launch["pid_namespace"] == "container"``),
    forked by the shim after ``unshare(CLONE_NEWPID)``; it forks the workload, passes it the
    signals sent to PID 1 from inside (``kill 1``), reaps orphans, and ends with the workload,
    which makes the kernel kill what is left in the namespace. It stays out of the
    container's cgroup, as the shim does; the workload is the process the agent tracks (its
    host pid, read from the host's ``/proc/self`` before it enters), so signals from the
    agent reach it as from any runtime, and a SIGTERM is not dropped as one to an init
    without a handler would be (docker's ``--init``, tini)."""

    def __init__(self) -> None:
        self.pid_r, self.pid_w = os.pipe()
        self.status_r, self.status_w = os.pipe()
        self.hold_r, self.hold_w = os.pipe()
        #: Closed by the init once it handles signals (by its exec into the native half, the
        #: end being close-on-exec): the workload waits for that before its own exec, so no
        #: ``kill 1`` from inside meets a PID 1 without handlers, which would drop it.
        self.ready_r, self.ready_w = os.pipe()
        self.pid = 0

    def start(
        self, workload: Callable[[], NoReturn], closing: Sequence[int], waiter: str | None
    ) -> int:
        """Fork the init (and through it the workload); the workload's host pid (0 when
        it could not start). The init execs ``waiter`` (its native half) when given."""
        self.pid = os.fork()
        if self.pid == 0:
            for fd in (self.pid_r, self.status_r, self.hold_w):
                os.close(fd)
            child = os.fork()
            if child == 0:
                os.close(self.status_w)
                os.close(self.hold_r)
                os.close(self.ready_w)
                os.write(self.pid_w, os.readlink("/proc/self").encode())
                os.close(self.pid_w)
                workload()
            for fd in (self.pid_w, self.ready_r, *closing):
                os.close(fd)
            if waiter is not None:
                exec_native(
                    waiter,
                    ("init", child, self.hold_r, self.status_w),
                    (self.hold_r, self.status_w),
                )
            self._serve(child)
        for fd in (self.pid_w, self.status_w, self.hold_r, self.ready_r, self.ready_w):
            os.close(fd)
        text = os.read(self.pid_r, 32)
        os.close(self.pid_r)
        return int(text) if text.isdigit() else 0

    def _serve(self, workload: int) -> NoReturn:
        def forward(sig: int, _frame: Any) -> None:
            try:
                os.kill(workload, sig)
            except OSError:
                pass

        for s in signal.valid_signals():
            if s not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
                try:
                    signal.signal(s, forward)
                except (OSError, ValueError):
                    pass
        os.close(self.ready_w)
        while os.read(self.hold_r, 64):  # not reaped before the agent recorded it
            pass
        while True:
            try:
                pid, st = os.waitpid(-1, 0)
            except ChildProcessError:
                os._exit(0)
            if pid == workload:
                os.write(self.status_w, str(st).encode())
                os._exit(0)

    def kill(self) -> None:
        try:  # PID 1 gone: the kernel kills the rest of the namespace
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def reap(self) -> int:
        """Let the init reap the workload; the workload's wait status."""
        os.close(self.hold_w)
        os.waitpid(self.pid, 0)
        text = os.read(self.status_r, 32)
        os.close(self.status_r)
        return int(text) if text else signal.SIGKILL


OOM_SCORE_ADJ = "/proc/self/oom_score_adj"


def exec_native(waiter: str, args: Sequence[str | int], keep: Sequence[int] = ()) -> None:
    """Become the native half (``inplace-shim ARGS``) with the descriptors ``keep`` open
    across the exec; returns only if the exec failed (then the caller waits in Python)."""
    for fd in keep:
        os.set_inheritable(fd, True)
    try:
        os.execv(waiter, [waiter, *map(str, args)])
    except OSError as exc:
        os.write(2, f"inplace-shim: cannot exec {waiter}: {exc}; waiting in Python\n".encode())


def _pid_namespace(launch: dict[str, Any] | None) -> str | None:
    """Enter the workload's PID namespace before the fork: ``container`` unshares a new one
    (then an init is needed), ``pod`` joins the pod's pinned one; an error message if not."""
    mode = (launch or {}).get("pid_namespace") or "host"
    try:
        if mode == "container":
            checked(libc().unshare(CLONE_NEWPID), "unshare the PID namespace")
        elif mode == "pod":
            fd = os.open(launch["pid_pin"], os.O_RDONLY | os.O_CLOEXEC)  # type: ignore[index]
            try:
                checked(libc().setns(fd, CLONE_NEWPID), "join the pod's PID namespace")
            finally:
                os.close(fd)
    except (SetupError, OSError) as exc:
        return str(exc)
    return None


def run_shim(
    go_fd: int,
    report_fd: int,
    exit_path: str,
    launch_path: str,
    waiter: str | None,
    argv: list[str],
) -> int:
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(s, signal.SIG_IGN)
    launch = read_launch(launch_path)
    if launch is not None:
        libc()  # loaded before the fork, so the child does no dlopen
    old_adj = None
    try:
        with open(OOM_SCORE_ADJ) as f:
            saved = f.read().strip()
        with open(OOM_SCORE_ADJ, "w") as f:
            f.write("-1000")
        old_adj = saved
    except OSError:
        pass
    rootfs = (launch or {}).get("rootfs") or {}
    if rootfs.get("layer"):
        fresh_layer(rootfs["layer"])
    problem = _pid_namespace(launch)
    if problem is not None:
        os.write(report_fd, f"error 128 {problem}".encode())
        return 1
    err_r, err_w = os.pipe()
    init: ContainerInit | None = None
    if (launch or {}).get("pid_namespace") == "container":
        init = ContainerInit()
        ready_r = init.ready_r
        pid = init.start(
            lambda: _workload(go_fd, report_fd, err_w, old_adj, launch, argv, ready_r),
            (go_fd, report_fd, err_w, err_r),
            waiter,
        )
        if not pid:
            os.write(report_fd, b"error 128 the container's init did not start")
            return 1
    else:
        pid = os.fork()
        if pid == 0:
            os.close(err_r)
            _workload(go_fd, report_fd, err_w, old_adj, launch, argv)
    try:
        os.write(report_fd, f"child {pid}\n".encode())
    except OSError:  # the agent is gone: the child reads EOF instead of go and exits
        pass
    os.close(err_w)
    if init is None:
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
    err = b""
    while True:
        chunk = os.read(err_r, 4096)
        if not chunk:
            break
        err += chunk
    os.close(err_r)
    if err:
        if init is not None:
            init.reap()
        else:
            os.waitpid(pid, 0)
        code_text, _, message = err.decode(errors="replace").partition(" ")
        write_status(
            exit_path,
            {
                "pid": pid,
                "exit_code": int(code_text),
                "signal": None,
                "finished_at": time.time(),
                "error": message,
            },
        )
        try:
            os.write(report_fd, ("error " + err.decode(errors="replace")).encode())
        except OSError:
            pass
        os._exit(0)
    try:
        os.write(report_fd, f"pid {pid}".encode())
        os.close(report_fd)
    except OSError:  # the agent gave up on this start: nobody will track the workload
        if init is not None:
            init.kill()
            init.reap()
        else:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os._exit(125)
    acked = b""
    while chunk := os.read(go_fd, 64):  # until the agent acks (ok, then close) or dies
        acked += chunk
    os.close(go_fd)
    if b"ok" not in acked:  # the agent died before it recorded the workload: nobody would
        if init is not None:  # ever stop it, and its successor starts the container again
            init.kill()
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
    if waiter is not None:  # the rest is waiting: done by the native half, same pid
        sys.stdout.flush()
        sys.stderr.flush()
        if init is not None:
            exec_native(
                waiter,
                ("wait-init", pid, init.pid, init.hold_w, init.status_r, exit_path),
                (init.hold_w, init.status_r),
            )
        else:
            exec_native(waiter, ("wait", pid, exit_path))
    if init is not None:
        st = init.reap()
    else:
        try:  # wait without reaping, so the pid cannot be reused while we kill its group
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        _, st = os.waitpid(pid, 0)
    sig = os.WTERMSIG(st) if os.WIFSIGNALED(st) else None
    code = 128 + sig if sig is not None else os.WEXITSTATUS(st)
    write_status(
        exit_path, {"pid": pid, "exit_code": code, "signal": sig, "finished_at": time.time()}
    )
    return 0
