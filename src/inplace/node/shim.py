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
from typing import Any

# -- the kernel's constants (linux/sched.h, linux/mount.h, linux/prctl.h, linux/capability.h) --

CLONE_NEWNS = 0x00020000
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
PR_SET_KEEPCAPS = 8
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
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
            _check(libc().unshare(CLONE_NEWNS), "unshare the mount namespace")
            build_root(plan)
            os.write(ready_w, b"ok")
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
        if report == b"ok":
            ensure_private_holder(os.path.dirname(pin))
            os.close(os.open(pin, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
            mount(f"/proc/{pid}/ns/mnt", pin, None, MS_BIND)
            code = 0
        else:
            sys.stderr.write(report.decode(errors="replace").removeprefix("error ") + "\n")
    except SetupError as exc:
        sys.stderr.write(f"{exc}\n")
    finally:
        os.close(done_w)
        os.waitpid(pid, 0)
    if code == 0:
        sys.stdout.write("ok\n")
    return code


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


def enter(launch: dict[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """Become the container's process (runc's order, see the module docstring); the
    environment to ``execve`` with: ``env`` completed by :func:`prepare_env` inside the
    sandbox, before the user changes (runc's ``finalizeNamespace``)."""
    seccomp = read_seccomp(launch["seccomp"]) if launch.get("seccomp") else None
    namespace = launch.get("mount_namespace")
    if namespace:
        fd = os.open(namespace, os.O_RDONLY | os.O_CLOEXEC)
        try:
            _check(libc().setns(fd, CLONE_NEWNS), "join the pod's mount namespace")
        finally:
            os.close(fd)
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


def run_exec(launch_path: str, argv: list[str]) -> int:
    launch = read_launch(launch_path) or {}
    given = launch.get("env")
    try:
        env = enter(launch, given if given is not None else os.environ)
    except SetupError as exc:
        sys.stderr.write(f"{exc}\n")
        return 126
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        sys.stderr.write(f"{argv[0]}: {exc.strerror}\n")
        return 126 if isinstance(exc, PermissionError) else 127
    return 127


# -- the container shim ------------------------------------------------------------------------


def write_status(path: str, status: dict[str, Any]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(status, f)
    os.replace(tmp, path)


def run_shim(go_fd: int, report_fd: int, exit_path: str, launch_path: str, argv: list[str]) -> int:
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(s, signal.SIG_IGN)
    launch = read_launch(launch_path)
    if launch is not None:
        libc()  # loaded before the fork, so the child does no dlopen
    adj = "/proc/self/oom_score_adj"
    old_adj = None
    try:
        with open(adj) as f:
            saved = f.read().strip()
        with open(adj, "w") as f:
            f.write("-1000")
        old_adj = saved
    except OSError:
        pass
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 127
        try:
            os.setpgid(0, 0)
            os.close(err_r)
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
                with open(adj, "w") as f:
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
    try:
        os.write(report_fd, f"child {pid}\n".encode())
    except OSError:  # the agent is gone: the child reads EOF instead of go and exits
        pass
    os.close(err_w)
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
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os._exit(125)
    acked = b""
    while chunk := os.read(go_fd, 64):  # until the agent acks (ok, then close) or dies
        acked += chunk
    os.close(go_fd)
    if b"ok" not in acked:  # the agent died before it recorded the workload: nobody would
        try:  # ever stop it, and its successor starts the container again
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
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
    if mode == "sandbox" and len(argv) == 3:
        return run_sandbox(argv[2])
    if mode == "unpin" and len(argv) == 3:
        return run_unpin(argv[2])
    if mode == "release" and len(argv) == 3:
        return run_release(argv[2])
    sys.stderr.write(f"usage: shim.py shim|exec|sandbox|unpin ... (got {argv[1:]})\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
