"""A pod's sandbox: its own mount namespace, its volumes in it, and how a container enters.

Pods run host programs as host processes in their cgroups; what the sandbox adds is the
filesystem view. The first time a pod starts, the volume manager puts its volumes on the host
(:mod:`.volumes.manager`), then the shim's ``sandbox`` mode (:mod:`.shim`) builds a mount
namespace whose root is a tmpfs showing the host's ``/``, with the cluster's data directory
emptied and each volume mounted at the path the manifest names, and pins it at
``<data-dir>/sandboxes/<uid>`` (a bind mount of its ``/proc/PID/ns/mnt``, as ``ip netns``
does). The pin keeps the namespace alive without any process, so it survives a SIGKILL of
the agent; the next agent finds it by that path. When the pod goes, the pin is unmounted
(the kernel frees the namespace with its last process) and the pod's directory removed.

Every container of the pod joins that namespace before ``execve``, as the user and with the
privileges :mod:`.security` resolved (the *launch*, a JSON file next to the container's log,
which ``kubectl exec`` reuses through :func:`inplace.node.runtime.enter_command`).

A node agent that is not root cannot create namespaces: its pods run in the host's mount
namespace, and a pod with volumes or another user is refused with the reason (all but the
``kube-api-access-*`` volume every pod gets, which such a pod goes without).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from inplace.api.token_volume import is_token_volume

from .config import AgentConfig
from .env import EnvError, pod_hostname
from .seccomp import SeccompError, compile_profile, load_localhost_profile, runtime_default_profile
from .security import ConfigError, ContainerSecurity, HostUsers, UserDatabase, resolve_security
from .shim.containerroot import FALLBACK_NOTE
from .shim.enter import current_bounding_set
from .shim.kernel import SetupError
from .shim.paths import resolve_in_root
from .shim.podroot import release, unpin
from .spares import Spares
from .volumes.manager import VolumeError, VolumeManager, container_mounts, resolve_subpaths

__all__ = ["PodSandboxes", "SandboxError", "run_shim_tool"]

POD_INIT = "pod-init.pid"
"""In the pod's directory: the host pid of its PID 1 (0 when its containers share none)."""


class SandboxError(Exception):
    """The pod's sandbox cannot be built now (``FailedCreatePodSandBox``); retried."""


async def run_shim_tool(spares: Spares, *args: str) -> str:
    """Run a mode of the shim (through the node's spare); its stdout, or SandboxError with
    its stderr."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        popen = spares.run(args, stdout=out_w, stderr=err_w)
    except OSError as exc:
        os.close(out_r)
        os.close(err_r)
        raise SandboxError(f"cannot start the shim's {args[0]}: {exc}") from exc
    finally:
        os.close(out_w)
        os.close(err_w)
    done = asyncio.ensure_future(
        asyncio.gather(
            asyncio.to_thread(_read_all, out_r),
            asyncio.to_thread(_read_all, err_r),
            asyncio.to_thread(popen.wait),
        )
    )
    try:
        out, err, code = await asyncio.shield(done)
    except asyncio.CancelledError:
        # The tool mounts and unmounts: let it finish before the cancellation goes on, so
        # whoever cancelled (a pod stopping while its sandbox is made) tears down what the
        # tool made instead of racing it (found by the chaos storm: a pin left mounted).
        with contextlib.suppress(Exception):
            await done
        raise
    if code != 0:
        raise SandboxError(err.decode(errors="replace").strip() or f"shim {args[0]} failed")
    return out.decode()


def _read_all(fd: int) -> bytes:
    """Everything a pipe carries until its writers close it (then closed)."""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _unpin_all(pins: list[str]) -> None:
    for pin in pins:
        unpin(pin)


async def _unmounting(step: Callable[[Any], None], arg: Any) -> None:
    """Unmount in this process, in a thread (an unmount and an unlink need no fork: a tool's
    start would cost ~20 ms of the pod's teardown); a cancellation waits for it to finish,
    as for the tools, so whoever cancelled sees what it left."""
    work = asyncio.ensure_future(asyncio.to_thread(step, arg))
    try:
        await asyncio.shield(work)
    except asyncio.CancelledError:
        with contextlib.suppress(SetupError):
            await work
        raise
    except SetupError as exc:
        raise SandboxError(str(exc)) from exc


class PodSandboxes:
    """The sandboxes of one node's pods (see the module docstring)."""

    def __init__(
        self,
        config: AgentConfig,
        volumes: VolumeManager,
        *,
        enabled: bool | None = None,
        users: UserDatabase | None = None,
        spares: Spares | None = None,
    ) -> None:
        self.config = config
        #: Where the sandbox tool's process comes from (see :mod:`inplace.node.spares`).
        self.spares = spares if spares is not None else Spares(keep=0)
        self.volumes = volumes
        self.enabled = os.geteuid() == 0 if enabled is None else enabled
        self.users: UserDatabase = users or HostUsers()
        self.holder = config.data_dir / "sandboxes"
        self.seccomp_root = config.data_dir / "seccomp"
        self._lock = asyncio.Lock()
        self._sweep: asyncio.Task[None] | None = None
        self._available = tuple(current_bounding_set())

    def pin(self, uid: str) -> str:
        return str(self.holder / uid)

    def exists(self, uid: str) -> bool:
        return os.path.ismount(self.pin(uid))

    async def prepare(
        self,
        pod: Mapping[str, Any],
        *,
        pod_memory_limit: int | None,
        env_of: Mapping[str, Mapping[str, str]],
    ) -> None:
        """Make the pod's volumes and namespace exist (VolumeError, SandboxError or
        ConfigError otherwise). An existing namespace (a restarted agent) is kept; only the
        written volumes are refreshed."""
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid"))
        spec = pod.get("spec") or {}
        if not self.enabled:
            if any(not is_token_volume(v) for v in spec.get("volumes") or ()):
                raise ConfigError(
                    "volumes need a mount namespace, which a node agent not running as root "
                    "cannot create"
                )
            return
        if self.exists(uid):
            errors = await self.volumes.refresh(pod)
            if errors:
                raise errors[0]
            return
        vols = await self.volumes.setup(pod, pod_memory_limit)
        try:
            mounts = await asyncio.to_thread(resolve_subpaths, container_mounts(pod, vols, env_of))
        except (ValueError, OSError) as exc:
            raise ConfigError(str(exc)) from None
        pod_dir = self.volumes.pod_dir(uid)
        root = pod_dir / "root"
        root.mkdir(mode=0o755, parents=True, exist_ok=True)
        plan = {
            "root": str(root),
            "pin": self.pin(uid),
            "hostname": None if spec.get("hostNetwork") else self._hostname(pod),
            "ipc": not spec.get("hostIPC"),
            "share_pid": bool(spec.get("shareProcessNamespace")) and not spec.get("hostPID"),
            "hide": sorted({str(self.config.data_dir), *map(str, self.config.hidden_paths)}),
            "tmpfs": vols.tmpfs,
            "mounts": mounts,
        }
        plan_path = pod_dir / "sandbox.json"
        plan_path.write_text(json.dumps(plan, indent=1))
        async with self._lock:
            if not self.exists(uid):
                out = await run_shim_tool(self.spares, "sandbox", str(plan_path))
                (pod_dir / POD_INIT).write_text(out.split()[-1])

    @staticmethod
    def _hostname(pod: Mapping[str, Any]) -> str:
        try:
            return pod_hostname(pod)
        except EnvError as exc:  # kubelet fails the sandbox with the same message
            raise SandboxError(str(exc)) from None

    def _pins(self, uid: str) -> dict[str, str]:
        """The pod's pinned namespaces that exist (a pod from an older agent has only the
        mount one)."""
        pin = self.pin(uid)
        candidates = {"ipc": f"{pin}.ipc", "uts": f"{pin}.uts", "mnt": pin}
        return {kind: path for kind, path in candidates.items() if os.path.lexists(path)}

    def _kill_pod_init(self, uid: str) -> None:
        """SIGKILL the pod's PID 1 (``shareProcessNamespace``): the kernel then kills every
        process of its namespace. Its pid is checked against the pinned namespace first."""
        try:
            init = int((self.volumes.pod_dir(uid) / POD_INIT).read_text())
            if (
                init
                and os.stat(f"/proc/{init}/ns/pid").st_ino == os.stat(f"{self.pin(uid)}.pid").st_ino
            ):
                os.kill(init, signal.SIGKILL)
        except (OSError, ValueError):
            pass

    def layer(self, uid: str, container: str) -> Path:
        """The container's writable layer (emptied at each start by its shim)."""
        return self.volumes.pod_dir(uid) / "layers" / container

    def readonly_root(self, uid: str, container: str) -> str | None:
        """Why the container's root is read-only instead of copy-on-write (None if it is
        not), as its shim noted it in the layer directory."""
        try:
            return (self.layer(uid, container) / FALLBACK_NOTE).read_text().strip() or "unknown"
        except OSError:
            return None

    def _rootfs(
        self, pod: Mapping[str, Any], container: Mapping[str, Any], sec: ContainerSecurity
    ) -> dict[str, Any]:
        """How the shim builds the container's root (:class:`inplace.node.shim.ContainerRoot`)."""
        uid = str((pod.get("metadata") or {}).get("uid"))
        try:
            plan = json.loads((self.volumes.pod_dir(uid) / "sandbox.json").read_text())
        except (OSError, ValueError):
            plan = {}
        volumes = sorted({resolve_in_root("/", str(m["target"])) for m in plan.get("mounts") or ()})
        return {
            "layer": str(self.layer(uid, str(container.get("name")))),
            "hide": plan.get("hide") or [str(self.config.data_dir)],
            "volumes": volumes,
            "privileged": sec.privileged,
            "read_only": sec.read_only_root,
            "copy_on_write": self.config.copy_on_write,
        }

    async def refresh(self, pod: Mapping[str, Any]) -> list[VolumeError]:
        """Rewrite the pod's configMap, secret, downwardAPI and projected files if changed."""
        uid = str((pod.get("metadata") or {}).get("uid"))
        if not self.enabled or not self.exists(uid):
            return []
        return await self.volumes.refresh(pod)

    def security(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> ContainerSecurity:
        return resolve_security(pod, container, self.users, available=self._available)

    def launch(
        self,
        pod: Mapping[str, Any],
        container: Mapping[str, Any],
        env: Mapping[str, str],
    ) -> dict[str, Any]:
        """What the shim applies to start ``container`` (ConfigError when it must not)."""
        sec = self.security(pod, container)
        uid = str((pod.get("metadata") or {}).get("uid"))
        if not self.enabled and (sec.uid != os.geteuid() or sec.gid != os.getegid()):
            raise ConfigError(
                f"cannot run as uid {sec.uid} gid {sec.gid}: the node agent is not root"
            )
        seccomp_path = None
        if sec.seccomp.kind != "Unconfined":
            try:
                if sec.seccomp.kind == "RuntimeDefault":
                    profile = runtime_default_profile(sec.capabilities.bounding)
                else:
                    profile = load_localhost_profile(
                        self.seccomp_root, sec.seccomp.localhost_profile or ""
                    )
                seccomp_path = compile_profile(profile, self.config.data_dir / "seccomp-bpf")
            except SeccompError as exc:
                raise ConfigError(str(exc)) from None
        spec = pod.get("spec") or {}
        isolated: dict[str, Any] = {}
        if sec.read_only_root and not self.enabled:
            raise ConfigError(
                "readOnlyRootFilesystem needs a mount namespace, which a node agent not running "
                "as root cannot create"
            )
        if self.enabled:
            isolated = {
                "namespaces": self._pins(uid),
                "pid_namespace": "host" if spec.get("hostPID") else "container",
                "rootfs": self._rootfs(pod, container, sec),
            }
            if spec.get("shareProcessNamespace") and not spec.get("hostPID"):
                isolated["pid_namespace"] = "pod"
                isolated["pid_pin"] = f"{self.pin(uid)}.pid"
        return {
            **isolated,
            "mount_namespace": self.pin(uid) if self.enabled else None,
            "working_dir": container.get("workingDir") or "/",
            "user": {"uid": sec.uid, "gid": sec.gid, "groups": list(sec.groups)}
            if self.enabled
            else None,
            "capabilities": sec.capabilities.to_json() if self.enabled else None,
            "no_new_privs": sec.no_new_privs,
            "seccomp": seccomp_path,
            "env": dict(env),
        }

    async def teardown(self, uid: str) -> None:
        """Release the pod's namespace and remove its directory."""
        if self.enabled and os.path.lexists(self.pin(uid)):
            self._kill_pod_init(uid)
            pins = self._pins(uid)
            if os.path.lexists(f"{self.pin(uid)}.pid"):
                pins["pid"] = f"{self.pin(uid)}.pid"
            await _unmounting(_unpin_all, list(reversed(pins.values())))
        self.volumes.forget_tokens(uid)
        await asyncio.to_thread(self.volumes.teardown, uid)
        self.sweep_later()

    def sweep_later(self) -> None:
        """Empty the pod directories' trash in the background (one sweep at a time)."""
        if self._sweep is None or self._sweep.done():
            self._sweep = asyncio.create_task(
                asyncio.to_thread(self.volumes.empty_trash), name="sweep-pod-dirs"
            )

    async def release(self) -> None:
        """Unmount the pins' directory if no pod uses it (the agent stops with no pods)."""
        if self.enabled and os.path.isdir(self.holder):
            await _unmounting(release, str(self.holder))


class NoSandboxes(PodSandboxes):
    """For simulated nodes: nothing runs, so nothing is mounted or entered."""

    def __init__(self, config: AgentConfig, volumes: VolumeManager) -> None:
        super().__init__(config, volumes, enabled=False)

    async def prepare(
        self,
        pod: Mapping[str, Any],
        *,
        pod_memory_limit: int | None,
        env_of: Mapping[str, Mapping[str, str]],
    ) -> None:
        return None

    def launch(
        self, pod: Mapping[str, Any], container: Mapping[str, Any], env: Mapping[str, str]
    ) -> dict[str, Any]:
        return {}

    async def teardown(self, uid: str) -> None:
        return None

    async def release(self) -> None:
        return None
