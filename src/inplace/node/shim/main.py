"""The shim's modes, from its command line (see :mod:`inplace.node.shim`).

Each mode imports only its own part: the pod's sandbox tools (``sandbox``, ``unpin``,
``release``) start without the supervisor's and the way in's modules.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    """Run the mode ``argv[1]`` names; its exit code (2 for a command line it cannot read)."""
    mode = argv[1] if len(argv) > 1 else ""
    if mode == "shim" and len(argv) >= 8:
        from .supervise import run_shim

        waiter = None if argv[6] == "-" else argv[6]
        return run_shim(int(argv[2]), int(argv[3]), argv[4], argv[5], waiter, argv[7:])
    if mode in ("exec", "enter"):
        from .enter import run_exec

        if mode == "exec" and len(argv) >= 4:
            return run_exec(argv[2], argv[3:])
        if mode == "enter" and len(argv) >= 5 and argv[2].isdigit():
            return run_exec(argv[3], argv[4:], int(argv[2]))
    if mode in ("sandbox", "unpin", "release"):
        from .podroot import run_release, run_sandbox, run_unpin

        if mode == "sandbox" and len(argv) == 3:
            return run_sandbox(argv[2])
        if mode == "unpin" and len(argv) >= 3:
            return max(run_unpin(pin) for pin in argv[2:])
        if mode == "release" and len(argv) == 3:
            return run_release(argv[2])
    if mode == "zygote" and len(argv) == 3 and argv[2].isdigit():
        from .zygote import run_zygote

        return run_zygote(int(argv[2]))
    if mode == "spare" and len(argv) == 3 and argv[2].isdigit():
        from .spare import run_spare

        return run_spare(int(argv[2]))
    sys.stderr.write(
        f"usage: shim shim|exec|enter|sandbox|unpin|release|spare ... (got {argv[1:]})\n"
    )
    return 2
