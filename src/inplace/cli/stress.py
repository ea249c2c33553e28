"""`inplace stress`: a small workload generator like the classic ``stress`` tool, built in so
demos and tests need nothing from outside the package.

    inplace stress --vm 1 --vm-bytes 500M --vm-hold 5      # allocate 500M, hold it 5 s, exit 0
    inplace stress --cpu 2 --timeout 30s                   # two busy CPUs for 30 s

Workers are forked processes, as in ``stress``: ``--vm N`` workers each allocate
``--vm-bytes`` (a Kubernetes quantity: ``500M`` is 500 000 000 bytes, ``512Mi`` 512 MiB; classic
``stress`` reads ``M`` as MiB), touching every page so it is really resident, hold it
``--vm-hold`` seconds, free it, and go again until ``--timeout``; without ``--timeout`` each
does it once. ``--cpu N`` workers spin until ``--timeout``, or until the vm workers are done.

The result is what a container runtime should see: exit 0 when every worker finished; when a
worker is killed by a signal (the kernel's OOM killer picks the largest process, a vm
worker), ``inplace stress`` says so and then dies of the same signal, so a pod whose stress
was OOM-killed is reported ``OOMKilled``, not ``Error``.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Final, NoReturn

from inplace.api.quantity import Format, Quantity, QuantityError
from inplace.api.timestamps import parse_go_duration

__all__ = ["add_arguments", "main", "parse_size"]

CHUNK: Final = 16 << 20
"""Bytes allocated (and touched) at a time; a paused worker stops within one."""
_FILL: Final = b"\xa5"


def parse_size(text: str) -> int:
    """``--vm-bytes``: a Kubernetes quantity of bytes, above 0."""
    try:
        size = Quantity.parse(text).value()
    except QuantityError as exc:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: {exc.reason}") from exc
    if size <= 0:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: must be greater than 0")
    return size


def parse_seconds(text: str) -> float:
    """``--timeout``/``--vm-hold``: plain seconds (``30``) or a Go duration (``1m30s``)."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_go_duration(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc
    if seconds < 0 or math.isnan(seconds):
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: must not be negative")
    return seconds


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--vm", type=int, default=0, metavar="N", help="memory workers")
    parser.add_argument(
        "--vm-bytes",
        type=parse_size,
        default=256 * 2**20,
        metavar="SIZE",
        help="bytes each memory worker allocates (a quantity: 500M, 1.5G, 512Mi; default 256Mi)",
    )
    parser.add_argument(
        "--vm-hold",
        type=parse_seconds,
        default=0.0,
        metavar="SECONDS",
        help="how long a memory worker holds its allocation before freeing it (default 0)",
    )
    parser.add_argument("--cpu", type=int, default=0, metavar="N", help="CPU workers")
    parser.add_argument(
        "--timeout",
        type=parse_seconds,
        default=None,
        metavar="SECONDS",
        help="run the workers this long (seconds or 1m30s); without it, each memory worker "
        "allocates once and CPU workers run until the memory workers are done",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="say only what failed")
    return parser


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(f"inplace stress: info: [{os.getpid()}] {text}", flush=True)


def _human(size: int) -> str:
    binary = size % 1024 == 0 and size % 1000 != 0
    return str(Quantity.from_int(size, Format.BINARY_SI if binary else Format.DECIMAL_SI))


def vm_round(size: int, hold: float, quiet: bool, number: int) -> None:
    """Allocate and touch ``size`` bytes in chunks, hold them, free them."""
    started = time.monotonic()
    chunks: list[bytearray] = []
    left = size
    while left > 0:
        step = min(CHUNK, left)
        chunks.append(bytearray(_FILL) * step)  # filled: every page resident
        left -= step
    took = time.monotonic() - started
    _say(quiet, f"vm worker {number}: allocated {_human(size)} in {took:.2f}s")
    if hold > 0:
        time.sleep(hold)
    chunks.clear()


def _vm_worker(args: argparse.Namespace, number: int, deadline: float | None) -> None:
    while True:
        vm_round(args.vm_bytes, args.vm_hold, args.quiet, number)
        if deadline is None or time.monotonic() >= deadline:
            return


def _cpu_worker(args: argparse.Namespace, number: int, deadline: float | None) -> None:
    x = 0.0
    while deadline is None or time.monotonic() < deadline:
        for i in range(100_000):
            x += math.sqrt(i)


def _fork(work: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:  # the worker
        code = 0
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            work()
        except MemoryError:
            print(f"inplace stress: FAIL: [{os.getpid()}] out of memory", flush=True)
            code = 1
        except BaseException:
            code = 1
        os._exit(code)
    return pid


def _die_of(sig: int) -> NoReturn:
    if sig not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    time.sleep(1)  # SIGKILL and the default fatal signals end us here
    sys.exit(128 + sig)


def run(args: argparse.Namespace) -> int:
    if args.vm < 0 or args.cpu < 0:
        print("inplace stress: FAIL: worker counts must not be negative", file=sys.stderr)
        return 2
    if args.vm == 0 and args.cpu == 0:
        print("inplace stress: FAIL: nothing to do (--vm N or --cpu N)", file=sys.stderr)
        return 2
    if args.cpu and not args.vm and args.timeout is None:
        _say(args.quiet, "no --timeout: the CPU workers run until interrupted")
    started = time.monotonic()
    deadline = None if args.timeout is None else started + args.timeout
    _say(args.quiet, f"dispatching hogs: {args.cpu} cpu, {args.vm} vm ({_human(args.vm_bytes)})")
    vm = [_fork(functools.partial(_vm_worker, args, n, deadline)) for n in range(1, args.vm + 1)]
    cpu = [_fork(functools.partial(_cpu_worker, args, n, deadline)) for n in range(1, args.cpu + 1)]
    failed: tuple[int, int] | None = None  # (pid, signal or -exit code)

    def stop_all(pids: Sequence[int]) -> None:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue

    def on_term(signum: int, _frame: object) -> None:
        stop_all([*vm, *cpu])
        _die_of(signum)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    live = set(vm + cpu)
    while live:
        pid, status = os.wait()
        live.discard(pid)
        if os.WIFSIGNALED(status) and failed is None:
            failed = (pid, os.WTERMSIG(status))
        elif os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0 and failed is None:
            failed = (pid, -os.WEXITSTATUS(status))
        if failed is not None:
            stop_all(list(live))
        elif pid in vm and not (live & set(vm)) and args.timeout is None:
            stop_all(list(live))  # the memory work is done: so are the CPU workers
            for other in list(live):
                os.waitpid(other, 0)
            live.clear()
    elapsed = time.monotonic() - started
    if failed is None:
        _say(args.quiet, f"successful run completed in {elapsed:.1f}s")
        return 0
    pid, how = failed
    me = os.getpid()
    if how > 0:
        name = signal.Signals(how).name
        print(f"inplace stress: FAIL: [{me}] worker {pid} got signal {how} ({name})", flush=True)
        print(f"inplace stress: FAIL: [{me}] failed run completed in {elapsed:.1f}s", flush=True)
        _die_of(how)
    print(f"inplace stress: FAIL: [{me}] worker {pid} exited with {-how}", flush=True)
    print(f"inplace stress: FAIL: [{me}] failed run completed in {elapsed:.1f}s", flush=True)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = add_arguments(
        argparse.ArgumentParser(prog="inplace stress", description=(__doc__ or "").split("\n\n")[0])
    )
    return run(parser.parse_args(argv))
