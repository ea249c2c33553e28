"""The node's shim zygote: one process, its interpreter up and its parts imported, that
forks each container's shim instead of starting one.

A spare (:mod:`.spare`) saves a shim's start, but each shim is then a whole interpreter of
its own, ~5 MiB PSS for a container (its supervisor and its PID 1). Forked from one
process, the shims share its pages until they write them (copy on write; the objects are
frozen out of the collector's reach first, so a collection does not write them all), as
Android's zygote shares its apps'. A job is the spare's (the same message and descriptors);
the zygote answers with the shim's pid, and reaps its shims as they end (the agent waits
for a shim through a pidfd, as for one it adopted). An empty read (the agent gone) ends the
zygote, not the shims: each is in its own session.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys

from . import supervise  # noqa: F401 (its shims' part: imported once, shared by every fork)
from .spare import MAX_FDS, MAX_MESSAGE, run_job


def _reap(_signum: int, _frame: object) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def run_zygote(fd: int) -> int:
    """Fork a shim for each job on the socket ``fd``, answering its pid; 0 once it closes."""
    sock = socket.socket(fileno=fd)
    signal.signal(signal.SIGCHLD, _reap)
    gc.freeze()
    while True:
        message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS)
        if not message:
            return 0
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                sock.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the shim waits for its own
                os.setsid()
                code = run_job(message, fds)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        for received in fds:
            os.close(received)
        sock.send(str(pid).encode())
