"""Entering a sandbox in runc's order (``libcontainer/standard_init_linux.go``): namespaces,
working directory, the seccomp filter, capabilities, groups and ids, ``no_new_privs``, the
environment runc completes (``HOME``); and ``kubectl exec``'s way in."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys

# os.execvpe imports warnings when it runs: by then the process may be another user in another
# root, where the standard library cannot be read.
import warnings  # noqa: F401

from .containerroot import ContainerRoot, open_tree
from .kernel import (
    CLONE_NEWIPC,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUTS,
    LINUX_CAPABILITY_VERSION_3,
    NAMESPACE_FLAGS,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_CAP_AMBIENT_RAISE,
    PR_CAPBSET_DROP,
    PR_SET_KEEPCAPS,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    PR_SET_SECCOMP,
    SECCOMP_MODE_FILTER,
    SetupError,
    checked,
    libc,
    prctl,
)

TYPE_CHECKING = False  # typing costs ~6 ms of the shim's start: names for the checkers only
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

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
    checked(libc().capset(ctypes.byref(header), data), "capset")
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
    checked(
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
            checked(libc().setns(fd, flag), f"join the pod's namespace ({flag:#x})")
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
    return become(launch, env, seccomp)


def become(
    launch: Mapping[str, Any], env: Mapping[str, str], seccomp: bytes | None
) -> dict[str, str]:
    """The rest of :func:`enter`, once in the container's namespaces and root: working
    directory, environment, seccomp filter (``seccomp``, read before the root changed),
    capabilities, groups and ids, ``no_new_privs``; the environment to ``execve`` with."""
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
