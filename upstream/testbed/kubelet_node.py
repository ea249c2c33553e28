"""A real node for the test bed: the kubelet, its own containerd and runc, built from their
modules (:mod:`.build`), as on any cluster.

Several nodes share one machine, so each has its own of everything a kubelet or containerd
would otherwise take from the host: containerd's root, state, sockets and cgroup (``[cgroup]
path``, so its shims are inside the bed's cgroups and ``down`` finds them), the kubelet's
``--root-dir``, pod log directory, ``cgroupRoot`` and ports, and its pods' network
namespaces (``netns_mounts_under_state_dir``) and addresses (:mod:`.podnet`). Nothing reads
the host's ``/etc/containerd``, ``/etc/cni`` or ``/var/lib/kubelet``.

What this machine needs of them (cgroup v1 only, no systemd, root without
``CAP_SYS_RESOURCE``): ``failCgroupV1: false``; ``cgroupDriver: cgroupfs`` (runc's
``SystemdCgroup = false``); containerd's ``restrict_oom_score_adj``, since runc cannot lower a
process's ``oom_score_adj``; the ``cgroupRoot`` made beforehand in every v1 hierarchy, with
``cpuset.cpus``/``cpuset.mems`` copied from its parent; runc built with seccomp.

The kubelet authenticates callers by the bed's kubelet-client CA (the API server's client
certificate) and by tokens through the API (``webhook``), and authorizes them through
``SubjectAccessReview`` (``Webhook``), as kubeadm sets it up; the API server's identity is
bound to ``system:kubelet-api-admin`` by the bed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from inplace.api.quantity import parse_quantity

from .build import Binaries
from .images import NodeImages
from .podnet import PodNetwork

__all__ = [
    "KubeletNode",
    "container_pid",
    "containerd_argv",
    "import_images",
    "kubelet_argv",
    "make_cgroup_root",
    "remove_sandboxes",
    "write_configs",
]

CGROUP_FS = Path("/sys/fs/cgroup")
RUNTIME_ROOT = Path("/var/lib/inplace-testbed")
"""Where each bed's kubelet nodes keep their state (:func:`runtime_directory`)."""
NODE_KIND_LABEL = "testbed.inplace.dev/node-kind"
"""Set to ``kubelet`` on every kubelet node, to tell them from the bed's agents."""
RUNTIME_REQUEST_TIMEOUT = "2m"
EVICTION_MEMORY = 100 * 2**20
"""The kubelet's default hard eviction threshold ``memory.available<100Mi``, which it
subtracts from allocatable."""


def runtime_directory(bed: Path) -> Path:
    """The bed's kubelet nodes' state: ``/var/lib/inplace-testbed/<id of the bed>``, not the
    bed's own directory, whose path can be long: containerd's and the kubelet's unix sockets
    live under a node's directory (``containerd.sock.ttrpc``, ``device-plugins/kubelet.sock``)
    and a socket's path may not exceed 104 bytes. The bed's ``nodes/NAME`` links to it."""
    return RUNTIME_ROOT / hashlib.sha1(str(bed).encode()).hexdigest()[:10]


def socket_of(bed: Path, name: str) -> Path:
    """Node ``name``'s containerd socket."""
    return runtime_directory(bed) / name / "containerd" / "containerd.sock"


def reserved_for(cpu: str, memory: str) -> dict[str, str]:
    """``kubeReserved`` that leaves a node of this machine ``cpu`` and ``memory``
    allocatable. A kubelet reports the whole machine as its capacity (cAdvisor: the CPUs
    online, ``MemTotal``); several nodes on one machine are sized, as an operator sizes a
    node for its daemons, by reserving the rest: allocatable = capacity - kubeReserved -
    the hard eviction threshold (``pkg/kubelet/cm/node_container_manager_linux.go``)."""
    cpus = os.cpu_count() or 1
    total = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            total = int(line.split()[1]) * 1024
    want_cpu = parse_quantity(cpu).milli_value()
    want_memory = parse_quantity(memory).value()
    if want_cpu > cpus * 1000 or want_memory + EVICTION_MEMORY > total:
        raise ValueError(
            f"a kubelet node of {cpu} CPU and {memory} does not fit this machine "
            f"({cpus} CPUs, {total} bytes of memory, {EVICTION_MEMORY} kept for eviction)"
        )
    return {
        "cpu": f"{cpus * 1000 - want_cpu}m",
        "memory": str(total - want_memory - EVICTION_MEMORY),
    }


@dataclass(frozen=True)
class KubeletNode:
    """One kubelet node's files and addresses."""

    name: str
    index: int
    directory: Path
    address: str
    """Its InternalIP on the bed's bridge, where its kubelet serves."""
    port: int
    healthz_port: int
    cgroup_root: str
    """``/inplace/upstream-…/NAME``: the kubelet's ``cgroupRoot``."""

    @property
    def socket(self) -> Path:
        return self.directory / "containerd" / "containerd.sock"

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"

    @property
    def runtime_cgroup(self) -> str:
        """containerd's own cgroup (and so its shims'), beside the kubelet's pods."""
        return f"{self.cgroup_root}-runtime"

    @property
    def containerd_config(self) -> Path:
        return self.directory / "containerd" / "config.toml"

    @property
    def kubelet_config(self) -> Path:
        return self.directory / "kubelet" / "config.yaml"

    @property
    def kubelet_root(self) -> Path:
        return self.directory / "kubelet" / "root"


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a TOML basic string is a JSON string for these paths


def _containerd_toml(
    node: KubeletNode, binaries: Binaries, cni_conf_dir: Path, sandbox_image: str
) -> str:
    root = node.directory / "containerd"
    quoted = _toml_string
    return f"""# containerd for test-bed node {node.name} (upstream/testbed/kubelet_node.py)
version = 3
root = {quoted(str(root / "root"))}
state = {quoted(str(root / "state"))}
imports = []
disabled_plugins = [
  "io.containerd.nri.v1.nri",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.differ.v1.erofs",
  "io.containerd.mount-handler.v1.erofs",
  "io.containerd.internal.v1.tracing",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = {quoted(str(node.socket))}

[ttrpc]
  address = {quoted(str(node.socket) + ".ttrpc")}

[cgroup]
  path = {quoted("/" + node.runtime_cgroup)}

[plugins.'io.containerd.internal.v1.opt']
  path = {quoted(str(root / "opt"))}

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = {quoted(sandbox_image)}

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_cdi = false
  enable_criu = false

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = {quoted(str(binaries.path("runc")))}
  Root = {quoted(str(root / "runc"))}
  SystemdCgroup = false

[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = [{quoted(str(binaries.cni_bin_dir))}]
  conf_dir = {quoted(str(cni_conf_dir))}

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""


def _kubelet_config(
    node: KubeletNode,
    network: PodNetwork,
    serving: tuple[Path, Path],
    client_ca: Path,
    resolv_conf: Path,
    cluster_dns: str | None,
    reserved: dict[str, str],
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.address,
        "port": node.port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": node.healthz_port,
        "tlsCertFile": str(serving[0]),
        "tlsPrivateKeyFile": str(serving[1]),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(client_ca)},
        },
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": "/" + node.cgroup_root,
        "cgroupsPerQOS": True,
        "failCgroupV1": False,
        "failSwapOn": False,
        "containerRuntimeEndpoint": node.endpoint,
        "podLogsDir": str(node.directory / "kubelet" / "pod-logs"),
        "resolvConf": str(resolv_conf),
        "podCIDR": network.pod_cidr(node.index),
        "kubeReserved": reserved,
        "evictionHard": {
            "memory.available": str(EVICTION_MEMORY),
            # the host's disk is every node's: pressure on it is the machine's, not a pod's
            "nodefs.available": "1%",
            "imagefs.available": "1%",
        },
        "registerNode": True,
        "rotateCertificates": False,
        "serializeImagePulls": False,
        "runtimeRequestTimeout": RUNTIME_REQUEST_TIMEOUT,
        # every node of a bed sees the whole machine's disk: GC of the images made here
        # would only force a re-import, and the bed's disk is the host's
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        # as the bed's agents: a node silent for 20 s is NotReady (kcm's grace)
        "nodeStatusUpdateFrequency": "4s",
        "nodeStatusReportFrequency": "20s",
        "fileCheckFrequency": "5s",
        "syncFrequency": "10s",
    }
    if cluster_dns:
        config["clusterDNS"] = [cluster_dns]
        config["clusterDomain"] = "cluster.local"
    return config


def write_configs(
    node: KubeletNode,
    binaries: Binaries,
    network: PodNetwork,
    *,
    serving: tuple[Path, Path],
    client_ca: Path,
    service_cidr: str,
    cpu: str,
    memory: str,
    sandbox_image: str,
    cluster_dns: str | None = None,
) -> None:
    """containerd's config.toml (its sandbox image pinned to ``sandbox_image``), the node's
    CNI conflist and the KubeletConfiguration."""
    cni_conf_dir = node.directory / "cni" / "net.d"
    cni_conf_dir.mkdir(parents=True, exist_ok=True)
    (cni_conf_dir / "10-inplace.conflist").write_text(
        network.cni_config(node.name, node.index, node.directory / "cni" / "ipam", service_cidr)
    )
    node.containerd_config.parent.mkdir(parents=True, exist_ok=True)
    node.containerd_config.write_text(_containerd_toml(node, binaries, cni_conf_dir, sandbox_image))
    resolv_conf = node.directory / "kubelet" / "resolv.conf"
    resolv_conf.parent.mkdir(parents=True, exist_ok=True)
    # no nameserver of the host's: a pod resolves nothing outside the machine
    resolv_conf.write_text("# test bed node: no upstream resolver\noptions ndots:1\n")
    node.kubelet_root.mkdir(parents=True, exist_ok=True)
    node.kubelet_config.write_text(
        yaml.safe_dump(
            _kubelet_config(
                node,
                network,
                serving,
                client_ca,
                resolv_conf,
                cluster_dns,
                reserved_for(cpu, memory),
            ),
            sort_keys=False,
        )
    )


def containerd_argv(node: KubeletNode, binaries: Binaries) -> list[str]:
    return [str(binaries.path("containerd")), "--config", str(node.containerd_config)]


def kubelet_argv(node: KubeletNode, binaries: Binaries, kubeconfig: Path) -> list[str]:
    return [
        str(binaries.path("kubelet")),
        f"--config={node.kubelet_config}",
        f"--kubeconfig={kubeconfig}",
        f"--root-dir={node.kubelet_root}",
        f"--cert-dir={node.directory / 'kubelet' / 'pki'}",
        f"--hostname-override={node.name}",
        f"--node-ip={node.address}",
        f"--node-labels={NODE_KIND_LABEL}=kubelet",
        "--v=2",
    ]


def containerd_env(binaries: Binaries) -> dict[str, str]:
    """containerd finds ``containerd-shim-runc-v2`` beside itself or on ``PATH``."""
    path = f"{binaries.path('containerd').parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    return {**os.environ, "PATH": path}


def make_cgroup_root(path: str) -> None:
    """``path`` in every v1 hierarchy (the kubelet refuses a ``cgroupRoot`` missing from any),
    each cpuset level given its parent's CPUs and memory nodes, as the kernel requires
    before a task may join it."""
    for hierarchy in sorted(CGROUP_FS.iterdir()):
        if not hierarchy.is_dir() or hierarchy.is_symlink():
            continue
        if not (hierarchy / "cgroup.procs").exists() or hierarchy.name == "unified":
            continue
        current = hierarchy
        for part in path.strip("/").split("/"):
            parent, current = current, current / part
            current.mkdir(exist_ok=True)
            for name in ("cpuset.cpus", "cpuset.mems"):
                mine = current / name
                if mine.exists() and not mine.read_text().strip():
                    mine.write_text((parent / name).read_text())


def import_images(binaries: Binaries, node: KubeletNode, images: NodeImages) -> None:
    """``ctr -n k8s.io images import`` each archive into the node's containerd."""
    for image in images.all:
        out = subprocess.run(
            [
                str(binaries.path("ctr")),
                "--address",
                str(node.socket),
                "--namespace",
                "k8s.io",
                "images",
                "import",
                "--no-unpack",
                str(image.path),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if out.returncode != 0:
            raise RuntimeError(f"ctr images import {image.name} on {node.name}: {out.stderr}")


def normalized_reference(name: str) -> str:
    """An image reference as the CRI looks it up (the docker reference rules containerd's
    CRI applies): ``inplace:0.1.0`` is ``docker.io/library/inplace:0.1.0``."""
    first, _, rest = name.partition("/")
    if not rest:
        return f"docker.io/library/{name}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{name}"
    return name


def import_archive(binaries: Binaries, socket: Path, archive: Path, name: str) -> None:
    """Import one more image archive (e.g. the operator's) into a node's containerd, under
    the name the kubelet will ask for: ``ctr`` stores the archive's name as written, the
    CRI looks up its normalized form."""
    ctr = [str(binaries.path("ctr")), "--address", str(socket), "--namespace", "k8s.io"]
    out = subprocess.run(
        [*ctr, "images", "import", str(archive)], capture_output=True, text=True, timeout=300
    )
    if out.returncode != 0:
        raise RuntimeError(f"ctr images import {archive}: {out.stderr}")
    full = normalized_reference(name)
    if full != name:
        out = subprocess.run(
            [*ctr, "images", "tag", "--force", name, full],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if out.returncode != 0:
            raise RuntimeError(f"ctr images tag {name} {full}: {out.stderr}")


def remove_sandboxes(binaries: Binaries, socket: Path) -> None:
    """Remove every pod sandbox of a node's containerd (its CNI DEL frees the pod's address
    and veth). The kubelet is stopped first, or it would start them again; containerd after."""
    if not socket.exists():
        return
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        subprocess.run(
            [
                str(binaries.path("crictl")),
                f"--runtime-endpoint=unix://{socket}",
                "--timeout=30s",
                "rmp",
                "--all",
                "--force",
            ],
            capture_output=True,
            timeout=120,
        )


def container_pid(pod: dict[str, Any], container: str) -> int:
    """The host PID of a kubelet node's container's first process, found where the kubelet's
    cgroupfs driver puts it (``…/kubepods/[QOS/]pod<UID>/<ID>``): the process of that cgroup
    that is PID 1 of its PID namespace. (The agent's container ID is the PID itself.)"""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    status = next((s for s in statuses if s.get("name") == container), None)
    if status is None:
        raise LookupError(f"no status of container {container}")
    container_id = str(status.get("containerID", ""))
    cid = container_id.removeprefix("containerd://")
    uid = pod["metadata"]["uid"]
    pattern = f"inplace/*/*/kubepods/**/pod{uid}/{cid}/cgroup.procs"
    for procs in (CGROUP_FS / "pids").glob(pattern):
        for pid in procs.read_text().split():
            with contextlib.suppress(FileNotFoundError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("NSpid:") and line.split()[-1] == "1":
                        return int(pid)
    raise LookupError(f"no process of container {container} ({container_id}) of pod {uid}")
