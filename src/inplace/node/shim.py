"""The node's stdlib-only helper: container shim, sandbox builder, and the way into a sandbox.

This file is run as a script (``python3 -I -S shim.py MODE ...``), never imported by the agent
at run time (tests import it for its pure parts): it must start in milliseconds and depend on
nothing but the standard library, because it outlives the agent. Its modes:

``shim GO_FD REPORT_FD EXIT_PATH LAUNCH_PATH|- COMMAND...``
    The per-container supervisor (see :mod:`inplace.node.runtime` for the protocol): forks
    the workload, which enters its sandbox (:func:`enter`) and execs ``COMMAND``; waits for
    it and records how it ended in ``EXIT_PATH``.
``exec LAUNCH_PATH COMMAND...``
    Enter a running container's sandbox (same namespace, user, capabilities, seccomp filter,
    working directory and environment) and exec ``COMMAND`` there: what ``kubectl exec`` needs.
``sandbox PLAN_PATH``
    Build a pod's mount namespace (:func:`build_root`) and pin it on the host, as ``ip netns``
    pins network namespaces, so it outlives this process and the agent.
``unpin PIN_PATH``
    Release a pinned namespace (lazy unmount, then remove the pin file).
``release HOLDER``
    Unmount the pins' directory once it holds no pin.

Entering a sandbox follows runc's order (``libcontainer/standard_init_linux.go``): join the
mount namespace, change directory (as root first, again as the user if that was refused),
load the seccomp filter early when ``no_new_privs`` is off (loading needs CAP_SYS_ADMIN then),
drop the bounding set, keep capabilities across the uid change, set groups, gid and uid,
set the effective/permitted/inheritable sets and the ambient set, set ``no_new_privs``, load
the filter last when ``no_new_privs`` is on, then ``execve``. Once in the mount namespace, as
runc's ``prepareEnv`` does there, the environment gets ``HOME`` when it has none (or an empty
one): the user's home in the ``/etc/passwd`` the container sees, ``/`` without an entry
(:func:`prepare_env`); the process ``kubectl exec`` starts gets it the same way.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
import stat
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

# -- the kernel's constants (linux/sched.h, linux/mount.h, linux/prctl.h, linux/capability.h) --

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
NAMESPACE_FLAGS = {"ipc": CLONE_NEWIPC, "uts": CLONE_NEWUTS, "mnt": CLONE_NEWNS}
"""The namespaces a container joins, in the order it joins them (the mount one last: the
others' pins are on the host, hidden inside it)."""
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PR_SET_KEEPCAPS = 8
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
OPEN_TREE, MOVE_MOUNT = 428, 429
"""``open_tree`` and ``move_mount``: the same number on every machine (added after 5.1)."""
OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = os.O_CLOEXEC
MOVE_MOUNT_F_EMPTY_PATH = 4
AT_FDCWD = -100
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}
"""``pivot_root`` has no libc wrapper: its syscall number per machine."""

_STATVFS_TO_MS = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)
"""Flags a read-only remount must keep: the kernel refuses to clear locked ones."""

MAX_SYMLINKS = 40


class SetupError(Exception):
    """A step of entering or building a sandbox failed; the message names the step."""


_libc: Any = None


def libc() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(code)}")
    return result


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        libc().mount(
            source.encode() if source is not None else None,
            target.encode(),
            fstype.encode() if fstype is not None else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {source or fstype or ''} on {target}",
    )


def umount(target: str, flags: int = MNT_DETACH) -> None:
    _check(libc().umount2(target.encode(), flags), f"unmount {target}")


def prctl(option: int, arg2: int = 0, arg3: int = 0) -> None:
    _check(
        libc().prctl(option, ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), 0, 0), f"prctl {option}"
    )


# -- paths inside a root ----------------------------------------------------------------------


def split_path(path: str) -> list[str]:
    """The components of ``path`` with ``.`` and empty ones removed (``..`` is kept)."""
    return [part for part in path.split("/") if part not in ("", ".")]


def resolve_in_root(root: str, path: str, *, follow_last: bool = True) -> str:
    """``path`` resolved inside ``root`` as if ``root`` were ``/``: symlinks (absolute ones
    restart at ``root``) and ``..`` never leave it, as runc's securejoin. Missing components
    are kept as they are. Returns a host path under ``root``."""
    pending = split_path(path)
    done: list[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = os.path.join(root, *done, part)
        if not follow_last and not pending:
            done.append(part)
            break
        try:
            st = os.lstat(candidate)
        except OSError:
            done.append(part)
            continue
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > MAX_SYMLINKS:
                raise SetupError(f"too many levels of symbolic links in {path}")
            target = os.readlink(candidate)
            if target.startswith("/"):
                done = []
            pending = split_path(target) + pending
            continue
        done.append(part)
    return os.path.join(root, *done) if done else root


def ensure_path(
    root: str,
    path: str,
    *,
    is_file: bool,
    owned: set[str],
    shadow: Callable[[str], None],
) -> str:
    """Make ``path`` (inside ``root``) exist as a directory (or an empty file) to mount on,
    without writing to the host: a missing entry is created only in a directory this sandbox
    owns (its root, a directory it created, or one it ``shadow``-ed: covered with a tmpfs
    that re-binds the original entries). Returns the host path of the mount point."""
    target = resolve_in_root(root, path)
    rel = split_path(os.path.relpath(target, root)) if target != root else []
    current = root
    for i, part in enumerate(rel):
        nxt = os.path.join(current, part)
        last = i == len(rel) - 1
        if not os.path.lexists(nxt):
            if current not in owned:
                shadow(current)
                owned.add(current)
            if last and is_file:
                os.close(os.open(nxt, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
            else:
                os.mkdir(nxt, 0o755)
            owned.add(nxt)
        current = nxt
    return current


# -- building a pod's root -----------------------------------------------------------------------


def _bind_entry(source: str, target: str, st: os.stat_result) -> None:
    """Recreate ``source`` (one entry of a directory) at ``target``: symlinks are copied,
    anything else bind-mounted (recursively) on an empty directory or file."""
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(source), target)
        return
    if stat.S_ISDIR(st.st_mode):
        os.mkdir(target, 0o755)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
    mount(source, target, None, MS_BIND | MS_REC)


def populate(directory: str, source_fd: int) -> None:
    """Fill the (new, empty) ``directory`` with the entries of the directory ``source_fd``."""
    for name in os.listdir(source_fd):
        st = os.lstat(name, dir_fd=source_fd)
        _bind_entry(f"/proc/self/fd/{source_fd}/{name}", os.path.join(directory, name), st)


def shadow(directory: str) -> None:
    """Cover ``directory`` with a tmpfs that shows the same entries (bind mounts of the
    originals), so new entries can be made in it without touching what it covers."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        mode = stat.S_IMODE(st.st_mode)
        mount(
            "tmpfs",
            directory,
            "tmpfs",
            MS_NOSUID | MS_NODEV,
            f"mode={mode:o},uid={st.st_uid},gid={st.st_gid}",
        )
        populate(directory, fd)
    finally:
        os.close(fd)


def _mount_flags(path: str) -> int:
    f_flag = os.statvfs(path).f_flag
    return sum(ms for st, ms in _STATVFS_TO_MS if f_flag & st)


def remount_readonly(path: str) -> None:
    mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | _mount_flags(path))


def is_mount_point(path: str) -> bool:
    """Whether ``path`` is a mount point in this namespace (``os.path.ismount`` misses a
    directory bind-mounted onto itself: same device, same inode)."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as fh:
        return any(line.split(" ")[4].replace("\\040", " ") == path for line in fh)


def mount_points_under(prefix: str) -> list[str]:
    """Mount points at or below ``prefix`` in this namespace, deepest first."""
    points = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            point = line.split(" ")[4].replace("\\040", " ")
            if point == prefix or point.startswith(prefix.rstrip("/") + "/"):
                points.append(point)
    return sorted(set(points), key=lambda p: -p.count("/"))


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
    _check(libc().syscall(PIVOT_ROOT[os.uname().machine], b".", b"."), "pivot_root")
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
            _check(libc().unshare(sandbox_flags(plan)), "unshare the pod's namespaces")
            hostname = plan.get("hostname")
            if hostname is not None:
                name = hostname.encode()
                _check(libc().sethostname(name, len(name)), "set the pod's hostname")
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
    _check(libc().unshare(CLONE_NEWPID), "unshare the pod's PID namespace")
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


# -- a container's own root ------------------------------------------------------------------

MASKED_PATHS = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
)
"""What kubelet asks the runtime to mask unless ``privileged`` or ``procMount: Unmasked``
(upstream's ``pkg/securitycontext/util.go``, ``defaultMaskedPaths``; runc masks a file with
``/dev/null`` and a directory with an empty read-only tmpfs, ``libcontainer/rootfs_linux.go``)."""
READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")
"""upstream's ``defaultReadonlyPaths`` (same file): bind-mounted read-only on themselves."""
KERNEL_TREES = ("/proc", "/sys", "/dev")
"""Not layered: a fresh ``/proc``, and ``/sys`` and ``/dev`` as the pod sees them."""
READONLY_ROOT_SCRATCH = ("/tmp", "/var/tmp", "/run")
"""What stays writable (a tmpfs each) when the kernel refuses the copy-on-write layer."""
FALLBACK_NOTE = "readonly-root"
STAGING_FALLBACK = "/.inplace-staging"
"""Where a container's root is built when volumes cover every hidden directory: in the pod's
own root (a tmpfs), never shown to a container."""
"""The file in the layer directory that says why the root is read-only (the agent's event)."""


def open_tree(path: str) -> int:
    """A detached copy of the mount at ``path``, to attach in another mount namespace."""
    return _check(
        libc().syscall(OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC),
        f"clone the mount of {path}",
    )


def move_mount(tree: int, target: str) -> None:
    _check(
        libc().syscall(MOVE_MOUNT, tree, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
        f"attach a mount on {target}",
    )


def fresh_layer(layer: str) -> None:
    """Empty the container's writable layer (a restarted container starts from a clean one,
    as a new container on containerd does) and make its ``upper`` and ``work`` directories."""
    import shutil  # only a container with its own root needs it

    shutil.rmtree(layer, ignore_errors=True)
    os.makedirs(os.path.join(layer, "upper"), 0o700)
    os.makedirs(os.path.join(layer, "work"), 0o700)


def _is_under(path: str, prefixes: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def mount_points() -> list[str]:
    """This namespace's mount points, shallowest first; not the namespace files other pods
    pin (``nsfs``), which come and go with their pods and no container needs."""
    points = set()
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split(" ")
            if fields[fields.index("-") + 1] != "nsfs":
                points.add(fields[4].replace("\\040", " "))
    return sorted(points, key=lambda p: (p.count("/") if p != "/" else 0, p))


def _mask(path: str) -> None:
    if not os.path.lexists(path):
        return
    if os.path.isdir(path):
        mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    else:
        mount("/dev/null", path, None, MS_BIND)


def _readonly(path: str) -> None:
    if os.path.lexists(path):
        mount(path, path, None, MS_BIND | MS_REC)
        remount_readonly(path)


class ContainerRoot:
    """Builds a container's root in the (private copy of the) pod's mount namespace: every
    host directory the pod shows becomes an overlay whose lower layer is that directory and
    whose upper layer is the container's own (so its writes never reach the host), the
    pod's volumes and ``/dev``, ``/sys`` are bound as they are, a fresh ``/proc`` is mounted
    for the container's PID namespace, and runc's masks apply unless privileged."""

    def __init__(self, spec: Mapping[str, Any], layer_tree: int | None) -> None:
        self.spec = spec
        self.layer_tree = layer_tree
        self.privileged = bool(spec.get("privileged"))
        # readOnlyRootFilesystem: the host's directories read-only, no layer, no scratch
        self.read_only = bool(spec.get("read_only"))
        self.volumes = [str(v) for v in spec.get("volumes") or ()]
        self.hidden = [str(h) for h in spec.get("hide") or ()]
        # where the root is built: the outermost hidden directory, emptied in every pod; where
        # a volume covers them all (an emptyDir at /tmp over a data directory under /tmp), a
        # directory of the pod's own root that no container is shown
        self.staging = next(
            (h for h in sorted(self.hidden, key=len) if os.path.isdir(h)), STAGING_FALLBACK
        )
        if self.staging == STAGING_FALLBACK:
            os.makedirs(STAGING_FALLBACK, 0o700, exist_ok=True)
        self.root = os.path.join(self.staging, "root")
        self.layer = os.path.join(self.staging, "layer")
        self.readonly_reason: str | None = (
            None
            if spec.get("copy_on_write", True) or self.read_only
            else "the copy-on-write root is turned off"
        )
        self.layers = 0
        self.done: list[str] = []

    def build(self) -> None:
        points = mount_points()
        _check(libc().unshare(CLONE_NEWNS), "unshare the container's mount namespace")
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        mount("tmpfs", self.staging, "tmpfs", MS_NOSUID | MS_NODEV, "mode=700")
        os.mkdir(self.root, 0o755)
        mount("tmpfs", self.root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")
        if self.layer_tree is not None:
            os.mkdir(self.layer, 0o700)
            move_mount(self.layer_tree, self.layer)
        else:
            self.readonly_reason = self.readonly_reason or "no layer directory"
        for name in sorted(os.listdir("/")):
            self._top_level(name)
        for point in points:
            if point.count("/") >= 2 and point != "/" and not self._skipped(point):
                try:
                    self._place(point, top_level=False)
                except SetupError:
                    if os.path.lexists(point):
                        raise  # a mount gone since it was listed is no longer to be shown
        for hidden in self.hidden:
            inside = self.root + hidden
            if os.path.isdir(inside):
                mount("tmpfs", inside, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k")
        mount("proc", self.root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        if not self.privileged:
            for path in MASKED_PATHS:
                _mask(self.root + path)
            for path in READONLY_PATHS:
                _readonly(self.root + path)
        if self.readonly_reason is not None and self.layer_tree is not None:
            with open(os.path.join(self.layer, FALLBACK_NOTE), "w") as fh:
                fh.write(self.readonly_reason)
        if self.layer_tree is not None:
            umount(self.layer)
        if self.read_only or self.readonly_reason is not None:
            remount_readonly(self.root)  # no new top-level entry either
        os.chdir(self.root)
        _check(libc().syscall(PIVOT_ROOT[os.uname().machine], b".", b"."), "pivot_root")
        umount(".")
        os.chdir("/")

    def _skipped(self, point: str) -> bool:
        return (
            _is_under(point, self.done)
            or _is_under(point, self.hidden)
            or _is_under(point, [self.staging])
            or _is_under(point, ["/proc"])
        )

    def _top_level(self, name: str) -> None:
        source = "/" + name
        st = os.lstat(source)
        target = self.root + source
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(source), target)
        elif source == "/proc":
            os.mkdir(target, 0o555)
        elif source == STAGING_FALLBACK:
            return
        elif source == self.staging or _is_under(source, self.hidden):
            os.mkdir(target, 0o755)
        else:
            self._place(source, top_level=True)

    def _place(self, source: str, *, top_level: bool) -> None:
        """Put what the pod shows at ``source`` at the same path of the new root."""
        target = self.root + source
        is_dir = os.path.isdir(source) and not os.path.islink(source)
        if not os.path.lexists(target):
            if not top_level and not os.path.isdir(os.path.dirname(target)):
                return  # under a file or a symlink in the new root: nowhere to put it
            try:
                if is_dir:
                    os.mkdir(target, 0o755)
                else:
                    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
            except OSError:
                return  # a read-only parent (the fallback root)
        if _is_under(source, self.volumes) or _is_under(source, KERNEL_TREES):
            mount(source, target, None, MS_BIND | MS_REC)
            if not self.privileged and _is_under(source, ["/sys"]):
                for point in reversed(mount_points_under(target)):
                    remount_readonly(point)
            self.done.append(source)
            return
        if not is_dir:
            mount(source, target, None, MS_BIND)
            remount_readonly(target)
            return
        copy_on_write = not self.read_only and self.readonly_reason is None
        if copy_on_write and not any(c in source for c in ",:\\"):
            try:
                self._overlay(source, target)
                return
            except (SetupError, OSError) as exc:
                self.readonly_reason = str(exc)
        scratch = not self.read_only and source in READONLY_ROOT_SCRATCH
        if scratch and self.readonly_reason is not None:
            mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
            return
        mount(source, target, None, MS_BIND)
        remount_readonly(target)

    def _overlay(self, source: str, target: str) -> None:
        self.layers += 1
        upper = os.path.join(self.layer, "upper", str(self.layers))
        work = os.path.join(self.layer, "work", str(self.layers))
        st = os.stat(source)
        os.mkdir(upper, stat.S_IMODE(st.st_mode))
        os.chown(upper, st.st_uid, st.st_gid)
        os.chmod(upper, stat.S_IMODE(st.st_mode))  # the umask took bits off the mkdir's mode
        os.mkdir(work, 0o700)
        mount(
            "overlay",
            target,
            "overlay",
            MS_NOSUID if _mount_flags(source) & MS_NOSUID else 0,
            f"lowerdir={source},upperdir={upper},workdir={work}",
        )


def ensure_private_holder(holder: str) -> None:
    """Pins live in a directory that is a private mount of itself (as ``ip netns`` keeps
    ``/run/netns``): a namespace pinned on a shared mount could propagate into itself."""
    os.makedirs(holder, 0o700, exist_ok=True)
    if not is_mount_point(holder):
        mount(holder, holder, None, MS_BIND)
    mount(None, holder, None, MS_PRIVATE)


def run_release(holder: str) -> int:
    """Unmount the pins' directory when it holds no pin any more."""
    if is_mount_point(holder) and not any(
        is_mount_point(os.path.join(holder, e)) for e in os.listdir(holder)
    ):
        try:
            umount(holder)
        except SetupError as exc:
            sys.stderr.write(f"{exc}\n")
            return 1
    return 0


def run_unpin(pin: str) -> int:
    try:
        umount(pin)
    except SetupError as exc:
        if "Invalid argument" not in str(exc) and "No such file" not in str(exc):
            sys.stderr.write(f"{exc}\n")
            return 1
    try:
        os.unlink(pin)
    except FileNotFoundError:
        pass
    return 0


# -- entering a sandbox ----------------------------------------------------------------------


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def cap_mask(caps: Sequence[int]) -> int:
    mask = 0
    for cap in caps:
        mask |= 1 << cap
    return mask


def last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            return int(fh.read())
    except OSError:
        return 40


def current_bounding_set() -> list[int]:
    """The capabilities this process may still hold (its ``CapBnd``)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("CapBnd:"):
                mask = int(line.split()[1], 16)
                return [cap for cap in range(64) if mask >> cap & 1]
    return list(range(last_cap() + 1))


def set_capabilities(caps: dict[str, list[int]]) -> None:
    """Effective, permitted and inheritable with ``capset``, then the ambient set."""
    eff, prm, inh = (cap_mask(caps.get(k, [])) for k in ("effective", "permitted", "inheritable"))
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)(
        _CapData(eff & 0xFFFFFFFF, prm & 0xFFFFFFFF, inh & 0xFFFFFFFF),
        _CapData(eff >> 32, prm >> 32, inh >> 32),
    )
    _check(libc().capset(ctypes.byref(header), data), "capset")
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    for cap in caps.get("ambient", []):
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap)


def read_seccomp(path: str) -> bytes:
    """A compiled BPF filter (``sock_filter`` array, as libseccomp exports it), read before
    joining the namespace (where the node's files are hidden)."""
    with open(path, "rb") as fh:
        program = fh.read()
    if not program or len(program) % 8:
        raise SetupError(f"seccomp filter {path} is not a BPF program")
    return program


def load_seccomp(program: bytes) -> None:
    """Install a BPF filter."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(
        libc().prctl(
            PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), 0, 0
        ),
        "load the seccomp filter",
    )


# -- the environment the runtime completes ----------------------------------------------------

PASSWD_PATH = "/etc/passwd"
DEFAULT_HOME = "/"
"""runc's ``getUserHome`` default, for a user without a passwd entry (or no passwd at all)."""


def _atoi(text: bytes) -> int:
    """Go's ``strconv.Atoi`` with its error ignored (0), as moby/sys/user reads ids."""
    digits = text[1:] if text[:1] in (b"+", b"-") else text
    return int(text) if digits.isdigit() else 0


def passwd_home(uid: int, path: str = PASSWD_PATH) -> str:
    """runc's ``getUserHome`` (``libcontainer/env.go``): the home directory of the first entry
    for ``uid`` in the passwd file at ``path``, read as moby/sys/user's ``LookupUid`` reads it
    (the file itself, not NSS; a missing field is empty, an unparsable id 0), else ``/``."""
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                line = raw.strip()
                if not line:
                    continue
                fields = line.split(b":")
                if (_atoi(fields[2]) if len(fields) > 2 else 0) == uid:
                    return os.fsdecode(fields[5]) if len(fields) > 5 else ""
    except (OSError, ValueError):
        pass
    return DEFAULT_HOME


def prepare_env(env: Mapping[str, str], uid: int, passwd: str = PASSWD_PATH) -> dict[str, str]:
    """runc's ``prepareEnv`` for ``HOME``: a non-empty one is kept (the pod's ``env`` wins),
    an empty or missing one becomes :func:`passwd_home` of ``uid``."""
    out = dict(env)
    if not out.get("HOME"):
        out["HOME"] = passwd_home(uid, passwd)
    return out


def namespace_paths(launch: Mapping[str, Any], target: int | None) -> list[tuple[str, int]]:
    """The namespaces to join, each as a path and its kind: a new container joins its pod's
    pins (``launch["namespaces"]``, or only ``mount_namespace`` from an older agent); a
    process started in a running container (``target``, its main process on the host)
    joins that process's own, its PID namespace included (the caller then forks)."""
    if target is not None:
        if not (launch.get("namespaces") or launch.get("mount_namespace")):
            return []
        kinds = [("ipc", CLONE_NEWIPC), ("uts", CLONE_NEWUTS), ("mnt", CLONE_NEWNS)]
        if not _same_namespace(target, "pid"):
            kinds.insert(0, ("pid", CLONE_NEWPID))
        return [(f"/proc/{target}/ns/{kind}", flag) for kind, flag in kinds]
    pins = dict(launch.get("namespaces") or {"mnt": launch.get("mount_namespace")})
    return [(pins[k], flag) for k, flag in NAMESPACE_FLAGS.items() if pins.get(k)]


def _same_namespace(pid: int, kind: str) -> bool:
    return os.stat(f"/proc/{pid}/ns/{kind}").st_ino == os.stat(f"/proc/self/ns/{kind}").st_ino


def join_namespaces(launch: Mapping[str, Any], target: int | None) -> None:
    """Join the container's namespaces (:func:`namespace_paths`); a new container with its
    own root (``launch["rootfs"]``) then builds it (:class:`ContainerRoot`)."""
    rootfs = launch.get("rootfs") if target is None else None
    try:
        wanted = namespace_paths(launch, target)
        fds = [(os.open(path, os.O_RDONLY | os.O_CLOEXEC), flag) for path, flag in wanted]
    except OSError as exc:
        raise SetupError(f"open the container's namespaces: {exc.strerror}") from None
    layer_tree = open_tree(rootfs["layer"]) if rootfs and rootfs.get("layer") else None
    try:
        for fd, flag in fds:
            _check(libc().setns(fd, flag), f"join the pod's namespace ({flag:#x})")
    finally:
        for fd, _ in fds:
            os.close(fd)
    if rootfs:
        try:
            ContainerRoot(rootfs, layer_tree).build()
        except OSError as exc:
            raise SetupError(f"build the container's root: {exc}") from None
        finally:
            if layer_tree is not None:
                os.close(layer_tree)


def enter(
    launch: dict[str, Any], env: Mapping[str, str], target: int | None = None
) -> dict[str, str]:
    """Become the container's process (runc's order, see the module docstring); the
    environment to ``execve`` with: ``env`` completed by :func:`prepare_env` inside the
    sandbox, before the user changes (runc's ``finalizeNamespace``). With ``target`` (a
    running container's main process) it joins that container's namespaces instead."""
    seccomp = read_seccomp(launch["seccomp"]) if launch.get("seccomp") else None
    join_namespaces(launch, target)
    cwd = launch.get("working_dir") or "/"
    chdir_later = False
    try:
        os.chdir(cwd)
    except PermissionError:
        chdir_later = True
    except OSError as exc:
        raise SetupError(f"chdir to cwd ({cwd!r}) failed: {exc.strerror}") from None
    identity = launch.get("user")
    env = prepare_env(env, int(identity["uid"]) if identity is not None else os.getuid())
    no_new_privs = bool(launch.get("no_new_privs"))
    if seccomp and not no_new_privs:
        load_seccomp(seccomp)
    caps = launch.get("capabilities")
    if caps is not None:
        bounding = set(caps.get("bounding", []))
        for cap in range(last_cap() + 1):
            if cap not in bounding:
                prctl(PR_CAPBSET_DROP, cap)
    if identity is not None:
        prctl(PR_SET_KEEPCAPS, 1)
        try:
            os.setgroups(list(identity.get("groups", [])))
            os.setresgid(identity["gid"], identity["gid"], identity["gid"])
            os.setresuid(identity["uid"], identity["uid"], identity["uid"])
        except OSError as exc:
            raise SetupError(f"cannot set user {identity}: {exc.strerror}") from None
        if chdir_later:
            try:
                os.chdir(cwd)
            except OSError as exc:
                raise SetupError(f"chdir to cwd ({cwd!r}) failed: {exc.strerror}") from None
        prctl(PR_SET_KEEPCAPS, 0)
    if caps is not None:
        set_capabilities(caps)
    if no_new_privs:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
    if seccomp and no_new_privs:
        load_seccomp(seccomp)
    return env


def read_launch(path: str) -> dict[str, Any] | None:
    if path in ("", "-"):
        return None
    with open(path) as fh:
        launch: dict[str, Any] = json.load(fh)
    return launch


def run_exec(launch_path: str, argv: list[str], target: int | None = None) -> int:
    launch = read_launch(launch_path) or {}
    given = launch.get("env")
    try:
        fork = target is not None and any(
            f == CLONE_NEWPID for _, f in namespace_paths(launch, target)
        )
        env = enter(launch, given if given is not None else os.environ, target)
    except OSError as exc:
        sys.stderr.write(f"the container is gone: {exc.strerror}\n")
        return 126
    except SetupError as exc:
        sys.stderr.write(f"{exc}\n")
        return 126
    if fork:
        return _exec_in_pid_namespace(argv, env)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        sys.stderr.write(f"{argv[0]}: {exc.strerror}\n")
        return 126 if isinstance(exc, PermissionError) else 127
    return 127


def _exec_in_pid_namespace(argv: list[str], env: Mapping[str, str]) -> int:
    """A joined PID namespace takes only new children: fork the command into it, pass it the
    signals this process gets, and end as it ends (its code, or 128 + its signal). On a
    terminal the command leads its own foreground group (a shell restores the group it found
    when it exits, and ours is in the host's namespace, which it cannot see); it is killed
    with this process (``PR_SET_PDEATHSIG``), which the agent kills when the client goes."""
    pid = os.fork()
    if pid == 0:
        try:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # it goes when its parent is killed
            if os.isatty(0):  # its own foreground group: one the namespace can see
                os.setpgid(0, 0)
                signal.signal(signal.SIGTTOU, signal.SIG_IGN)
                os.tcsetpgrp(0, os.getpid())
                signal.signal(signal.SIGTTOU, signal.SIG_DFL)
            os.execvpe(argv[0], argv, env)
        except (OSError, SetupError) as exc:
            sys.stderr.write(f"{argv[0]}: {exc}\n")
            os._exit(126 if isinstance(exc, PermissionError) else 127)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, lambda n, _f: os.kill(pid, n))
    _, st = os.waitpid(pid, 0)
    return 128 + os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)


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
) -> NoReturn:
    """The forked workload: wait for ``go``, enter the sandbox, exec (errors to ``err_w``)."""
    code = 127
    try:
        os.setpgid(0, 0)
        os.close(report_fd)
        # The agent moves this process (not the shim) into the container's cgroup, then
        # says go: the workload is charged there from its first instruction.
        if os.read(go_fd, 2) != b"go":  # the agent died before the cgroup move
            os._exit(125)
        os.close(go_fd)
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
                env = enter(launch, launch.get("env", os.environ))
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
        self.pid = 0

    def start(self, workload: Callable[[], NoReturn], closing: Sequence[int]) -> int:
        """Fork the init (and through it the workload); the workload's host pid (0 when
        it could not start)."""
        self.pid = os.fork()
        if self.pid == 0:
            for fd in (self.pid_r, self.status_r, self.hold_w):
                os.close(fd)
            child = os.fork()
            if child == 0:
                os.close(self.status_w)
                os.close(self.hold_r)
                os.write(self.pid_w, os.readlink("/proc/self").encode())
                os.close(self.pid_w)
                workload()
            for fd in (self.pid_w, *closing):
                os.close(fd)
            self._serve(child)
        for fd in (self.pid_w, self.status_w, self.hold_r):
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


def _pid_namespace(launch: dict[str, Any] | None) -> str | None:
    """Enter the workload's PID namespace before the fork: ``container`` unshares a new one
    (then an init is needed), ``pod`` joins the pod's pinned one; an error message if not."""
    mode = (launch or {}).get("pid_namespace") or "host"
    try:
        if mode == "container":
            _check(libc().unshare(CLONE_NEWPID), "unshare the PID namespace")
        elif mode == "pod":
            fd = os.open(launch["pid_pin"], os.O_RDONLY | os.O_CLOEXEC)  # type: ignore[index]
            try:
                _check(libc().setns(fd, CLONE_NEWPID), "join the pod's PID namespace")
            finally:
                os.close(fd)
    except (SetupError, OSError) as exc:
        return str(exc)
    return None


def run_shim(go_fd: int, report_fd: int, exit_path: str, launch_path: str, argv: list[str]) -> int:
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
        pid = init.start(
            lambda: _workload(go_fd, report_fd, err_w, old_adj, launch, argv),
            (go_fd, report_fd, err_w, err_r),
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


def main(argv: list[str]) -> int:
    mode = argv[1] if len(argv) > 1 else ""
    if mode == "shim" and len(argv) >= 7:
        return run_shim(int(argv[2]), int(argv[3]), argv[4], argv[5], argv[6:])
    if mode == "exec" and len(argv) >= 4:
        return run_exec(argv[2], argv[3:])
    if mode == "enter" and len(argv) >= 5 and argv[2].isdigit():
        return run_exec(argv[3], argv[4:], int(argv[2]))
    if mode == "sandbox" and len(argv) == 3:
        return run_sandbox(argv[2])
    if mode == "unpin" and len(argv) >= 3:
        return max(run_unpin(pin) for pin in argv[2:])
    if mode == "release" and len(argv) == 3:
        return run_release(argv[2])
    sys.stderr.write(f"usage: shim.py shim|exec|sandbox|unpin ... (got {argv[1:]})\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
