"""A pod's sandbox: its mount namespace built (the host's root with the data dir shadowed,
volumes bound), pinned on the host as ``ip netns`` pins network namespaces so it outlives
the agent, released when the pod goes; and the PID 1 of a pod whose containers share a PID
namespace."""

from __future__ import annotations

import json
import os
import signal
import sys

from .kernel import (
    CLONE_NEWIPC,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUTS,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_REC,
    PIVOT_ROOT,
    SetupError,
    checked,
    libc,
    mount,
    umount,
)
from .mounts import is_mount_point, mount_points_under, populate, remount_readonly, shadow
from .paths import ensure_path, resolve_in_root

TYPE_CHECKING = False  # typing costs ~6 ms of the shim's start: names for the checkers only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# -- building a pod's root -----------------------------------------------------------------------


def build_root(plan: dict[str, Any]) -> None:
    """In a fresh mount namespace: the memory volumes of ``plan["tmpfs"]`` mounted on their
    host directories (in this namespace only), a tmpfs root showing the host's ``/`` (each
    top-level entry bind-mounted), the paths of ``plan["hide"]`` emptied (the cluster's own
    data), the volumes of ``plan["mounts"]`` at their paths, then ``pivot_root`` into it."""
    root = plan["root"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")
    for path, options in (plan.get("tmpfs") or {}).items():
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, options)
    host = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        populate(root, host)
    finally:
        os.close(host)
    owned = {root}
    for hidden in plan.get("hide", ()):
        inside = resolve_in_root(root, hidden)
        if not os.path.isdir(inside):
            continue
        for point in mount_points_under(inside):
            umount(point)
        if os.path.isdir(inside):
            mount("tmpfs", inside, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=4k")
            remount_readonly(inside)
            owned.add(inside)
    for m in plan.get("mounts", ()):
        source = m["source"]
        if m.get("mkdir") and not os.path.lexists(source):
            os.makedirs(source, 0o750)
        is_file = not os.path.isdir(source)
        target = ensure_path(root, m["target"], is_file=is_file, owned=owned, shadow=shadow)
        mount(source, target, None, MS_BIND | MS_REC)
        if m.get("readonly"):
            remount_readonly(target)
    os.chdir(root)
    checked(libc().syscall(PIVOT_ROOT[os.uname().machine], b".", b"."), "pivot_root")
    umount(".")
    os.chdir("/")


def sandbox_flags(plan: Mapping[str, Any]) -> int:
    """The namespaces a pod gets: mount always, UTS unless ``hostNetwork`` (no hostname in
    the plan), IPC unless ``hostIPC``."""
    flags = CLONE_NEWNS
    if plan.get("hostname") is not None:
        flags |= CLONE_NEWUTS
    if plan.get("ipc"):
        flags |= CLONE_NEWIPC
    return flags


def pins_of(plan: Mapping[str, Any]) -> dict[str, str]:
    """Where each of the pod's namespaces is pinned: ``PIN`` (mount), ``PIN.uts``,
    ``PIN.ipc``."""
    pin = str(plan["pin"])
    pins = {"mnt": pin}
    if plan.get("hostname") is not None:
        pins["uts"] = f"{pin}.uts"
    if plan.get("ipc"):
        pins["ipc"] = f"{pin}.ipc"
    return pins


def run_sandbox(plan_path: str) -> int:
    """Build the namespace in a child, pin it from the host side, report ``ok`` on stdout."""
    with open(plan_path) as fh:
        plan = json.load(fh)
    pin = plan["pin"]
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(done_w)
        try:
            checked(libc().unshare(sandbox_flags(plan)), "unshare the pod's namespaces")
            hostname = plan.get("hostname")
            if hostname is not None:
                name = hostname.encode()
                checked(libc().sethostname(name, len(name)), "set the pod's hostname")
            build_root(plan)
            init = start_pod_init() if plan.get("share_pid") else 0
            os.write(ready_w, f"ok {init}".encode())
        except BaseException as exc:
            os.write(ready_w, f"error {exc}".encode())
            os._exit(1)
        os.close(ready_w)
        os.read(done_r, 1)  # the host side pinned us (or gave up)
        os._exit(0)
    os.close(ready_w)
    os.close(done_r)
    report = b""
    while chunk := os.read(ready_r, 4096):
        report += chunk
    code = 1
    try:
        init = int(report.split()[1]) if report.startswith(b"ok ") else 0
        if report.startswith(b"ok "):
            ensure_private_holder(os.path.dirname(pin))
            if init:
                pid_pin = f"{pin}.pid"
                os.close(os.open(pid_pin, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
                mount(f"/proc/{init}/ns/pid", pid_pin, None, MS_BIND)
            os.close(os.open(pin, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
            for kind, path in pins_of(plan).items():
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
                mount(f"/proc/{pid}/ns/{kind}", path, None, MS_BIND)
            code = 0
        else:
            sys.stderr.write(report.decode(errors="replace").removeprefix("error ") + "\n")
    except SetupError as exc:
        sys.stderr.write(f"{exc}\n")
    finally:
        os.close(done_w)
        os.waitpid(pid, 0)
    if code == 0:
        sys.stdout.write(f"ok {init}\n")
    return code


def start_pod_init() -> int:
    """The PID 1 of a pod whose containers share one PID namespace (``shareProcessNamespace``),
    as upstream's pause container: forked into a new PID namespace, in its own session,
    it only reaps the orphans given to it. Its host pid (the agent kills it with the pod)."""
    checked(libc().unshare(CLONE_NEWPID), "unshare the pod's PID namespace")
    pid = os.fork()
    if pid:
        return pid
    os.setsid()
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # whoever reads the tool's output sees EOF
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)

    def reap(_sig: int, _frame: Any) -> None:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass

    signal.signal(signal.SIGCHLD, reap)
    while True:
        signal.pause()


def ensure_private_holder(holder: str) -> None:
    """Pins live in a directory that is a private mount of itself (as ``ip netns`` keeps
    ``/run/netns``): a namespace pinned on a shared mount could propagate into itself."""
    os.makedirs(holder, 0o700, exist_ok=True)
    if not is_mount_point(holder):
        mount(holder, holder, None, MS_BIND)
    mount(None, holder, None, MS_PRIVATE)


def release(holder: str) -> None:
    """Unmount the pins' directory when it holds no pin any more."""
    if is_mount_point(holder) and not any(
        is_mount_point(os.path.join(holder, e)) for e in os.listdir(holder)
    ):
        umount(holder)


def unpin(pin: str) -> None:
    """Release a pinned namespace: a lazy unmount, then the pin file (either may be gone)."""
    try:
        umount(pin)
    except SetupError as exc:
        if "Invalid argument" not in str(exc) and "No such file" not in str(exc):
            raise
    try:
        os.unlink(pin)
    except FileNotFoundError:
        pass


def run_release(holder: str) -> int:
    try:
        release(holder)
    except SetupError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    return 0


def run_unpin(pin: str) -> int:
    try:
        unpin(pin)
    except SetupError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    return 0
