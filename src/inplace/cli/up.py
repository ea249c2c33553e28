"""`inplace up`: a single-host cluster in the foreground.

A small supervisor: it prepares the data dir (certificates, tokens, kubeconfigs), starts each
component as its own OS process, restarts any that dies (with back-off), and stops them all
on SIGINT/SIGTERM. Components get a parent-death signal so that a SIGKILLed supervisor does
not leave an API server holding the port; workloads run in their own sessions under the node
agents and are never children of the supervisor, so nothing here can kill them.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import hashlib
import os
import secrets
import signal
import socket
import ssl
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from inplace.api.backoff import Backoff
from inplace.api.quantity import Quantity, QuantityError
from inplace.apiserver.auth import DASHBOARD_USER, MASTERS_GROUP, SIMULATOR_USER, TokenFile
from inplace.apiserver.tls import ensure_certificates
from inplace.cli.down import cluster_cgroups, pods_running
from inplace.cli.kubeconfig import write_kubeconfig
from inplace.cli.lock import DataDirLock, LockHeld, holder_of
from inplace.cli.paths import DataDir

_PR_SET_PDEATHSIG = 1
_RESTART_BACKOFF = Backoff(0.5, 30.0)


class UpError(Exception):
    """A problem the user can fix (busy port, unusable data dir); printed without a trace."""


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it when the supervisor dies."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Component:
    name: str
    argv: list[str]
    process: asyncio.subprocess.Process | None = None
    restarts: int = 0
    started_at: float = 0.0
    log_path: Path | None = None


@dataclass
class Supervisor:
    """Runs components, restarts the ones that die, stops them all on request."""

    data: DataDir
    say: Callable[[str], None]
    components: list[Component] = field(default_factory=list)
    stopping: bool = False

    async def start(self, component: Component) -> None:
        self.data.root.joinpath("logs", "components").mkdir(parents=True, exist_ok=True)
        component.log_path = self.data.root / "logs" / "components" / f"{component.name}.log"
        log = open(component.log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            component.process = await asyncio.create_subprocess_exec(
                *component.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=_die_with_parent,
            )
        finally:
            log.close()
        component.started_at = time.monotonic()
        if component not in self.components:
            self.components.append(component)

    async def watch(self, component: Component) -> None:
        """Restart `component` whenever it exits, until the supervisor stops."""
        backoff = _RESTART_BACKOFF.initial
        while not self.stopping:
            assert component.process is not None
            code = await component.process.wait()
            if self.stopping:
                return
            lived = time.monotonic() - component.started_at
            backoff = _RESTART_BACKOFF.initial if lived > 60 else _RESTART_BACKOFF.next(backoff)
            component.restarts += 1
            self.say(
                f"  {component.name} exited with code {code}; restarting in {backoff:.1f}s "
                f"(see {component.log_path})"
            )
            await asyncio.sleep(backoff)
            if not self.stopping:
                await self.start(component)

    async def stop(self, grace: float = 10.0) -> None:
        self.stopping = True
        running = [c.process for c in self.components if c.process and c.process.returncode is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
        deadline = time.monotonic() + grace
        for process in running:
            remaining = max(deadline - time.monotonic(), 0.1)
            try:
                await asyncio.wait_for(process.wait(), remaining)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()


def refuse_if_in_use(data: DataDir) -> None:
    """A running cluster's data dir is refused before anything is written in it (its
    kubeconfigs name its port, its store is open): one line naming the holder."""
    holder = holder_of(data)
    if holder is not None:
        raise UpError(_in_use(data, str(holder)))


def _in_use(data: DataDir, holder: str) -> str:
    return (
        f"data dir {data.root} is in use by {holder}; stop that cluster with "
        f"`inplace down --data-dir {data.root}`, or choose another --data-dir"
    )


def host_warnings(nodes: int, cpu: str, memory: str) -> list[str]:
    """What the nodes promise beyond the host: the scheduler would place pods the host
    cannot run together."""
    count = max(nodes, 1)
    host_cpu = (os.cpu_count() or 1) * 1000
    host_memory = int(psutil.virtual_memory().total)
    warnings = []
    per_cpu, per_memory = Quantity.parse(cpu).milli_value(), Quantity.parse(memory).value()
    if per_cpu * count > host_cpu:
        warnings.append(
            f"inplace up: warning: {count} node(s) of {cpu} CPU exceed this host's "
            f"{host_cpu // 1000} CPU(s); pods that fit the nodes may not get the CPU they request"
        )
    if per_memory * count > host_memory:
        warnings.append(
            f"inplace up: warning: {count} node(s) of {memory} memory exceed this host's "
            f"{host_memory // 2**20}Mi; pods that fit the nodes may not get the memory they "
            "request"
        )
    return warnings


def check_data_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise UpError(f"data dir {path} is not usable: {exc.strerror or exc}") from None


def pick_port(host: str, port: int, *, flag: str = "--port") -> int:
    """Check that `port` is free (or choose one if 0), with a clear error (naming the option
    `flag` that chose it) if it is not."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise UpError(
                    f"port {port} on {host} is already in use (is another `inplace up` "
                    f"running?); choose another with {flag}"
                ) from None
            raise UpError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        chosen: int = sock.getsockname()[1]
        return chosen


def prepare(data: DataDir, *, host: str, port: int) -> dict[str, Path]:
    """Certificates, tokens and one kubeconfig per identity; returns the kubeconfig paths."""
    certs = ensure_certificates(data.pki)
    tokens = TokenFile(data.tokens)
    server = f"https://{host}:{port}"
    ca = certs.ca_pem()
    # The admin is cluster-admin (system:masters); every component holds only what its
    # default ClusterRole grants (upstream's system:kube-scheduler, system:kube-controller-
    # manager; the dashboard's system:inplace:dashboard). Nodes get theirs from
    # node_kubeconfig.
    identities: dict[str, tuple[str, tuple[str, ...]]] = {
        "admin": ("admin", (MASTERS_GROUP,)),
        "scheduler": ("system:kube-scheduler", ()),
        "controller-manager": ("system:kube-controller-manager", ()),
        "dashboard": (DASHBOARD_USER, ()),
    }
    paths: dict[str, Path] = {}
    for name, (user, groups) in identities.items():
        token = tokens.token_for(user, groups)
        path = data.kubeconfig if name == "admin" else data.component_kubeconfig(name)
        write_kubeconfig(path, server=server, ca_pem=ca, token=token, user=user)
        paths[name] = path
    return paths


def node_kubeconfig(data: DataDir, *, host: str, port: int, node: str) -> Path:
    certs = ensure_certificates(data.pki)
    tokens = TokenFile(data.tokens)
    user = f"system:node:{node}"
    token = tokens.token_for(user, ("system:nodes",))
    path = data.component_kubeconfig(f"node-{node}")
    write_kubeconfig(
        path, server=f"https://{host}:{port}", ca_pem=certs.ca_pem(), token=token, user=user
    )
    return path


async def wait_ready(
    data: DataDir,
    host: str,
    port: int,
    process: asyncio.subprocess.Process,
    *,
    timeout: float = 60.0,
) -> None:
    """Wait until the API server answers /readyz, or fail if it exits first."""
    context = ssl.create_default_context(cafile=str(data.pki / "ca.crt"))
    url = f"https://{host}:{port}/readyz"
    deadline = time.monotonic() + timeout

    def probe() -> bool:
        try:
            with urllib.request.urlopen(url, context=context, timeout=2) as response:
                return bool(response.read() == b"ok")
        except OSError:
            return False

    while time.monotonic() < deadline:
        if process.returncode is not None:
            raise UpError(
                f"the API server exited with code {process.returncode}; see "
                f"{data.root / 'logs' / 'components' / 'apiserver.log'}"
            )
        if await asyncio.to_thread(probe):
            return
        await asyncio.sleep(0.1)
    raise UpError(f"the API server did not become ready within {timeout:.0f}s")


def node_sizes(nodes: int, cpu: str | None, memory: str | None) -> tuple[str, str]:
    """Per-node allocatable: as given, or the host's CPUs and memory less a reserve (a tenth,
    at least 100m CPU and 512Mi), split evenly across the nodes."""
    count = max(nodes, 1)
    if cpu is None:
        total = (os.cpu_count() or 1) * 1000
        cpu = f"{max(100, (total - max(100, total // 10)) // count)}m"
    if memory is None:
        total = int(psutil.virtual_memory().total)
        free = total - max(512 * 2**20, total // 10)
        memory = f"{max(64 * 2**20, free // count) // 2**20}Mi"
    for flag, value in (("--node-cpu", cpu), ("--node-memory", memory)):
        try:
            Quantity.parse(value)
        except QuantityError as exc:
            raise UpError(f"{flag} {value!r} is not a quantity: {exc}") from None
    return cpu, memory


def cgroup_root_of(data: DataDir) -> str:
    """The cgroup subtree of this cluster's node agents, unique to its data dir."""
    return "inplace/" + hashlib.sha1(str(data.root).encode()).hexdigest()[:10]


def node_components(
    data: DataDir,
    *,
    host: str,
    port: int,
    nodes: int,
    cpu: str,
    memory: str,
    admit_without_scheduler: bool = True,
) -> list[Component]:
    """One `inplace node` per node, each with its own identity, data dir and parent cgroup
    (under a cgroup root unique to this data dir, so two clusters never share cgroups)."""
    cgroup_root = cgroup_root_of(data)
    components = []
    for i in range(1, nodes + 1):
        name = f"node-{i}"
        kubeconfig = node_kubeconfig(data, host=host, port=port, node=name)
        components.append(
            Component(
                name,
                [
                    sys.executable,
                    "-m",
                    "inplace",
                    "node",
                    "--kubeconfig",
                    str(kubeconfig),
                    "--node-name",
                    name,
                    "--cpu",
                    cpu,
                    "--memory",
                    memory,
                    "--data-dir",
                    str(data.root / "nodes" / name),
                    "--log-root",
                    str(data.logs / "pods"),
                    "--cgroup-root",
                    cgroup_root,
                    "--hide-path",
                    str(data.root),
                    # With no arbitrating scheduler the agent approves resizes itself,
                    # as upstream's kubelet does.
                    *(["--admit-without-scheduler"] if admit_without_scheduler else []),
                ],
            )
        )
    return components


def simulator_component(
    data: DataDir, *, host: str, port: int, count: int, admit_without_scheduler: bool = True
) -> Component:
    """One `inplace node --simulated N` process serving every simulated node (sim-1..N, 4 CPU
    and 16Gi each), as `system:node-simulator`."""
    certs = ensure_certificates(data.pki)
    token = TokenFile(data.tokens).token_for(SIMULATOR_USER, ())
    kubeconfig = data.component_kubeconfig("node-simulator")
    write_kubeconfig(
        kubeconfig,
        server=f"https://{host}:{port}",
        ca_pem=certs.ca_pem(),
        token=token,
        user=SIMULATOR_USER,
    )
    return Component(
        "node-simulator",
        [
            sys.executable,
            "-m",
            "inplace",
            "node",
            "--kubeconfig",
            str(kubeconfig),
            "--simulated",
            str(count),
            "--node-name",
            "sim",
            "--cpu",
            "4",
            "--memory",
            "16Gi",
            "--data-dir",
            str(data.root / "nodes" / "simulated"),
            "--log-root",
            str(data.logs / "pods"),
            *(["--admit-without-scheduler"] if admit_without_scheduler else []),
        ],
    )


def scheduler_component(data: DataDir, *, metrics_port: int) -> Component:
    """The scheduler, which places pods and arbitrates every resize."""
    return Component(
        "scheduler",
        [
            sys.executable,
            "-m",
            "inplace",
            "scheduler",
            "--kubeconfig",
            str(data.component_kubeconfig("scheduler")),
            "--metrics-port",
            str(metrics_port),
        ],
    )


def controller_manager_component(
    data: DataDir,
    *,
    node_monitor_grace_period: float,
    metrics_port: int = 0,
    vpa_checkpoint_interval: float = 60.0,
) -> Component:
    """The controller manager: workloads, budgets, garbage collection, node lifecycle, the
    rescuer, vertical pod autoscalers."""
    return Component(
        "controller-manager",
        [
            sys.executable,
            "-m",
            "inplace",
            "controller-manager",
            "--kubeconfig",
            str(data.component_kubeconfig("controller-manager")),
            "--node-monitor-grace-period",
            f"{node_monitor_grace_period:g}s",
            "--default-local-storage-path",
            str(data.storage),
            # Each controller as its own kube-system service account, with only its
            # system:controller:* role (upstream's kubeadm runs it so).
            "--use-service-account-credentials",
            "--metrics-port",
            str(metrics_port),
            "--vpa-checkpoint-interval",
            f"{vpa_checkpoint_interval:g}s",
        ],
    )


def dashboard_component(data: DataDir, *, port: int) -> tuple[Component, str]:
    """The dashboard on 127.0.0.1:`port` as its own identity (`system:inplace:dashboard`,
    which may read what the dashboard shows and resize pods, nothing more), and its URL with
    a token made for this run (kept in a file only root can read, so a restarted dashboard
    keeps the same URL)."""
    token = secrets.token_urlsafe(24)
    token_file = data.root / "dashboard.token"
    token_file.touch(mode=0o600)
    token_file.chmod(0o600)
    token_file.write_text(token)
    argv = [
        sys.executable,
        "-m",
        "inplace",
        "dashboard",
        "--kubeconfig",
        str(data.component_kubeconfig("dashboard")),
        "--port",
        str(port),
        "--token-file",
        str(token_file),
    ]
    return Component("dashboard", argv), f"http://127.0.0.1:{port}/?token={token}"


async def run_up(
    data: DataDir,
    *,
    host: str,
    port: int,
    say: Callable[[str], None],
    warn: Callable[[str], None] | None = None,
    nodes: int = 1,
    node_cpu: str | None = None,
    node_memory: str | None = None,
    simulated_nodes: int = 0,
    scheduler: bool = True,
    admission_config: Path | None = None,
    node_monitor_grace_period: float = 40.0,
    vpa_checkpoint_interval: float = 60.0,
    dashboard: bool = True,
    dashboard_port: int = 0,
) -> int:
    warn = warn or say
    refuse_if_in_use(data)
    if admission_config is not None:
        _check_admission_config(admission_config)
    cpu, memory = node_sizes(nodes, node_cpu, node_memory)
    check_data_dir(data.root)
    lock = DataDirLock(data)
    try:
        lock.acquire()
    except LockHeld as exc:
        raise UpError(_in_use(data, str(exc.holder))) from None
    try:
        return await _run_locked(
            data,
            host=host,
            port=port,
            say=say,
            warn=warn,
            nodes=nodes,
            cpu=cpu,
            memory=memory,
            simulated_nodes=simulated_nodes,
            scheduler=scheduler,
            node_monitor_grace_period=node_monitor_grace_period,
            vpa_checkpoint_interval=vpa_checkpoint_interval,
            dashboard=dashboard,
            dashboard_port=dashboard_port,
            admission_config=admission_config,
            sized=node_cpu is not None or node_memory is not None,
        )
    finally:
        lock.release()


async def _run_locked(
    data: DataDir,
    *,
    host: str,
    port: int,
    say: Callable[[str], None],
    warn: Callable[[str], None],
    nodes: int,
    cpu: str,
    memory: str,
    simulated_nodes: int,
    scheduler: bool,
    node_monitor_grace_period: float,
    vpa_checkpoint_interval: float,
    dashboard: bool,
    dashboard_port: int,
    admission_config: Path | None,
    sized: bool,
) -> int:
    if sized and nodes > 0:
        for line in host_warnings(nodes, cpu, memory):
            warn(line)
    port = pick_port(host, port)
    if dashboard:
        dashboard_port = pick_port("127.0.0.1", dashboard_port, flag="--dashboard-port")
    started = time.monotonic()
    say(f"inplace: starting a cluster in {data.root}")
    kubeconfigs = prepare(data, host=host, port=port)
    say("  ✓ certificates and tokens")
    supervisor = Supervisor(data, say)
    python = sys.executable
    apiserver = Component(
        "apiserver",
        [
            python,
            "-m",
            "inplace",
            "apiserver",
            "--data-dir",
            str(data.root),
            "--host",
            host,
            "--port",
            str(port),
            *(
                ["--admission-control-config-file", str(admission_config.resolve())]
                if admission_config is not None
                else []
            ),
        ],
    )
    await supervisor.start(apiserver)
    watchers = [asyncio.create_task(supervisor.watch(apiserver))]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        assert apiserver.process is not None
        await wait_ready(data, host, port, apiserver.process)
        say(f"  ✓ API server on https://{host}:{port}")
        if scheduler:
            metrics_port = pick_port(host, 0)
            await supervisor.start(scheduler_component(data, metrics_port=metrics_port))
            watchers.append(asyncio.create_task(supervisor.watch(supervisor.components[-1])))
            say(f"  ✓ scheduler (metrics on http://{host}:{metrics_port}/metrics)")
        manager_metrics_port = pick_port(host, 0)
        manager = controller_manager_component(
            data,
            node_monitor_grace_period=node_monitor_grace_period,
            metrics_port=manager_metrics_port,
            vpa_checkpoint_interval=vpa_checkpoint_interval,
        )
        await supervisor.start(manager)
        watchers.append(asyncio.create_task(supervisor.watch(manager)))
        say(
            "  ✓ controller manager (deployments, jobs, budgets, garbage collection, nodes, "
            "rescuer, vertical pod autoscalers; "
            f"metrics on http://{host}:{manager_metrics_port}/metrics)"
        )
        if nodes > 0:
            for component in node_components(
                data,
                host=host,
                port=port,
                nodes=nodes,
                cpu=cpu,
                memory=memory,
                admit_without_scheduler=not scheduler,
            ):
                await supervisor.start(component)
                watchers.append(asyncio.create_task(supervisor.watch(component)))
            say(f"  ✓ {nodes} node agent(s), {cpu} CPU and {memory} memory each")
        if simulated_nodes > 0:
            simulator = simulator_component(
                data,
                host=host,
                port=port,
                count=simulated_nodes,
                admit_without_scheduler=not scheduler,
            )
            await supervisor.start(simulator)
            watchers.append(asyncio.create_task(supervisor.watch(simulator)))
            say(f"  ✓ {simulated_nodes} simulated node(s) sim-1..{simulated_nodes}")
        if dashboard:
            board, url = dashboard_component(data, port=dashboard_port)
            await supervisor.start(board)
            watchers.append(asyncio.create_task(supervisor.watch(board)))
            say(f"  ✓ dashboard on {url}")
        say(f"ready in {time.monotonic() - started:.1f}s. In another shell:")
        say(f"  export KUBECONFIG={kubeconfigs['admin']}")
        say("  kubectl get --raw /readyz")
        say("  kubectl get namespaces")
        await stop.wait()
        say("inplace: stopping")
    finally:
        await supervisor.stop()
        for task in watchers:
            task.cancel()
        if nodes > 0:
            remove_empty_cgroup_root(cgroup_root_of(data))
    left = pods_running(cgroup_root_of(data)) if nodes > 0 else 0
    if left:
        say(
            f"inplace: stopped; the processes of {left} pod(s) keep running, as a kubelet's "
            f"would. `inplace down --data-dir {data.root}` stops them and removes their cgroups"
        )
    else:
        say("inplace: stopped")
    return 0


def _check_admission_config(path: Path) -> None:
    """Refuse a bad admission configuration here, with its reason, rather than watch the API
    server exit."""
    from inplace.apiserver.podsecurity import ConfigError, load_admission_config

    try:
        load_admission_config(path)
    except ConfigError as exc:
        raise UpError(str(exc)) from None


def remove_empty_cgroup_root(root: str) -> None:
    """rmdir the agents' cgroup root in every hierarchy; the kernel refuses while any node or
    pod cgroup (a workload that outlives the cluster) is still inside, which is what we want."""
    for top in cluster_cgroups(root):
        with contextlib.suppress(OSError):
            os.rmdir(top)
            os.rmdir(top.parent)  # the shared `inplace` level, if now empty
