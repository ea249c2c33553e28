"""``scripts/upstream up`` / ``down``: the real control plane on loopback, inplace's agents as its
nodes.

``up`` starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler (the binaries
:mod:`.build` made) with generated certificates (:mod:`.pki`), authorization ``Node,RBAC`` and
the ``NodeRestriction`` admission plugin, then N ``inplace node`` agents, each with its own
node identity (a client certificate ``CN=system:node:NAME, O=system:nodes``, judged by the Node
authorizer and NodeRestriction as a kubelet is) and its own kubelet serving certificate; the
API server reaches them for logs and exec with a client certificate that only it holds. Every
process runs in its own session, so the control plane outlives the command that started it;
what was started is recorded in ``DIR/state.json`` and its logs go to ``DIR/logs/``. ``down``
deletes the workloads (so the agents stop their processes as kubelets do), stops exactly the
recorded processes, then removes what the agents left on the host: their cgroups and mounts.
With ``operator=True``, ``up`` also installs inplace's operator with its Helm chart
(:mod:`.chart`) and returns once its Deployment is Available.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import kubelet_node, podnet
from .build import Binaries, build
from .chart import ChartError, install, install_image
from .images import node_images
from .operator_image import build_image
from .pki import Authority, KeyPair, write_service_account_keys

__all__ = ["ControlPlane", "UpError", "down", "up"]

HOST = "127.0.0.1"
SERVICE_CIDR = "10.96.0.0/16"
ISSUER = "https://kubernetes.default.svc.cluster.local"
NODE_MONITOR_GRACE = "20s"
"""How long the node lifecycle controller waits for a silent node before NotReady (upstream's
default is 50 s; shorter here so a test of it takes seconds, still two lease renewals)."""


class UpError(Exception):
    """A component did not start; the message names it and points at its log."""


@dataclass
class ControlPlane:
    """A running test bed: where it is and how to reach it."""

    directory: Path
    api_port: int
    version: str
    nodes: list[str]
    """The agents' nodes (``node-1`` …), each a process with a kubelet's identity."""
    cgroup_root: str
    simulated: list[str] = field(default_factory=list)
    """Simulated nodes (``sim-1`` …), all served by one ``simulator`` process."""
    kubelet_nodes: list[str] = field(default_factory=list)
    """Real nodes (``kubelet-1`` …): a kubelet and its own containerd each
    (:mod:`.kubelet_node`), their pods on the bed's bridge (:mod:`.podnet`)."""
    network: dict[str, Any] = field(default_factory=dict)
    """The kubelet nodes' pod network (:class:`.podnet.PodNetwork`'s fields)."""
    pids: dict[str, int] = field(default_factory=dict)
    operator: dict[str, str] = field(default_factory=dict)
    """With ``--operator``: the Helm release, its namespace, Deployment and webhook URL."""

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig.yaml"

    @property
    def server(self) -> str:
        return f"https://{HOST}:{self.api_port}"

    def log(self, name: str) -> Path:
        return self.directory / "logs" / f"{name}.log"

    def save(self) -> None:
        state = {
            "api_port": self.api_port,
            "version": self.version,
            "nodes": self.nodes,
            "cgroup_root": self.cgroup_root,
            "simulated": self.simulated,
            "kubelet_nodes": self.kubelet_nodes,
            "network": self.network,
            "pids": self.pids,
            "operator": self.operator,
        }
        (self.directory / "state.json").write_text(json.dumps(state, indent=2))

    @classmethod
    def load(cls, directory: Path) -> ControlPlane:
        state = json.loads((directory / "state.json").read_text())
        return cls(directory=directory, **state)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _kubeconfig(path: Path, server: str, ca: Path, client: KeyPair, user: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "upstream", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [
            {
                "name": user,
                "user": {"client-certificate": str(client.cert), "client-key": str(client.key)},
            }
        ],
        "contexts": [{"name": "upstream", "context": {"cluster": "upstream", "user": user}}],
        "current-context": "upstream",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    return path


def _start(
    plane: ControlPlane, name: str, argv: list[str], env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    log = plane.log(name)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives `scripts/upstream up`; `down` stops it
            cwd=plane.directory,
            env=env,
        )
    plane.pids[name] = process.pid
    plane.save()
    return process


def _wait(
    plane: ControlPlane,
    name: str,
    process: subprocess.Popen[bytes],
    probe: Any,
    timeout: float = 90.0,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = plane.log(name).read_text(errors="replace").splitlines()[-15:]
            raise UpError(
                f"{name} exited with code {process.returncode}; its log "
                f"({plane.log(name)}) ends:\n" + "\n".join(tail)
            )
        with contextlib.suppress(OSError, ValueError):
            if probe():
                return
        time.sleep(0.2)
    raise UpError(f"{name} was not ready within {timeout:.0f} s; see {plane.log(name)}")


def _https_ok(url: str, context: ssl.SSLContext) -> bool:
    with urllib.request.urlopen(url, context=context, timeout=2) as response:
        return bool(response.status == 200)


def _cgroup_root(directory: Path) -> str:
    return "inplace/upstream-" + hashlib.sha1(str(directory).encode()).hexdigest()[:10]


def up(
    directory: Path,
    *,
    nodes: int = 1,
    node_cpu: str = "2",
    node_memory: str = "2Gi",
    binaries: Binaries | None = None,
    controller_manager: bool = True,
    scheduler: bool = True,
    simulated: int = 0,
    kubelet_nodes: int = 0,
    extra_flags: Mapping[str, Sequence[str]] | None = None,
    operator: bool = False,
    release: str = "",
) -> ControlPlane:
    """Start the control plane, ``nodes`` agents and ``simulated`` simulated nodes (of the same
    size) and ``kubelet_nodes`` real nodes (a kubelet with containerd and runc each) in
    ``directory``; return once every node is Ready. A failure stops whatever had
    started. A benchmark may leave out the controller manager or the scheduler (the API
    alone, or the scheduler without controllers), and give kube-controller-manager or
    kube-scheduler ``extra_flags`` (by component name), e.g. scheduler_perf's client rate.
    ``operator``: then install inplace's operator with its chart and the built ``helm``, and
    return once its Deployment is Available. ``release``: another release's control plane
    and kubelet than the pinned one (``v1.37``, ``v1.33``: :data:`.build.RELEASES`)."""
    if operator and (nodes + kubelet_nodes < 1 or not controller_manager or not scheduler):
        raise UpError("--operator needs a node, the controller manager and the scheduler")
    directory = directory.resolve()
    if (directory / "state.json").exists():
        raise UpError(f"{directory} holds a test bed already; `scripts/upstream down` it first")
    directory.mkdir(parents=True, exist_ok=True)
    binaries = (binaries or build(releases=[release] if release else [])).for_release(release)
    plane = ControlPlane(
        directory=directory,
        api_port=_free_port(),
        version=binaries.kubernetes,
        nodes=[f"node-{i}" for i in range(1, nodes + 1)],
        cgroup_root=_cgroup_root(directory),
        simulated=[f"sim-{i}" for i in range(1, simulated + 1)],
        kubelet_nodes=[f"kubelet-{i}" for i in range(1, kubelet_nodes + 1)],
    )
    plane.save()
    try:
        _up(
            plane,
            binaries,
            node_cpu,
            node_memory,
            controller_manager,
            scheduler,
            dict(extra_flags or {}),
        )
        if operator:
            _install_operator(plane, binaries)
    except BaseException:
        down(directory, delete_workloads=False)
        raise
    return plane


def _up(
    plane: ControlPlane,
    binaries: Binaries,
    node_cpu: str,
    node_memory: str,
    with_controller_manager: bool,
    with_scheduler: bool,
    extra_flags: dict[str, Sequence[str]],
) -> None:
    pki = plane.directory / "pki"
    ca = Authority(pki, "ca")
    kubelet_client_ca = Authority(pki, "kubelet-client-ca")
    sa = write_service_account_keys(pki)
    serving = ca.issue(
        "apiserver",
        "kube-apiserver",
        hosts=(HOST, "localhost", "10.96.0.1", "kubernetes", "kubernetes.default.svc"),
        server=True,
    )
    kubelet_client = kubelet_client_ca.issue(
        "apiserver-kubelet-client", "kube-apiserver-kubelet-client", organizations=("kubeadm",)
    )
    server = plane.server
    admin = _kubeconfig(
        plane.kubeconfig,
        server,
        ca.pair.cert,
        ca.issue("admin", "kubernetes-admin", organizations=("system:masters",)),
        "kubernetes-admin",
    )
    components = plane.directory / "components"
    kcm_config = _kubeconfig(
        components / "controller-manager.yaml",
        server,
        ca.pair.cert,
        ca.issue("controller-manager", "system:kube-controller-manager"),
        "system:kube-controller-manager",
    )
    scheduler_config = _kubeconfig(
        components / "scheduler.yaml",
        server,
        ca.pair.cert,
        ca.issue("scheduler", "system:kube-scheduler"),
        "system:kube-scheduler",
    )

    etcd_port, etcd_peer = _free_port(), _free_port()
    etcd_url = f"http://{HOST}:{etcd_port}"
    etcd = _start(
        plane,
        "etcd",
        [
            str(binaries.path("etcd")),
            "--name=testbed",
            f"--data-dir={plane.directory / 'etcd'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls=http://{HOST}:{etcd_peer}",
            f"--initial-advertise-peer-urls=http://{HOST}:{etcd_peer}",
            f"--initial-cluster=testbed=http://{HOST}:{etcd_peer}",
            "--listen-metrics-urls=",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
    )
    _wait(plane, "etcd", etcd, lambda: urllib.request.urlopen(f"{etcd_url}/health", timeout=2))

    apiserver = _start(
        plane,
        "kube-apiserver",
        [
            str(binaries.path("kube-apiserver")),
            f"--etcd-servers={etcd_url}",
            f"--bind-address={HOST}",
            f"--advertise-address={HOST}",
            f"--secure-port={plane.api_port}",
            f"--cert-dir={pki}",
            f"--tls-cert-file={serving.cert}",
            f"--tls-private-key-file={serving.key}",
            f"--client-ca-file={ca.pair.cert}",
            f"--service-account-issuer={ISSUER}",
            f"--service-account-key-file={sa.cert}",
            f"--service-account-signing-key-file={sa.key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true",
            # loopback is no valid Endpoints address: no endpoints for the `kubernetes` Service
            "--endpoint-reconciler-type=none",
            f"--kubelet-client-certificate={kubelet_client.cert}",
            f"--kubelet-client-key={kubelet_client.key}",
            f"--kubelet-certificate-authority={ca.pair.cert}",
            # the agents publish their address as InternalIP; their names do not resolve
            "--kubelet-preferred-address-types=InternalIP",
            # a webhook's or an aggregated API's Service is called at its endpoints (pod IPs
            # on the bed's bridge): no kube-proxy runs on the host
            "--enable-aggregator-routing=true",
            "--profiling=false",
        ],
    )
    admin_tls = ssl.create_default_context(cafile=str(ca.pair.cert))
    admin_tls.load_cert_chain(plane.directory / "pki" / "admin.crt", pki / "admin.key")
    _wait(
        plane,
        "kube-apiserver",
        apiserver,
        lambda: _https_ok(f"{server}/readyz", admin_tls),
    )

    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    controllers: dict[str, list[str]] = {}
    if with_controller_manager:
        controllers["kube-controller-manager"] = [
            f"--kubeconfig={kcm_config}",
            f"--authentication-kubeconfig={kcm_config}",
            f"--authorization-kubeconfig={kcm_config}",
            "--use-service-account-credentials",
            f"--root-ca-file={ca.pair.cert}",
            f"--service-account-private-key-file={sa.key}",
            f"--cluster-signing-cert-file={ca.pair.cert}",
            f"--cluster-signing-key-file={ca.pair.key}",
            f"--node-monitor-grace-period={NODE_MONITOR_GRACE}",
            "--node-monitor-period=2s",
        ]
    if with_scheduler:
        controllers["kube-scheduler"] = [
            f"--kubeconfig={scheduler_config}",
            f"--authentication-kubeconfig={scheduler_config}",
            f"--authorization-kubeconfig={scheduler_config}",
        ]
    started: list[tuple[str, subprocess.Popen[bytes], int]] = []
    for name, flags in controllers.items():
        port = _free_port()
        argv = [
            str(binaries.path(name)),
            *flags,
            f"--bind-address={HOST}",
            f"--secure-port={port}",
            f"--cert-dir={components / name}",
            "--leader-elect=false",
            "--profiling=false",
            *extra_flags.get(name, ()),
        ]
        started.append((name, _start(plane, name, argv), port))
    for name, process, port in started:
        _wait(
            plane,
            name,
            process,
            lambda port=port: _https_ok(f"https://{HOST}:{port}/healthz", insecure),
        )

    agents: dict[str, subprocess.Popen[bytes]] = {}
    for name in plane.nodes:
        node_dir = plane.directory / "nodes" / name
        identity = ca.issue(f"node-{name}", f"system:node:{name}", organizations=("system:nodes",))
        node_serving = ca.issue(f"node-{name}-serving", name, hosts=(HOST, name), server=True)
        kubeconfig = _kubeconfig(
            node_dir / "kubeconfig.yaml", server, ca.pair.cert, identity, f"system:node:{name}"
        )
        agents[name] = _start(
            plane,
            name,
            [
                sys.executable,
                "-m",
                "inplace",
                "node",
                f"--kubeconfig={kubeconfig}",
                f"--node-name={name}",
                f"--cpu={node_cpu}",
                f"--memory={node_memory}",
                f"--data-dir={node_dir}",
                f"--cgroup-root={plane.cgroup_root}",
                f"--hide-path={plane.directory}",
                f"--address={HOST}",
                f"--tls-cert-file={node_serving.cert}",
                f"--tls-private-key-file={node_serving.key}",
                f"--client-ca-file={kubelet_client_ca.pair.cert}",
                # no inplace scheduler arbitrates here: the agent admits resizes as a kubelet
                "--admit-without-scheduler",
            ],
        )
    if plane.simulated:
        # One process serves every simulated node, so it is no kubelet to the Node
        # authorizer (which ties one identity to one node): it writes as the admin.
        agents["simulator"] = _start(
            plane,
            "simulator",
            [
                sys.executable,
                "-m",
                "inplace",
                "node",
                f"--kubeconfig={admin}",
                "--node-name=sim",
                f"--simulated={len(plane.simulated)}",
                f"--cpu={node_cpu}",
                f"--memory={node_memory}",
                f"--data-dir={plane.directory / 'nodes' / 'simulator'}",
                "--admit-without-scheduler",
            ],
        )
    for name, process in agents.items():
        names = plane.simulated if name == "simulator" else [name]
        _wait(plane, name, process, lambda names=names: _nodes_ready(admin, names))
    if plane.kubelet_nodes:
        _start_kubelet_nodes(plane, binaries, ca, kubelet_client_ca, node_cpu, node_memory)
    if with_controller_manager:  # a pod is refused until its namespace's account exists
        _wait(plane, "kube-controller-manager", started[0][1], lambda: _has_account(admin))


def _start_kubelet_nodes(
    plane: ControlPlane,
    binaries: Binaries,
    ca: Authority,
    kubelet_client_ca: Authority,
    cpu: str,
    memory: str,
) -> None:
    """The bed's bridge, then per node containerd (its images imported) and a kubelet;
    returns once every kubelet node is Ready (which takes a CNI config: written first)."""
    # one lock for the machine: beds of different test workers live under different parents
    network = podnet.allocate(plane.directory, plane.api_port, lock_dir=kubelet_node.RUNTIME_ROOT)
    plane.network = podnet.state_of(network)
    plane.save()
    # kube-apiserver's client identity may use every kubelet API (logs, exec, stats), as
    # kubeadm binds it; the kubelets authorize it through SubjectAccessReview
    _kubectl_apply(
        plane.kubeconfig,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "kube-apiserver-kubelet-api-admin"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:kubelet-api-admin",
            },
            "subjects": [
                {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "User",
                    "name": "kube-apiserver-kubelet-client",
                }
            ],
        },
    )
    images = node_images(binaries.kubernetes)
    kubelets: dict[str, subprocess.Popen[bytes]] = {}
    for index, name in enumerate(plane.kubelet_nodes, start=1):
        directory = kubelet_node.runtime_directory(plane.directory) / name
        directory.mkdir(parents=True, exist_ok=True)
        link = plane.directory / "nodes" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(directory)
        node = kubelet_node.KubeletNode(
            name=name,
            index=index,
            directory=directory,
            address=podnet.add_node(network, index),
            port=_free_port(),
            healthz_port=_free_port(),
            cgroup_root=f"{plane.cgroup_root}/{name}",
        )
        identity = ca.issue(f"node-{name}", f"system:node:{name}", organizations=("system:nodes",))
        serving = ca.issue(f"node-{name}-serving", name, hosts=(node.address, name), server=True)
        kubeconfig = _kubeconfig(
            node.directory / "kubeconfig.yaml",
            plane.server,
            ca.pair.cert,
            identity,
            f"system:node:{name}",
        )
        kubelet_node.write_configs(
            node,
            binaries,
            network,
            serving=(serving.cert, serving.key),
            client_ca=kubelet_client_ca.pair.cert,
            service_cidr=SERVICE_CIDR,
            cpu=cpu,
            memory=memory,
            sandbox_image=images.sandbox.name,
        )
        kubelet_node.make_cgroup_root(node.cgroup_root)
        kubelet_node.make_cgroup_root(node.runtime_cgroup)
        containerd = _start(
            plane,
            f"{name}-containerd",
            kubelet_node.containerd_argv(node, binaries),
            env=kubelet_node.containerd_env(binaries),
        )
        _wait(plane, f"{name}-containerd", containerd, node.socket.exists)
        kubelet_node.import_images(binaries, node, images)
        kubelets[name] = _start(plane, name, kubelet_node.kubelet_argv(node, binaries, kubeconfig))
    for name, process in kubelets.items():
        _wait(plane, name, process, lambda name=name: _nodes_ready(plane.kubeconfig, [name]))


def _kubectl_apply(kubeconfig: Path, manifest: dict[str, Any]) -> None:
    out = subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", "apply", "-f", "-"],
        input=json.dumps(manifest),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if out.returncode != 0:
        raise UpError(f"kubectl apply {manifest['kind']}: {out.stderr.strip()}")


def _install_operator(plane: ControlPlane, binaries: Binaries) -> None:
    """The chart, installed with the built helm. On kubelet nodes as on any cluster: the
    operator's image (:mod:`.operator_image`) imported into each node's containerd, only
    its repository and tag set (pinned to the kubelet nodes when agents run beside them).
    Otherwise on the agents, whose address the API server calls the webhook at."""
    if plane.kubelet_nodes:
        image = build_image(log=False)
        for name in plane.kubelet_nodes:
            socket = kubelet_node.socket_of(plane.directory, name)
            kubelet_node.import_archive(binaries, socket, image.path, image.name)
        repository, _, tag = image.name.rpartition(":")
        options = []
        if plane.nodes:
            options = [
                "--set-json",
                'nodeSelector={"' + kubelet_node.NODE_KIND_LABEL + '": "kubelet"}',
            ]
        try:
            installed = install_image(
                binaries.path("helm"),
                plane.kubeconfig,
                repository=repository,
                tag=tag,
                options=options,
            )
        except ChartError as exc:
            raise UpError(f"inplace operator: {exc}") from exc
        extra = {"image": image.name}
    else:
        ports = {"webhook": _free_port(), "health": _free_port()}
        try:
            installed = install(
                binaries.path("helm"), plane.kubeconfig, node_address=HOST, ports=ports
            )
        except ChartError as exc:
            raise UpError(f"inplace operator: {exc}") from exc
        extra = {}
    plane.operator = {
        "release": installed.release,
        "namespace": installed.namespace,
        "deployment": installed.deployment,
        "webhook_url": installed.webhook_url,
        **extra,
    }
    plane.save()


def _nodes_ready(kubeconfig: Path, names: list[str]) -> bool:
    out = subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", "get", "nodes", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    ready = {
        node["metadata"]["name"]
        for node in json.loads(out.stdout or '{"items": []}')["items"]
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in node["status"].get("conditions") or ()
        )
    }
    return ready >= set(names)


def _has_account(kubeconfig: Path) -> bool:
    out = subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", "get", "serviceaccount", "default"],
        capture_output=True,
        timeout=20,
    )
    return out.returncode == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie of ours still answers kill(0): reap it
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def _stop(pid: int, grace: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.02)


def _delete_workloads(plane: ControlPlane) -> None:
    """As `inplace down` does through the API: the workload kinds first (so none recreates
    a pod), then every pod, which its agent stops; wait until the pods of the nodes whose
    agent still runs are gone (a dead agent's pods stay Terminating, as a dead kubelet's)."""
    kubectl = ["kubectl", f"--kubeconfig={plane.kubeconfig}", "--request-timeout=20s"]
    kinds = "cronjobs,deployments,statefulsets,daemonsets,replicasets,jobs"
    for what in (kinds, "pods"):
        subprocess.run(
            [*kubectl, "delete", what, "--all", "--all-namespaces", "--wait=false"],
            capture_output=True,
            timeout=60,
        )
    nodes = [*plane.nodes, *plane.kubelet_nodes]
    live = {name for name in nodes if _alive(plane.pids.get(name, 0) or -1)}
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        out = subprocess.run(
            [*kubectl, "get", "pods", "-A", "-o", "jsonpath={.items[*].spec.nodeName}"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if out.returncode == 0 and not live & set(out.stdout.split()):
            return
        time.sleep(0.5)


def down(directory: Path, *, delete_workloads: bool = True) -> list[str]:
    """Stop the test bed in ``directory``; returns what could not be cleaned up (empty when
    nothing is left behind)."""
    from inplace.cli.down import cluster_cgroups, remove_cgroups, stop_processes, unmount_under

    directory = directory.resolve()
    if not (directory / "state.json").exists():
        return []
    plane = ControlPlane.load(directory)
    if delete_workloads and _alive(plane.pids.get("kube-apiserver", 0) or -1):
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            _delete_workloads(plane)
    for name in [*plane.nodes, *plane.kubelet_nodes, "simulator"]:
        pid = plane.pids.get(name)
        if pid:
            _stop(pid, grace=15.0)
    if plane.kubelet_nodes:  # their sandboxes removed (CNI DEL) while the API server runs
        binaries = build(log=False)
        for name in plane.kubelet_nodes:
            socket = kubelet_node.socket_of(directory, name)
            kubelet_node.remove_sandboxes(binaries, socket)
            pid = plane.pids.get(f"{name}-containerd")
            if pid:
                _stop(pid, grace=15.0)
    for name in ["kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"]:
        pid = plane.pids.get(name)
        if pid:
            _stop(pid, grace=15.0)
    # whatever the agents still ran (a pod the API could not delete) and what they made
    tops = cluster_cgroups(plane.cgroup_root)
    # a thread of its own: ``down`` may be called from a running event loop (a benchmark's)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, stop_processes(tops, {})).result()
    unmount_under(directory)
    runtime = kubelet_node.runtime_directory(directory)
    if runtime.exists():  # the kubelet nodes' state: their pods' mounts first
        unmount_under(runtime)
        shutil.rmtree(runtime, ignore_errors=True)
    remove_cgroups(tops)
    leftovers = podnet.release(plane.network) if plane.network else []
    leftovers += [str(top) for top in cluster_cgroups(plane.cgroup_root)]
    if runtime.exists():
        leftovers.append(str(runtime))
    leftovers += [f"pid {pid} ({name})" for name, pid in plane.pids.items() if _alive(pid)]
    with contextlib.suppress(FileNotFoundError):  # a concurrent down got there first
        (directory / "state.json").rename(directory / "state.down.json")
    return leftovers
