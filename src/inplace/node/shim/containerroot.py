"""A container's own root: the host's root as the read-only lower layer of an overlay with a
per-container writable layer (or, where overlay is refused or the root is read-only, the
host's directories bound read-only), runc's masked and read-only paths in ``/proc`` and
``/sys``, then ``pivot_root``."""

from __future__ import annotations

import contextlib
import os
import stat

from .kernel import (
    AT_FDCWD,
    CLONE_NEWNS,
    MOVE_MOUNT,
    MOVE_MOUNT_F_EMPTY_PATH,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    OPEN_TREE,
    OPEN_TREE_CLOEXEC,
    OPEN_TREE_CLONE,
    PIVOT_ROOT,
    SetupError,
    checked,
    libc,
    mount,
    umount,
)
from .mounts import mount_flags, mount_points_under, remount_readonly

TYPE_CHECKING = False  # typing costs ~6 ms of the shim's start: names for the checkers only
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

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
    return checked(
        libc().syscall(OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC),
        f"clone the mount of {path}",
    )


def move_mount(tree: int, target: str) -> None:
    checked(
        libc().syscall(MOVE_MOUNT, tree, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
        f"attach a mount on {target}",
    )


def remove_tree(path: str) -> None:
    """``shutil.rmtree(path, ignore_errors=True)`` without importing shutil (~10 ms of a
    shim's start): bottom up, symlinks removed and never followed."""
    if not os.path.lexists(path):
        return
    for _, dirs, files, fd in os.fwalk(path, topdown=False):
        for name in files:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=fd)
        for name in dirs:
            try:
                os.rmdir(name, dir_fd=fd)
            except NotADirectoryError:  # a symlink to a directory
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
            except OSError:
                pass
    with contextlib.suppress(OSError):
        os.rmdir(path)


def fresh_layer(layer: str) -> None:
    """Empty the container's writable layer (a restarted container starts from a clean one,
    as a new container on containerd does) and make its ``upper`` and ``work`` directories."""
    remove_tree(layer)
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
        checked(libc().unshare(CLONE_NEWNS), "unshare the container's mount namespace")
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
        checked(libc().syscall(PIVOT_ROOT[os.uname().machine], b".", b"."), "pivot_root")
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
            MS_NOSUID if mount_flags(source) & MS_NOSUID else 0,
            f"lowerdir={source},upperdir={upper},workdir={work}",
        )
