"""A spare shim: started ahead of need, its interpreter up and its parts imported, it waits
for one job on a socket and then becomes that job's shim or sandbox tool.

A shim's start is mostly the interpreter's and its imports' (~20 ms of a 2-core machine when
idle, several times that under load), and a pod start waits for two (its sandbox, then its
container's shim). The agent keeps one spare ready (:mod:`inplace.node.spares`) and hands it
the job: one message on the Unix socket it was started with, a JSON object (``argv``: the
mode and its arguments, where ``{fd0}``, ``{fd1}``... name the file descriptors that come
with the message after stdout and stderr; ``env``; ``cwd``) with the descriptors attached
(``SCM_RIGHTS``). The spare puts them in place and runs the mode as a freshly started shim
would: same process, same session (it was started in its own), same protocol. An empty read
(the agent gone) ends it.
"""

from __future__ import annotations

import json
import os
import socket

from . import podroot  # noqa: F401 (a spare runs the sandbox tool: imported before its job)
from .main import main

MAX_MESSAGE = 1 << 20
MAX_FDS = 8


def run_spare(fd: int) -> int:
    """Wait for the job on the socket ``fd``; its mode's exit code (0 when none came)."""
    with socket.socket(fileno=fd) as sock:
        message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS)
    return run_job(message, fds)


def run_job(message: bytes, fds: list[int]) -> int:
    """Become the job's process: the descriptors in place, its environment, working
    directory and name, then its mode; the mode's exit code (0 for no job)."""
    if not message or len(fds) < 2:
        for received in fds:
            os.close(received)
        return 0
    job = json.loads(message)
    stdout, stderr, *passed = fds
    os.dup2(stdout, 1)
    os.dup2(stderr, 2)
    for used in {stdout, stderr} - {1, 2}:
        os.close(used)
    for received in passed:
        os.set_inheritable(received, True)  # as ``pass_fds`` leaves them for the mode
    names = {f"{{fd{i}}}": str(received) for i, received in enumerate(passed)}
    argv = ["spare", *(names.get(arg, arg) for arg in job["argv"])]
    try:
        os.chdir(job.get("cwd") or "/")
    except OSError as exc:  # the agent checked; a directory gone since then
        os.write(2, f"spare shim: {exc}\n".encode())
        return 1
    os.environ.clear()
    os.environ.update(job.get("env") or {})
    _name_after(argv[1])
    return main(argv)


def _name_after(mode: str) -> None:
    """``ps`` shows a spare's command line (``... spare N``) whatever it became; its name
    (``ps -o comm``, ``top``) says it: ``inplace-shim``, ``inplace-sandbox``..."""
    try:
        with open("/proc/self/comm", "w") as comm:
            comm.write(f"inplace-{mode}"[:15])
    except OSError:
        pass
