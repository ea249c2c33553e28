"""The node's stdlib-only helper: container shim, sandbox builder, and the way into a sandbox.

This package runs as its own program (:func:`command`: ``python3 -I -S -c BOOTSTRAP MODE
...``, the package imported as the top-level ``shim`` from its compiled files), never imported
by the agent at run time (tests import its pure parts): it must start in milliseconds and
depend on nothing but the standard library, because it outlives the agent. Its modes
(:mod:`.main`):

``shim GO_FD REPORT_FD EXIT_PATH LAUNCH_PATH|- WAITER|- COMMAND...``
    The per-container supervisor (:mod:`.supervise`; see :mod:`inplace.node.runtime` for the
    protocol): forks the workload, which enters its sandbox (:func:`.enter.enter`) and execs
    ``COMMAND``; waits for it and records how it ended in ``EXIT_PATH``. Once the workload
    runs, the supervisor and the container's PID 1 exec ``WAITER`` (:data:`NATIVE_PROGRAM`,
    ``inplace-shim.c``) to wait in a few dozen KiB instead of an interpreter's pages.
``exec LAUNCH_PATH COMMAND...`` and ``enter PID LAUNCH_PATH COMMAND...``
    Enter a running container's sandbox (same namespaces, user, capabilities, seccomp filter,
    working directory and environment) and exec ``COMMAND`` there: what ``kubectl exec``
    needs (:mod:`.enter`).
``sandbox PLAN_PATH``
    Build a pod's mount namespace (:func:`.podroot.build_root`) and pin it on the host, as
    ``ip netns`` pins network namespaces, so it outlives this process and the agent.
``unpin PIN_PATH``
    Release a pinned namespace (lazy unmount, then remove the pin file).
``release HOLDER``
    Unmount the pins' directory once it holds no pin.

Its parts: :mod:`.kernel` (constants, libc calls), :mod:`.paths` (paths inside a root),
:mod:`.mounts`, :mod:`.podroot` (a pod's sandbox), :mod:`.containerroot` (a container's own
root), :mod:`.enter`, :mod:`.supervise`. Imported from ``.pyc`` files, not compiled from a
``-c`` source on every start (a 1,300-line source took ~17 ms to compile), and ``ps`` shows a
short command line.
"""

from __future__ import annotations

import os
import sys

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The directory holding this package: appended (after the standard library, which it can
never shadow) to the shim's ``sys.path``."""

BOOTSTRAP = (
    f"import os, sys; sys.path.append({PACKAGE_PARENT!r}); "
    "from shim.main import main; code = main(sys.argv); "
    "sys.stdout.flush(); sys.stderr.flush(); os._exit(code)"
)
"""The shim's program: its mode, then ``os._exit`` (files are closed by then, the standard
streams flushed): an interpreter's teardown would add milliseconds to every container's
exit the agent waits for."""


NATIVE_PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inplace-shim")
"""The shim's long-lived half in C (``inplace-shim.c`` beside this file: waiting for the
workload, recording its end, a container's PID 1), compiled by the package's install
(``setup.py``)."""


def native_program() -> str | None:
    """:data:`NATIVE_PROGRAM` when it was built, else None (the shims then wait in Python)."""
    return NATIVE_PROGRAM if os.access(NATIVE_PROGRAM, os.X_OK) else None


def command(*args: str) -> list[str]:
    """The command line that runs the shim in one of its modes (``args[0]``)."""
    return [sys.executable, "-I", "-S", "-c", BOOTSTRAP, *args]
