"""Seccomp filters: containerd's ``RuntimeDefault`` profile and ``Localhost`` profiles, compiled
to BPF for the shim to load.

Compiling uses **pyseccomp** (PyPI; a ctypes binding to the system's libseccomp, API
compatible with libseccomp's own Python bindings): libseccomp resolves syscall names per
architecture and generates the BPF program, which is written to a file; the shim (stdlib
only) loads it with ``prctl(PR_SET_SECCOMP)`` just before ``execve``, as runc loads the
program it compiles.

Profiles use the OCI/Docker JSON shape (``defaultAction``, ``architectures``,
``syscalls[].names/action/args/errnoRet``), so a ``Localhost`` profile is read from
``<data-dir>/seccomp/<localhostProfile>`` (kubelet's ``<root>/seccomp``) and compiled the
same way as the default one.

:func:`runtime_default_profile` is containerd's ``contrib/seccomp`` default profile: its
allow list, the three ``personality`` values, ``clone`` without namespace flags unless
CAP_SYS_ADMIN, the syscalls granted per capability in the bounding set, and — added here and
listed in :data:`NEWER_SYSCALLS` — the syscalls newer containerd releases allow that the
transcribed list predates (``clone3`` answers ENOSYS so libc falls back to ``clone``, as
containerd does). Everything else fails with EPERM.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pyseccomp

from .security import CAPABILITIES

__all__ = [
    "NEWER_SYSCALLS",
    "SeccompError",
    "compile_profile",
    "runtime_default_profile",
]


class SeccompError(Exception):
    """A profile that cannot be read or compiled."""


_ALLOWED: Final = [
    "accept",
    "accept4",
    "access",
    "alarm",
    "bind",
    "brk",
    "capget",
    "capset",
    "chdir",
    "chmod",
    "chown",
    "chown32",
    "clock_getres",
    "clock_getres_time64",
    "clock_gettime",
    "clock_gettime64",
    "clock_nanosleep",
    "clock_nanosleep_time64",
    "close",
    "connect",
    "copy_file_range",
    "creat",
    "dup",
    "dup2",
    "dup3",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_ctl_old",
    "epoll_pwait",
    "epoll_wait",
    "epoll_wait_old",
    "eventfd",
    "eventfd2",
    "execve",
    "execveat",
    "exit",
    "exit_group",
    "faccessat",
    "faccessat2",
    "fadvise64",
    "fadvise64_64",
    "fallocate",
    "fanotify_mark",
    "fchdir",
    "fchmod",
    "fchmodat",
    "fchown",
    "fchown32",
    "fchownat",
    "fcntl",
    "fcntl64",
    "fdatasync",
    "fgetxattr",
    "flistxattr",
    "flock",
    "fork",
    "fremovexattr",
    "fsetxattr",
    "fstat",
    "fstat64",
    "fstatat64",
    "fstatfs",
    "fstatfs64",
    "fsync",
    "ftruncate",
    "ftruncate64",
    "futex",
    "futex_time64",
    "futimesat",
    "getcpu",
    "getcwd",
    "getdents",
    "getdents64",
    "getegid",
    "getegid32",
    "geteuid",
    "geteuid32",
    "getgid",
    "getgid32",
    "getgroups",
    "getgroups32",
    "getitimer",
    "getpeername",
    "getpgid",
    "getpgrp",
    "getpid",
    "getppid",
    "getpriority",
    "getrandom",
    "getresgid",
    "getresgid32",
    "getresuid",
    "getresuid32",
    "getrlimit",
    "get_robust_list",
    "getrusage",
    "getsid",
    "getsockname",
    "getsockopt",
    "get_thread_area",
    "gettid",
    "gettimeofday",
    "getuid",
    "getuid32",
    "getxattr",
    "inotify_add_watch",
    "inotify_init",
    "inotify_init1",
    "inotify_rm_watch",
    "io_cancel",
    "ioctl",
    "io_destroy",
    "io_getevents",
    "io_pgetevents",
    "io_pgetevents_time64",
    "ioprio_get",
    "ioprio_set",
    "io_setup",
    "io_submit",
    "ipc",
    "kill",
    "lchown",
    "lchown32",
    "lgetxattr",
    "link",
    "linkat",
    "listen",
    "listxattr",
    "llistxattr",
    "_llseek",
    "lremovexattr",
    "lseek",
    "lsetxattr",
    "lstat",
    "lstat64",
    "madvise",
    "memfd_create",
    "mincore",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "mlock",
    "mlock2",
    "mlockall",
    "mmap",
    "mmap2",
    "mprotect",
    "mq_getsetattr",
    "mq_notify",
    "mq_open",
    "mq_timedreceive",
    "mq_timedreceive_time64",
    "mq_timedsend",
    "mq_timedsend_time64",
    "mq_unlink",
    "mremap",
    "msgctl",
    "msgget",
    "msgrcv",
    "msgsnd",
    "msync",
    "munlock",
    "munlockall",
    "munmap",
    "nanosleep",
    "newfstatat",
    "_newselect",
    "open",
    "openat",
    "openat2",
    "pause",
    "pipe",
    "pipe2",
    "poll",
    "ppoll",
    "ppoll_time64",
    "prctl",
    "pread64",
    "preadv",
    "prlimit64",
    "pselect6",
    "pselect6_time64",
    "pwrite64",
    "pwritev",
    "read",
    "readahead",
    "readlink",
    "readlinkat",
    "readv",
    "recv",
    "recvfrom",
    "recvmmsg",
    "recvmmsg_time64",
    "recvmsg",
    "remap_file_pages",
    "removexattr",
    "rename",
    "renameat",
    "renameat2",
    "restart_syscall",
    "rmdir",
    "rt_sigaction",
    "rt_sigpending",
    "rt_sigprocmask",
    "rt_sigqueueinfo",
    "rt_sigreturn",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "rt_sigtimedwait_time64",
    "rt_tgsigqueueinfo",
    "sched_getaffinity",
    "sched_getattr",
    "sched_getparam",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_getscheduler",
    "sched_rr_get_interval",
    "sched_rr_get_interval_time64",
    "sched_setaffinity",
    "sched_setattr",
    "sched_setparam",
    "sched_setscheduler",
    "sched_yield",
    "seccomp",
    "select",
    "semctl",
    "semget",
    "semop",
    "semtimedop",
    "semtimedop_time64",
    "send",
    "sendfile",
    "sendfile64",
    "sendmmsg",
    "sendmsg",
    "sendto",
    "setfsgid",
    "setfsgid32",
    "setfsuid",
    "setfsuid32",
    "setgid",
    "setgid32",
    "setgroups",
    "setgroups32",
    "setitimer",
    "setpgid",
    "setpriority",
    "setregid",
    "setregid32",
    "setresgid",
    "setresgid32",
    "setresuid",
    "setresuid32",
    "setreuid",
    "setreuid32",
    "setrlimit",
    "set_robust_list",
    "setsid",
    "setsockopt",
    "set_thread_area",
    "set_tid_address",
    "setuid",
    "setuid32",
    "setxattr",
    "shmat",
    "shmctl",
    "shmdt",
    "shmget",
    "shutdown",
    "sigaltstack",
    "signalfd",
    "signalfd4",
    "sigprocmask",
    "sigreturn",
    "socket",
    "socketcall",
    "socketpair",
    "splice",
    "stat",
    "stat64",
    "statfs",
    "statfs64",
    "statx",
    "symlink",
    "symlinkat",
    "sync",
    "sync_file_range",
    "syncfs",
    "sysinfo",
    "syslog",
    "tee",
    "tgkill",
    "time",
    "timer_create",
    "timer_delete",
    "timer_getoverrun",
    "timer_gettime",
    "timer_gettime64",
    "timer_settime",
    "timer_settime64",
    "timerfd_create",
    "timerfd_gettime",
    "timerfd_gettime64",
    "timerfd_settime",
    "timerfd_settime64",
    "times",
    "tkill",
    "truncate",
    "truncate64",
    "ugetrlimit",
    "umask",
    "uname",
    "unlink",
    "unlinkat",
    "utime",
    "utimensat",
    "utimensat_time64",
    "utimes",
    "vfork",
    "vmsplice",
    "wait4",
    "waitid",
    "waitpid",
    "write",
    "writev",
]

NEWER_SYSCALLS: Final = tuple(
    [
        "close_range",
        "epoll_pwait2",
        "fchmodat2",
        "futex_waitv",
        "landlock_add_rule",
        "landlock_create_ruleset",
        "landlock_restrict_self",
        "membarrier",
        "pidfd_open",
        "pidfd_send_signal",
        "pkey_alloc",
        "pkey_free",
        "pkey_mprotect",
        "preadv2",
        "process_mrelease",
        "pwritev2",
        "rseq",
        "map_shadow_stack",
        "cachestat",
    ]
)
"""Allowed by newer containerd releases than the transcribed list."""

_ARCH_ONLY: Final = {"x86_64": ("arch_prctl", "modify_ldt"), "aarch64": ()}

_BY_CAPABILITY: Final[Mapping[str, Sequence[str]]] = {
    "DAC_READ_SEARCH": ("open_by_handle_at",),
    "SYS_ADMIN": [
        "bpf",
        "clone",
        "clone3",
        "fanotify_init",
        "fsconfig",
        "fsmount",
        "fsopen",
        "fspick",
        "lookup_dcookie",
        "mount",
        "mount_setattr",
        "move_mount",
        "name_to_handle_at",
        "open_tree",
        "perf_event_open",
        "quotactl",
        "quotactl_fd",
        "setdomainname",
        "sethostname",
        "setns",
        "syslog",
        "umount",
        "umount2",
        "unshare",
    ],
    "SYS_BOOT": ("reboot",),
    "SYS_CHROOT": ("chroot",),
    "SYS_MODULE": ("delete_module", "init_module", "finit_module"),
    "SYS_PACCT": ("acct",),
    "SYS_PTRACE": ("kcmp", "process_madvise", "process_vm_readv", "process_vm_writev", "ptrace"),
    "SYS_RAWIO": ("iopl", "ioperm"),
    "SYS_TIME": ("settimeofday", "stime", "clock_settime", "clock_settime64", "adjtimex"),
    "SYS_TTY_CONFIG": ("vhangup",),
}

_NAMESPACE_FLAGS: Final = 0x7E020000
"""CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET: clone without SYS_ADMIN may
not create namespaces."""


def _rule(names: Iterable[str], action: str = "SCMP_ACT_ALLOW", **extra: Any) -> dict[str, Any]:
    return {"names": list(names), "action": action, **extra}


def runtime_default_profile(bounding: Iterable[int], machine: str | None = None) -> dict[str, Any]:
    """containerd's default profile for a container whose bounding set is ``bounding``."""
    machine = machine or os.uname().machine
    caps = {name for name, number in CAPABILITIES.items() if number in set(bounding)}
    syscalls = [
        _rule([*_ALLOWED, *NEWER_SYSCALLS, *_ARCH_ONLY.get(machine, ())]),
        *(
            _rule(["personality"], args=[{"index": 0, "value": v, "op": "SCMP_CMP_EQ"}])
            for v in (0x0, 0x0008, 0x20000, 0x20008, 0xFFFFFFFF)
        ),
    ]
    for cap, names in _BY_CAPABILITY.items():
        if cap in caps:
            syscalls.append(_rule(names))
    if "SYS_ADMIN" not in caps:
        syscalls.append(
            _rule(
                ["clone"],
                args=[
                    {
                        "index": 1 if machine.startswith("s390") else 0,
                        "value": _NAMESPACE_FLAGS,
                        "valueTwo": 0,
                        "op": "SCMP_CMP_MASKED_EQ",
                    }
                ],
            )
        )
        syscalls.append(_rule(["clone3"], "SCMP_ACT_ERRNO", errnoRet=errno.ENOSYS))
    return {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": errno.EPERM,
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"]
        if machine == "x86_64"
        else [],
        "syscalls": syscalls,
    }


_OPS: Final = {
    "SCMP_CMP_NE": pyseccomp.NE,
    "SCMP_CMP_LT": pyseccomp.LT,
    "SCMP_CMP_LE": pyseccomp.LE,
    "SCMP_CMP_EQ": pyseccomp.EQ,
    "SCMP_CMP_GE": pyseccomp.GE,
    "SCMP_CMP_GT": pyseccomp.GT,
    "SCMP_CMP_MASKED_EQ": pyseccomp.MASKED_EQ,
}

_ARCHES: Final = {
    "SCMP_ARCH_X86": "X86",
    "SCMP_ARCH_X86_64": "X86_64",
    "SCMP_ARCH_X32": "X32",
    "SCMP_ARCH_ARM": "ARM",
    "SCMP_ARCH_AARCH64": "AARCH64",
}


def _action(name: str, errno_ret: int | None) -> Any:
    if name == "SCMP_ACT_ALLOW":
        return pyseccomp.ALLOW
    if name == "SCMP_ACT_ERRNO":
        return pyseccomp.ERRNO(errno.EPERM if errno_ret is None else errno_ret)
    if name in ("SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD"):
        return pyseccomp.KILL
    if name == "SCMP_ACT_KILL_PROCESS":
        return pyseccomp.KILL_PROCESS
    if name == "SCMP_ACT_LOG":
        return pyseccomp.LOG
    if name == "SCMP_ACT_TRAP":
        return pyseccomp.TRAP
    raise SeccompError(f"unsupported seccomp action {name!r}")


def _build(profile: Mapping[str, Any]) -> Any:
    default = _action(
        str(profile.get("defaultAction", "SCMP_ACT_ALLOW")), profile.get("defaultErrnoRet")
    )
    flt = pyseccomp.SyscallFilter(default)
    for arch in profile.get("architectures") or ():
        name = _ARCHES.get(str(arch))
        if name is None:
            continue
        arch_id = getattr(pyseccomp.Arch, name)
        if arch_id != pyseccomp.Arch.NATIVE:
            try:
                flt.add_arch(arch_id)
            except Exception:  # an architecture this libseccomp or CPU cannot filter
                continue
    for rule in profile.get("syscalls") or ():
        action = _action(str(rule.get("action")), rule.get("errnoRet"))
        if action == default and not rule.get("args"):
            continue
        args = [
            pyseccomp.Arg(
                int(arg["index"]),
                _OPS[str(arg.get("op", "SCMP_CMP_EQ"))],
                int(arg.get("value", 0)),
                int(arg.get("valueTwo", 0)),
            )
            for arg in rule.get("args") or ()
        ]
        for name in rule.get("names") or ():
            try:
                flt.add_rule(action, str(name), *args)
            except Exception:  # a syscall unknown to this architecture (runc ignores these)
                continue
    return flt


def compile_profile(profile: Mapping[str, Any], cache_dir: Path) -> str:
    """Compile ``profile`` to a BPF file under ``cache_dir`` (one per distinct profile)."""
    text = json.dumps(profile, sort_keys=True).encode()
    path = cache_dir / f"{hashlib.sha256(text).hexdigest()[:24]}.bpf"
    if path.exists():
        return str(path)
    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        flt = _build(profile)
    except (KeyError, TypeError, ValueError) as exc:
        raise SeccompError(f"invalid seccomp profile: {exc}") from exc
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        flt.export_bpf(fh)
    os.replace(tmp, path)
    return str(path)


def load_localhost_profile(root: Path, relative: str) -> dict[str, Any]:
    """Read ``root/relative`` (kubelet's ``<root>/seccomp/<localhostProfile>``)."""
    path = (root / relative).resolve()
    if root.resolve() not in path.parents:
        raise SeccompError(f"localhostProfile {relative!r} is outside {root}")
    try:
        profile = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise SeccompError(f"cannot read seccomp profile {path}: {exc}") from exc
    if not isinstance(profile, dict):
        raise SeccompError(f"seccomp profile {path} is not a JSON object")
    return profile
