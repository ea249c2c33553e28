"""Pod lifecycle: start, supervise, back off, terminate — upstream's kubelet rules.

One task per admitted pod (:meth:`Lifecycle.start`) runs its init containers in order
(sidecars, ``restartPolicy: Always`` init containers, start and keep running), then one
supervisor task per container: start it in its cgroup, wait for it, restart it per the
pod's ``restartPolicy`` with CrashLoopBackOff (10 s doubling to 5 min, reset after 10 min
of running). When the app containers are done for good the sidecars are stopped, last
started first. Whenever a container's state changes the worker is checkpointed and its
pod's key enqueued, so the status follows. Before the first container, the pod's sandbox
(volumes, mount namespace: :mod:`.sandbox`) is set up, retried while a volume cannot be yet;
each container starts with its launch (user, capabilities, seccomp: :mod:`.security`), or
waits as ``CreateContainerConfigError``. Terminating stops every container (SIGTERM, grace,
SIGKILL) and removes the pod's cgroup, sandbox and checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Mapping
from typing import Any, Final

from inplace.api.backoff import Backoff
from inplace.api.quantity import Format, Quantity

from .cgroups.base import CgroupError, CgroupResources
from .context import NodeContext
from .env import container_env, expand_command, runtime_env
from .ledger import Ledger
from .model import NO_ALLOC, bigger_of, container_cgroup, crash_backoff, pod_cgroup, rfc3339
from .pause import MemoryPause, wants_memory_pause
from .runtime import ProcessSpec, ProcessStartError, RunningProcess
from .sandbox import SandboxError
from .security import ConfigError
from .volumes.manager import VolumeError
from .worker import PodWorker

__all__ = ["Lifecycle"]

log = logging.getLogger(__name__)

#: How soon a pod whose containers could not be created is tried again.
CREATE_RETRY: Final = 1.0
#: Back-off of a pod whose volumes or container configuration cannot be set up yet.
SANDBOX_RETRY: Final = Backoff(1.0, 30.0)


class Lifecycle:
    def __init__(self, ctx: NodeContext, pause: MemoryPause, ledger: Ledger) -> None:
        self.ctx = ctx
        self.pause = pause
        self.ledger = ledger

    # -- the pod task ------------------------------------------------------------------------

    def start(self, w: PodWorker) -> None:
        """Run the pod's containers (in a task of its own)."""
        w.task = asyncio.create_task(self._run(w), name=f"pod-{w.key}")

    async def _run(self, w: PodWorker) -> None:
        ctx = self.ctx
        try:
            pod_cg = pod_cgroup(w.pod, w.allocated)
            async with w.cg_lock:
                await asyncio.to_thread(self._ensure_cgroup, ctx.paths.pod(w.uid), pod_cg)
            if not await self._prepare_sandbox(w, pod_cg.memory_limit_bytes):
                return
            w.sandbox_ready = True  # reported with the containers' start
            init = list(w.spec.get("initContainers") or ())
            policy = w.spec.get("restartPolicy", "Always")
            sidecars: list[asyncio.Task[None]] = []
            if not w.initialized:
                for c in init:
                    cs = w.containers[c["name"]]
                    if cs.sidecar:
                        w.started[c["name"]] = asyncio.Event()
                        sidecars.append(
                            asyncio.create_task(self._supervise(w, c["name"], "Always"))
                        )
                        await w.started[c["name"]].wait()
                        continue
                    if cs.state == "terminated" and cs.exit_code == 0:
                        continue
                    if not await self._run_init(w, c["name"], policy):
                        w.failed_init = True
                        await self._stop_sidecars(w, sidecars)
                        ctx.save(w)
                        ctx.notify(w)
                        self.ledger.retry_deferred()
                        return
                w.initialized = True
                ctx.save(w)
                ctx.notify(w)
            else:
                for c in init:
                    if w.containers[c["name"]].sidecar:
                        sidecars.append(
                            asyncio.create_task(self._supervise(w, c["name"], "Always"))
                        )
            app = [
                asyncio.create_task(self._supervise(w, c["name"], policy))
                for c in w.spec.get("containers") or ()
            ]
            try:
                await asyncio.gather(*app)
                await self._stop_sidecars(w, sidecars)
            finally:
                for task in [*app, *sidecars]:
                    task.cancel()
            self.ledger.retry_deferred()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("pod %s lifecycle failed", w.key)
            self._failed(w, exc)

    def _failed(self, w: PodWorker, exc: Exception) -> None:
        """Say on the pod what went wrong, as kubelet does for a container it could not
        create, and try again later if nothing of the pod is running (with something
        running, starting over could run a container twice)."""
        message = f"{type(exc).__name__}: {exc}"
        waiting = [cs for cs in w.containers.values() if cs.state == "waiting"]
        for cs in waiting:
            cs.reason, cs.message = "CreateContainerError", message
        self.ctx.event(w, "Failed", f"Error: {message}", warning=True)
        self.ctx.notify(w)
        if not w.stopping and not any(cs.state == "running" for cs in w.containers.values()):
            asyncio.get_running_loop().call_later(CREATE_RETRY, self._retry, w)

    async def _prepare_sandbox(self, w: PodWorker, pod_memory_limit: int | None) -> bool:
        """Set up the pod's volumes and mount namespace, retrying with back-off while a
        volume cannot be set up yet (a missing ConfigMap, an unbound claim), as kubelet does
        (``FailedMount``); False when the pod cannot run here at all."""
        delay: float | None = None
        last = ""
        while not w.stopping:
            try:
                await self.ctx.sandboxes.prepare(
                    w.pod, pod_memory_limit=pod_memory_limit, env_of=await self._env_of(w)
                )
                if last:
                    self._set_waiting(w, "ContainerCreating", "")
                return True
            except (VolumeError, SandboxError) as exc:
                reason = "FailedMount" if isinstance(exc, VolumeError) else "FailedCreatePodSandBox"
                message = str(exc)
                self._set_waiting(w, "ContainerCreating", "")
            except ConfigError as exc:
                reason, message = "Failed", f"Error: {exc}"
                self._set_waiting(w, "CreateContainerConfigError", str(exc))
            if message != last:
                self.ctx.event(w, reason, message, warning=True)
                log.info("pod %s: %s", w.key, message)
                last = message
            self.ctx.notify(w)
            delay = SANDBOX_RETRY.next(delay)
            await asyncio.sleep(delay)
        return False

    def _set_waiting(self, w: PodWorker, reason: str, message: str) -> None:
        for cs in w.containers.values():
            if cs.state == "waiting":
                cs.reason, cs.message = reason, message

    async def _env_of(self, w: PodWorker) -> dict[str, dict[str, str]]:
        """Every container's environment as far as it resolves (for ``subPathExpr``; what
        does not resolve is each container's own start to report)."""
        return {
            c["name"]: await self.container_env(w, c, lenient=True)
            for c in [*(w.spec.get("initContainers") or ()), *(w.spec.get("containers") or ())]
        }

    def _retry(self, w: PodWorker) -> None:
        if not w.stopping and self.ctx.workers.get(w.uid) is w:
            self.start(w)

    async def _stop_sidecars(self, w: PodWorker, sidecars: list[asyncio.Task[None]]) -> None:
        """The app containers are done for good: stop the sidecars, last started first."""
        w.finishing = True
        for c in reversed(w.spec.get("initContainers") or ()):
            proc = w.procs.get(c["name"])
            if proc is not None and w.containers[c["name"]].sidecar:
                self.killing(w, c["name"])
                await self.ctx.runtime.stop(proc, grace_period=w.grace_period())
        await asyncio.gather(*sidecars, return_exceptions=True)

    def _ensure_cgroup(self, path: str, resources: CgroupResources) -> None:
        self.ctx.driver.create(path, resources)

    def _pod_cgroup_holds_allocation(self, w: PodWorker) -> None:
        """Raise the pod cgroup to hold every allocation before a container (re)starts: a
        resize allocated while the container waited in back-off has not reached the pod
        cgroup, and a container cgroup above its pod's is ``EINVAL`` (found by the chaos
        storm). Lowering stays the resize path's, in its safe order."""
        driver, path = self.ctx.driver, self.ctx.paths.pod(w.uid)
        needed = driver.normalize(pod_cgroup(w.pod, w.allocated))
        driver.update(path, bigger_of(driver.read(path), needed))

    # -- containers --------------------------------------------------------------------------

    async def _run_init(self, w: PodWorker, name: str, policy: str) -> bool:
        """Run a regular init container to success; False if it failed for good."""
        while True:
            await self._run_once(w, name)
            cs = w.containers[name]
            if cs.exit_code == 0:
                return True
            if policy == "Never":
                return False
            await self._backoff(w, name)

    async def _run_once(self, w: PodWorker, name: str) -> None:
        proc = w.procs.get(name)
        if proc is None:
            proc = await self._start_container(w, name)
            if proc is None:
                return
        status = await self.ctx.runtime.wait(proc)
        cs = w.containers[name]
        cs.state = "terminated"
        cs.exit_code = status.exit_code
        cs.signal = status.signal
        if status.oom_killed:
            cs.reason = "OOMKilled"
        elif status.unknown:
            cs.reason = "ContainerStatusUnknown"
        else:
            cs.reason = "Completed" if status.exit_code == 0 else "Error"
        cs.message = ""
        cs.finished_at = rfc3339(status.finished_at)
        w.procs.pop(name, None)
        self.ctx.save(w)
        self.ctx.notify(w)

    async def _backoff(self, w: PodWorker, name: str) -> None:
        """Wait out CrashLoopBackOff (if any) before restarting ``name``, then count the
        restart: ``restartCount`` grows when the new instance starts, as upstream's does."""
        cs = w.containers[name]
        ran_for = time.monotonic() - w.started_mono.get(name, time.monotonic())
        cs.backoff = crash_backoff(cs.backoff, ran_for)
        cs.last_state = {
            "terminated": cs.status(allocated=None, actual=None)["state"]["terminated"]
        }
        if cs.backoff > 0:
            cs.state, cs.reason = "waiting", "CrashLoopBackOff"
            cs.message = (
                f"back-off {int(cs.backoff)}s restarting failed container={name} "
                f"pod={w.name}_{w.namespace}({w.uid})"
            )
            self.ctx.save(w)
            self.ctx.notify(w)
            self.ctx.event(
                w,
                "BackOff",
                f"Back-off restarting failed container {name} in pod "
                f"{w.name}_{w.namespace}({w.uid})",
                warning=True,
                field_path=w.field_path(name),
            )
            await asyncio.sleep(cs.backoff)
        cs.restart_count += 1

    async def _supervise(self, w: PodWorker, name: str, policy: str) -> None:
        cs = w.containers[name]
        restored_end = cs.state == "terminated" and name not in w.procs
        while True:
            if not restored_end:
                await self._run_once(w, name)
            restored_end = False
            if w.stopping or w.finishing:
                return
            if name in w.restart_for_resize:
                w.restart_for_resize.discard(name)
                cs.last_state = {
                    "terminated": cs.status(allocated=None, actual=None)["state"]["terminated"]
                }
                cs.state, cs.reason, cs.message = "waiting", "ContainerCreating", ""
                cs.restart_count += 1
                self.ctx.save(w)
                event = w.resume.setdefault(name, asyncio.Event())
                await event.wait()
                continue
            if policy == "Never" or (policy == "OnFailure" and cs.exit_code == 0):
                return
            await self._backoff(w, name)

    async def container_env(
        self, w: PodWorker, c: Mapping[str, Any], *, lenient: bool = False
    ) -> dict[str, str]:
        """The container's environment as kubelet makes it (:mod:`.env`; the runtime's
        ``PATH``, ``HOSTNAME`` and ``HOME`` come at the launch), its resources as the node
        allocated them, so a process started after an in-place resize sees the new values;
        raises :class:`~.env.EnvError` for what does not resolve unless `lenient`."""
        cfg = self.ctx.config
        allocatable = {
            "cpu": Quantity.from_milli(cfg.cpu_milli),
            "memory": Quantity.from_int(cfg.memory_bytes, Format.BINARY_SI),
        }
        return await container_env(
            _with_allocated(w),
            c,
            objects=self.ctx.objects,
            node_allocatable=allocatable,
            service_env=self.ctx.service_env,
            lenient=lenient,
        )

    async def _start_container(self, w: PodWorker, name: str) -> RunningProcess | None:
        ctx = self.ctx
        c = w.container_spec(name)
        cs = w.containers[name]
        command = [*(c.get("command") or ()), *(c.get("args") or ())]
        path = ctx.paths.container(w.uid, name)
        log_path = ctx.paths.log(w, name, cs.restart_count)
        self._pulled(w, c)
        try:
            if not command:
                raise ProcessStartError(
                    "no command specified: inplace runs host processes and does not pull images"
                )
            async with w.cg_lock:
                alloc = w.allocated.get(name, NO_ALLOC)
                await asyncio.to_thread(self._pod_cgroup_holds_allocation, w)
                await asyncio.to_thread(self._ensure_cgroup, path, container_cgroup(alloc))
                # What a container's cgroup holds before it starts is no container of ours: a
                # start its agent was killed before recording, or what an old instance left.
                await asyncio.to_thread(self.kill_untracked, path)
                w.actual[name] = alloc
                if wants_memory_pause(w):
                    self.pause.arm(w, name)
            started = await self._launch(w, c)
            if started is None:
                return None
            command, env, launch = started
            proc = await ctx.runtime.start(
                ProcessSpec(
                    command=command,
                    env=env,
                    working_dir=c.get("workingDir") or "/",
                    log_path=log_path,
                    cgroup_path=path,
                    launch=launch or None,
                )
            )
        except (ProcessStartError, CgroupError, OSError) as exc:
            ctx.event(w, "Failed", f"Error: {exc}", warning=True, field_path=w.field_path(name))
            code = getattr(exc, "exit_code", None)
            os.makedirs(os.path.dirname(log_path), exist_ok=True)
            with open(log_path, "a") as fh:
                fh.write(f"inplace: cannot start container {name}: {exc}\n")
            cs.state, cs.reason, cs.message = "terminated", "StartError", str(exc)
            cs.exit_code = code if code is not None else 128
            cs.started_at = cs.finished_at = rfc3339()
            cs.pid = None
            ctx.save(w)
            ctx.notify(w)
            return None
        w.procs[name] = proc
        cs.user = self._user(w, c)
        # the kubelet's words (pkg/kubelet/kuberuntime/kuberuntime_container.go startContainer)
        ctx.event(w, "Created", "Container created", field_path=w.field_path(name))
        ctx.event(w, "Started", "Container started", field_path=w.field_path(name))
        readonly = ctx.sandboxes.readonly_root(w.uid, name)
        if readonly is not None:
            ctx.event(
                w,
                "ReadOnlyRoot",
                f"No copy-on-write root for container {name} ({readonly}): it runs on the "
                "host's root read-only, with writable /tmp, /var/tmp and /run",
                warning=True,
                field_path=w.field_path(name),
            )
        cs.state, cs.reason, cs.message = "running", "", ""
        cs.pid, cs.started_at = proc.pid, rfc3339()
        cs.exit_code = cs.signal = None
        w.started_mono[name] = time.monotonic()
        ctx.save(w)
        ctx.notify(w)
        if name in w.started:
            w.started[name].set()
        return proc

    def _user(self, w: PodWorker, c: Mapping[str, Any]) -> dict[str, Any] | None:
        """Who the container's process runs as, as the runtime reports it
        (``containerStatuses[].user.linux``: containerd's uid, gid and additional gids, the
        gid first): its launch's identity (:mod:`.security`)."""
        try:
            sec = self.ctx.sandboxes.security(w.pod, c)
        except ConfigError:
            return None
        return {"uid": sec.uid, "gid": sec.gid, "supplementalGroups": list(sec.groups)}

    def _pulled(self, w: PodWorker, c: Mapping[str, Any]) -> None:
        """The kubelet's image step before each container start (``EnsureImageExists`` in
        ``pkg/kubelet/images/image_manager.go``), whose event says the image is there and the
        pod may use it. The agent runs the node's own programs: there is nothing to pull, so
        it is always there, whatever ``imagePullPolicy`` says."""
        image = str(c.get("image") or "")
        self.ctx.event(
            w,
            "Pulled",
            f'Container image "{image}" already present on machine and can be accessed by the pod',
            field_path=w.field_path(c["name"]),
        )

    async def _launch(
        self, w: PodWorker, c: Mapping[str, Any]
    ) -> tuple[list[str], dict[str, str], dict[str, Any]] | None:
        """The container's command (``$(VAR)`` expanded as kubelet does), environment and
        launch; while its configuration cannot be
        honoured (a ConfigMap or Secret key it reads is missing, a security setting cannot
        be applied) it waits as ``CreateContainerConfigError`` (upstream's reason and
        message) and is retried with back-off, as kubelet retries it; None once the pod is
        stopping."""
        delay: float | None = None
        cs = w.containers[c["name"]]
        last = ""
        while not w.stopping:
            try:
                kubelet_env = await self.container_env(w, c)
                env = runtime_env(w.pod, kubelet_env)
                command = expand_command(c, kubelet_env)
                return command, env, self.ctx.sandboxes.launch(w.pod, c, env)
            except ConfigError as exc:
                message = str(exc)
            cs.state, cs.reason, cs.message = "waiting", "CreateContainerConfigError", message
            if message != last:
                field_path = w.field_path(c["name"])
                self.ctx.event(
                    w, "Failed", f"Error: {message}", warning=True, field_path=field_path
                )
                last = message
            self.ctx.notify(w)
            delay = SANDBOX_RETRY.next(delay)
            await asyncio.sleep(delay)
        return None

    # -- the end -----------------------------------------------------------------------------

    async def stop(self, w: PodWorker, *, grace: float) -> None:
        """Stop every container (SIGTERM, ``grace`` seconds, SIGKILL) and remove what the pod
        left on the node: its memory-pause watches, its cgroup, its checkpoint."""
        w.stopping = True
        if w.task is not None:
            w.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await w.task
        for name in w.procs:
            self.killing(w, name)
        stops = [self.ctx.runtime.stop(p, grace_period=grace) for p in w.procs.values()]
        results = await asyncio.gather(*stops, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                log.warning("stopping a container of %s: %s", w.key, result)
        self.pause.disarm(w)
        await self.remove_cgroup(w.uid)
        await self.remove_sandbox(w.uid)
        self.ctx.checkpoints.remove(w.uid)

    def killing(self, w: PodWorker, name: str, message: str = "") -> None:
        """kubelet's ``Killing`` event, posted as a container is stopped."""
        text = message or f"Stopping container {name}"
        self.ctx.event(w, "Killing", text, field_path=w.field_path(name))

    async def remove_sandbox(self, uid: str) -> None:
        try:
            await self.ctx.sandboxes.teardown(uid)
        except (SandboxError, OSError) as exc:
            log.warning("could not remove the sandbox of pod %s: %s", uid, exc)

    async def remove_cgroup(self, uid: str) -> None:
        """Remove the pod's cgroups, killing what is still in them first, as upstream's
        ``PodContainerManager.Destroy`` does. The pod's tracked containers are stopped by
        now, so anything left is a process this agent does not know: one its container left
        behind, or a workload started by an agent killed before it recorded the start."""
        path = self.ctx.paths.pod(uid)
        for _ in range(50):
            try:
                await asyncio.to_thread(self.kill_untracked, path)
                await asyncio.to_thread(self.ctx.driver.remove, path)
                return
            except CgroupError:
                await asyncio.sleep(0.1)
        log.warning("could not remove cgroup %s", path)

    def kill_untracked(self, path: str) -> None:
        """SIGKILL every process in cgroup ``path`` and below (the caller knows none of them
        is a container it tracks)."""
        try:
            pids = self.ctx.driver.pids_below(path)
        except (CgroupError, OSError):
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if pids:
            log.warning("killed %d untracked process(es) in cgroup %s: %s", len(pids), path, pids)


def _with_allocated(w: PodWorker) -> dict[str, Any]:
    """The pod with each container's resources as the node allocated them (kubelet builds
    the environment from the allocated pod)."""
    spec = dict(w.spec)
    for key in ("containers", "initContainers"):
        containers = []
        for c in spec.get(key) or ():
            alloc = w.allocated.get(c["name"])
            containers.append({**c, "resources": alloc.to_json()} if alloc is not None else c)
        spec[key] = containers
    return {**w.pod, "spec": spec}
