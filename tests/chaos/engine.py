"""The chaos engine: a real `inplace up`, a seeded storm of writes, a chaos thread that
SIGKILLs components (and sometimes `inplace up` itself), and the checker following the
cluster by watch the whole time. `pytest tests/chaos` and `bench/chaos.py` both call `run`.

A run: start the cluster; open the checker's watches (pods, nodes, ReplicaSets) from a LIST;
storm and chaos together for `seconds`; stop the chaos, bring every component back, let the
cluster settle (every resize terminal, every ReplicaSet at its size), check the final state
against the storm's acknowledged writes, the cgroup files and /proc; delete everything and
check nothing is left behind. Every violation is reported with the seed and the op log.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import random
import shutil
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from inplace.api.timestamps import parse_rfc3339
from inplace.client import Client, load_config
from inplace.client.api import (
    DEPLOYMENTS,
    JOBS,
    LEASES,
    NAMESPACES,
    NODES,
    PODDISRUPTIONBUDGETS,
    PODS,
    REPLICASETS,
    Resource,
)
from inplace.client.errors import APIConnectionError, APIError, APIGoneError, APINotFoundError
from tests.chaos import faults, finals
from tests.chaos.checker import Checker, Violation, rv_of
from tests.chaos.storm import Storm
from tests.chaos.workloads import NAMESPACE
from tests.conftest import Cluster, free_port, reap_cgroups, reap_mounts, start_cluster

NODES_REAL = 3


@dataclasses.dataclass
class Settings:
    seed: int
    seconds: float = 25.0
    simulated_nodes: int = 0
    kill_every: tuple[float, float] = (3.0, 6.0)
    whole_up_weight: float = 0.3
    settle_seconds: float = 120.0
    faults: tuple[str, ...] = ()
    """Beyond SIGKILL: ``stop`` (SIGSTOP a node agent past the node grace period),
    ``disk`` (the data dir's file system full), ``clock`` (the cluster's wall clock steps
    forward: `faults.step_clock`)."""


@dataclasses.dataclass
class Report:
    seed: int
    operations: int = 0
    acknowledged: int = 0
    kills: dict[str, int] = dataclasses.field(default_factory=dict)
    checks: int = 0
    events: int = 0
    relists: int = 0
    violations: list[Violation] = dataclasses.field(default_factory=list)
    log: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    dump: Path | None = None
    errors: dict[str, int] = dataclasses.field(default_factory=dict)
    error_samples: dict[str, str] = dataclasses.field(default_factory=dict)

    def summary(self) -> str:
        kills = ", ".join(f"{k} {v}" for k, v in sorted(self.kills.items())) or "none"
        return (
            f"seed {self.seed}: {self.operations} operations ({self.acknowledged} acknowledged), "
            f"kills: {kills}; {self.checks} checks over {self.events} watch events, "
            f"{self.relists} relists; {len(self.violations)} violations in {self.seconds:.0f}s"
        )

    def explain(self) -> str:
        """What a violation prints: the seed (to replay), the op log, the offending objects."""
        lines = [self.summary(), "", f"replay: python bench/chaos.py --seed {self.seed}"]
        lines += [f"whole objects: {self.dump}", ""]
        for v in self.violations[:20]:
            lines.append(f"VIOLATION [{v.invariant}] {v.message}")
            for obj in v.objects[:6]:
                lines.append("  " + json.dumps(_brief(obj), sort_keys=True)[:1500])
        lines += ["", "operation log:", *self.log[-400:]]
        return "\n".join(lines)


def _brief(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {
        "kind": obj.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "rv": meta.get("resourceVersion"),
        "generation": meta.get("generation"),
        "deletion": meta.get("deletionTimestamp"),
        "spec": _spec(obj),
        "status": obj.get("status"),
    }


def _spec(obj: dict[str, Any]) -> Any:
    spec = obj.get("spec") or {}
    if "containers" in spec:
        return {
            "nodeName": spec.get("nodeName"),
            "containers": [
                {"name": c["name"], "resources": c.get("resources")} for c in spec["containers"]
            ],
        }
    return spec


class ChaosCluster:
    """The `inplace up` under test: its components found from its children, killed, and the
    whole of it killed and started again on the same data dir and port."""

    def __init__(self, data_dir: Path, extra: list[str], env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.extra = extra
        self.env = env
        self.lock = threading.Lock()
        self.cluster: Cluster = start_cluster(data_dir, free_port(), *extra, env=env)
        self.component_pids: set[int] = set()

    def components(self) -> dict[str, int]:
        """Component name (apiserver, scheduler, controller-manager, node-1, ...) → pid."""
        found: dict[str, int] = {}
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.cluster.process.pid).children():
                with contextlib.suppress(psutil.Error):
                    argv = child.cmdline()
                    if len(argv) < 4 or argv[1:3] != ["-m", "inplace"]:
                        continue
                    name = argv[3]
                    if name == "node":
                        name = (
                            argv[argv.index("--node-name") + 1]
                            if "--simulated" not in argv
                            else "simulated"
                        )
                    found[name] = child.pid
                    self.component_pids.add(child.pid)
        return found

    def kill(self, name: str) -> bool:
        pid = self.components().get(name)
        if pid is None:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        return True

    def kill_whole(self) -> None:
        """SIGKILL `inplace up`; its components follow (parent-death signal); start it again."""
        with self.lock:
            old = self.cluster
            children = list(self.components().values())
            old.process.send_signal(signal.SIGKILL)
            old.process.wait(10)
            deadline = time.monotonic() + 30
            while any(psutil.pid_exists(p) and _not_zombie(p) for p in children):
                if time.monotonic() > deadline:
                    for pid in children:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                time.sleep(0.1)
            self.cluster = start_cluster(self.data_dir, old.port, *self.extra, env=self.env)

    def ensure_running(self) -> None:
        with self.lock:
            if self.cluster.process.poll() is not None:
                self.cluster = start_cluster(
                    self.data_dir, self.cluster.port, *self.extra, env=self.env
                )

    def stop(self) -> None:
        self.cluster.stop(signal.SIGTERM, clean=False)


def _not_zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class Chaos(threading.Thread):
    """The chaos thread: at random moments, SIGKILL one component, or the whole `inplace up`."""

    def __init__(
        self,
        settings: Settings,
        target: ChaosCluster,
        report: Report,
        say: Callable[[str], None],
        checker: Checker,
    ) -> None:
        super().__init__(name="chaos", daemon=True)
        self.rng = random.Random(settings.seed * 7919 + 1)
        self.settings = settings
        self.target = target
        self.report = report
        self.say = say
        self.checker = checker
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by the engine, never lost in a thread
            self.error = exc

    def _run(self) -> None:
        low, high = self.settings.kill_every
        names = [
            "apiserver",
            "scheduler",
            "controller-manager",
            *[f"node-{i}" for i in range(1, NODES_REAL + 1)],
        ]
        weights = [3.0, 2.0, 2.0, 1.0, 1.0, 1.0]
        if self.settings.simulated_nodes:
            names.append("simulated")
            weights.append(1.0)
        names.append("inplace-up")
        weights.append(self.settings.whole_up_weight)
        for fault in self.settings.faults:
            names.append(f"fault:{fault}")
            weights.append(0.6)
        while not self.halt.wait(self.rng.uniform(low, high)):
            victim = self.rng.choices(names, weights)[0]
            if victim.startswith("fault:"):
                if not self.fault(victim.removeprefix("fault:")):
                    continue
            elif victim == "inplace-up":
                self.say("chaos: SIGKILL inplace up (and start it again)")
                self.target.kill_whole()
            elif not self.target.kill(victim):
                continue
            else:
                self.say(f"chaos: SIGKILL {victim}")
            self.report.kills[victim] = self.report.kills.get(victim, 0) + 1
            self.wait_for_api()

    def wait_for_api(self, bound: float = 60.0) -> None:
        """The next interval starts once the API server accepts connections again: killing it
        again while it restarts (slow on a loaded machine) would leave a storm with nothing
        acknowledged, and so nothing checked."""
        deadline = time.monotonic() + bound
        while not self.halt.is_set() and time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.target.cluster.port), 1.0):
                    return
            except OSError:
                self.halt.wait(0.25)

    def fault(self, fault: str) -> bool:
        data = self.target.data_dir
        if fault == "stop":
            agents = sorted(n for n in self.target.components() if n.startswith("node-"))
            if not agents:
                return False
            name = self.rng.choice(agents)
            seconds = faults.NODE_GRACE_SECONDS + 7
            self.say(f"chaos: SIGSTOP {name} for {seconds}s (node grace period 8s)")
            faults.pause(self.target.components()[name], seconds, self.halt)
            self.say(f"chaos: SIGCONT {name}")
        elif fault == "disk":
            self.checker.disk_was_full = True
            self.say("chaos: data dir's file system full")
            written = faults.fill_disk(data, 4.0, self.halt)
            self.say(f"chaos: data dir's file system freed ({written >> 20} MiB)")
        elif fault == "clock":
            total = faults.step_clock(data.parent / faults.CLOCK_OFFSET_FILE, 120)
            self.say(f"chaos: cluster wall clock stepped +120s (now {total:+d}s)")
        return True


class Engine:
    def __init__(self, settings: Settings, workdir: Path) -> None:
        self.settings = settings
        self.workdir = workdir
        self.report = Report(settings.seed)
        self.checker = Checker()
        self.stop_watching = asyncio.Event()
        self.listed = {stream: asyncio.Event() for stream in ("pods", "nodes", "replicasets")}
        self.storm: Storm | None = None
        self.started = time.monotonic()

    def say(self, line: str) -> None:
        self.report.log.append(f"{time.monotonic() - self.started:7.2f} {line}")

    async def run(self) -> Report:
        extra = [
            "--nodes",
            str(NODES_REAL),
            "--node-cpu",
            "1",
            "--node-memory",
            "1Gi",
            "--no-dashboard",
        ]
        if self.settings.simulated_nodes:
            extra += ["--simulated-nodes", str(self.settings.simulated_nodes)]
        env: dict[str, str] = {}
        self.workdir.mkdir(parents=True, exist_ok=True)
        if "stop" in self.settings.faults:
            extra += ["--node-monitor-grace-period", f"{faults.NODE_GRACE_SECONDS}s"]
        if "clock" in self.settings.faults:
            env = faults.clock_environment(self.workdir)
        data_dir = self.workdir / "data"
        if "disk" in self.settings.faults:
            faults.mount_small_disk(data_dir)
        try:
            target = ChaosCluster(data_dir, extra, env)
            try:
                await self._run(target)
            finally:
                with contextlib.suppress(Exception):
                    target.stop()
        finally:
            if self.checker.violations:  # every component's log, before the disk goes
                with contextlib.suppress(OSError):
                    shutil.copytree(data_dir / "logs", self.workdir / "logs", dirs_exist_ok=True)
            reap_cgroups(data_dir)
            reap_mounts(data_dir)
        self.report.seconds = time.monotonic() - self.started
        self.report.checks = self.checker.checks
        self.report.events = self.checker.events
        self.report.violations = self.checker.violations
        if self.report.violations:  # the whole objects, for a replay's post-mortem
            self.report.dump = self.workdir / "violations.json"
            self.report.dump.write_text(
                json.dumps([dataclasses.asdict(v) for v in self.report.violations], indent=1)
            )
            (self.workdir / "operations.log").write_text("\n".join(self.report.log) + "\n")
        return self.report

    async def _run(self, target: ChaosCluster) -> None:
        config = load_config(str(target.cluster.kubeconfig))
        async with Client(config, timeout=20) as client:
            await self._retry(lambda: client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}}))
            await self._wait_nodes(client)
            watches = [
                asyncio.create_task(self.follow(client, PODS, "pods", self.checker.observe_pod)),
                asyncio.create_task(self.follow(client, NODES, "nodes", self.checker.observe_node)),
                asyncio.create_task(
                    self.follow(client, REPLICASETS, "replicasets", self.checker.observe_replicaset)
                ),
            ]
            # The storm starts once every stream has its first LIST: a write before it would
            # be seen only at a later version (a checker race, found in a calm baseline run).
            async with asyncio.timeout(120):
                await asyncio.gather(*(self.listed[name].wait() for name in self.listed))
            storm = self.storm = Storm(random.Random(self.settings.seed), client)
            storm.started = self.started
            chaos = Chaos(self.settings, target, self.report, self.say, self.checker)
            chaos.start()
            try:
                await storm.run(self.settings.seconds, asyncio.Event())
            finally:
                chaos.halt.set()
                await asyncio.to_thread(chaos.join)
            if chaos.error is not None:
                raise chaos.error
            self.report.operations = storm.operations
            self.report.acknowledged = storm.acknowledged
            self.report.errors = dict(storm.errors)
            self.report.error_samples = dict(storm.error_samples)
            calm = time.time()
            await asyncio.to_thread(target.ensure_running)
            await self._wait_components(target)
            await self._wait_nodes(client, heard_since=calm)
            await finals.settle_and_check(self, client, target)
            await finals.cleanup_and_check(self, client, target)
            self.stop_watching.set()
            for task in watches:
                task.cancel()
            await asyncio.gather(*watches, return_exceptions=True)
            self.report.log = sorted(self.report.log + storm.log)

    async def follow(
        self,
        client: Client,
        res: Resource,
        stream: str,
        observe: Callable[[str, dict[str, Any]], None],
    ) -> None:
        """LIST then WATCH from its resourceVersion, forever: a broken stream is resumed from
        the last version seen; only a 410 is answered by a relist (recorded as a gap)."""
        rv: int | None = None
        first = True
        while not self.stop_watching.is_set():
            try:
                if rv is None:
                    listed = await client.list(res)
                    list_rv = int(listed["metadata"]["resourceVersion"])
                    if not first:
                        self.checker.relisted(stream, self.checker.last_rv.get(stream, 0), list_rv)
                        self.report.relists += 1
                        self.say(f"watch {stream}: relisted at {list_rv}")
                    self.checker.reset(stream, listed.get("items") or [])
                    self.checker.last_rv[stream] = list_rv
                    rv, first = list_rv, False
                    self.listed[stream].set()
                async for event in client.watch(res, resource_version=str(rv), timeout_seconds=60):
                    if event.type == "BOOKMARK":
                        rv = int(event.resource_version or rv)
                        self.checker.last_rv[stream] = max(rv, self.checker.last_rv.get(stream, 0))
                        continue
                    observe(event.type, event.object)
                    rv = rv_of(event.object)
            except APIGoneError:
                self.say(f"watch {stream}: 410 Gone after {rv}")
                rv = None
            except (APIError, APIConnectionError, OSError, TimeoutError):
                await asyncio.sleep(0.2)

    async def _retry(self, call: Callable[[], Any], *, seconds: float = 60) -> Any:
        deadline = time.monotonic() + seconds
        while True:
            try:
                return await call()
            except APIError as exc:
                if getattr(exc, "status", None) == 409:
                    return None
                if time.monotonic() > deadline:
                    raise
            except (APIConnectionError, OSError, TimeoutError):
                if time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.3)

    async def _wait_nodes(self, client: Client, heard_since: float = 0.0) -> None:
        """Every real node Ready, and (after the chaos) its agent heard from since then: its
        Lease renewed by the agent running now, so its pods' statuses are current."""
        wanted = {f"node-{i}" for i in range(1, NODES_REAL + 1)}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(APIError, APIConnectionError, OSError, TimeoutError):
                leases = (await client.list(LEASES, namespace="kube-node-lease"))["items"]
                renewed = {
                    lease["metadata"]["name"]
                    for lease in leases
                    if parse_rfc3339(
                        lease["spec"].get("renewTime") or "1970-01-01T00:00:00Z"
                    ).timestamp()
                    >= heard_since
                }
                if not wanted <= renewed:
                    await asyncio.sleep(0.5)
                    continue
                nodes = (await client.list(NODES))["items"]
                ready = {
                    n["metadata"]["name"]
                    for n in nodes
                    if any(
                        c["type"] == "Ready" and c["status"] == "True"
                        for c in n["status"].get("conditions") or ()
                    )
                }
                if wanted <= ready:
                    return
            await asyncio.sleep(0.5)
        self.checker.fail("liveness", "nodes not Ready again after the chaos stopped")

    async def _wait_components(self, target: ChaosCluster) -> None:
        wanted = {
            "apiserver",
            "scheduler",
            "controller-manager",
            *[f"node-{i}" for i in range(1, NODES_REAL + 1)],
        }
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if wanted <= set(target.components()):
                return
            await asyncio.sleep(0.5)
        self.checker.fail(
            "liveness", f"components not restarted: {wanted - set(target.components())}"
        )


def run(settings: Settings, workdir: Path) -> Report:
    return asyncio.run(Engine(settings, workdir).run())


__all__ = [
    "DEPLOYMENTS",
    "JOBS",
    "PODDISRUPTIONBUDGETS",
    "APINotFoundError",
    "Engine",
    "Report",
    "Settings",
    "run",
]
