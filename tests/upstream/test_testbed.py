"""The test bed itself: the pinned release answers, inplace's agents are its Ready nodes with
kubelet identities, and ``down`` leaves no process or cgroup behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from inplace.api.quantity import Quantity
from inplace.node.registration import allocatable_ephemeral_storage
from testbed.images import WORKLOAD_IMAGE
from testbed.kubelet_node import runtime_directory
from tests.poll import wait_until

from .conftest import CGROUP_FS, Bed, down, pid_of, start_bed, wait_running


def http_get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return str(response.read().decode())
    except OSError:
        return None


PINNED = re.search(
    r"^\s*k8s\.io/kubernetes (v\S+)",
    (Path(__file__).resolve().parents[2] / "upstream" / "go.mod").read_text(),
    re.M,
)


def test_version_names_the_pinned_release(bed: Bed) -> None:
    assert PINNED is not None
    out = json.loads(bed.kubectl("version", "-o", "json").stdout)
    assert out["serverVersion"]["gitVersion"] == PINNED.group(1) == bed.plane.version


def test_two_inplace_nodes_ready_with_leases(bed: Bed) -> None:
    nodes = json.loads(bed.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == ["node-1", "node-2"]
    for node in nodes:
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True"
        assert node["status"]["allocatable"]["cpu"] == "2"
        assert node["status"]["allocatable"]["memory"] == "2Gi"
        lease = bed.get("lease", node["metadata"]["name"], "kube-node-lease")
        assert lease["spec"]["holderIdentity"] == node["metadata"]["name"]
        # the lease is owned by its Node, as the kubelet writes it
        assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"


def test_a_pod_requesting_ephemeral_storage_runs_on_an_agent_node(bed: Bed) -> None:
    """kube-scheduler fits ephemeral-storage requests to a node's allocatable; the agent
    reports the filesystem of its data dir as a kubelet reports its root dir's (before, the pod
    stayed Pending: "0/2 nodes are available: 2 Insufficient ephemeral-storage")."""
    for name in bed.plane.nodes:
        fs = os.statvfs(bed.plane.directory / "nodes" / name)
        size = fs.f_blocks * fs.f_frsize
        status = bed.get("node", name)["status"]
        assert Quantity.parse(status["capacity"]["ephemeral-storage"]).value() == size
        allocatable = Quantity.parse(status["allocatable"]["ephemeral-storage"]).value()
        assert allocatable == allocatable_ephemeral_storage(size)
    node = bed.plane.nodes[0]
    bed.apply(
        f"""\
apiVersion: v1
kind: Pod
metadata: {{name: scratch}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {node}}}
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
    resources: {{requests: {{cpu: 10m, memory: 16Mi, ephemeral-storage: 1Mi}}}}
"""
    )
    assert wait_running(bed, "scratch")["spec"]["nodeName"] == node
    bed.kubectl("delete", "pod", "scratch")


def test_node_identity_is_judged_as_a_kubelet(bed: Bed) -> None:
    """The Node authorizer and NodeRestriction see the agent as system:node:NAME."""
    kubeconfig = bed.plane.directory / "nodes" / "node-1" / "kubeconfig.yaml"
    as_node = ["--kubeconfig", str(kubeconfig)]
    assert bed.kubectl(*as_node, "auth", "whoami", "-o", "json", check=False).returncode == 0
    who = json.loads(bed.kubectl(*as_node, "auth", "whoami", "-o", "json").stdout)
    assert who["status"]["userInfo"]["username"] == "system:node:node-1"
    assert "system:nodes" in who["status"]["userInfo"]["groups"]
    # NodeRestriction: a node may not modify another node
    out = bed.kubectl(
        *as_node, "label", "node", "node-2", "inplace.dev/probe=1", "--overwrite", check=False
    )
    assert out.returncode != 0
    assert "forbidden" in out.stderr.lower()


@pytest.fixture
def mixed_bed(tmp_path: Path) -> Iterator[Bed]:
    """One agent and two simulated nodes; stopped afterwards even when the test failed
    before its own ``down`` (a second ``down`` finds nothing to do)."""
    directory = tmp_path / "bed"
    try:
        yield Bed(start_bed(directory, nodes=1, node_cpu="1", node_memory="1Gi", simulated=2))
    finally:
        down(directory)


def test_simulated_nodes_join_and_down_leaves_no_process_or_cgroup(mixed_bed: Bed) -> None:
    """An agent and two simulated nodes in one control plane; a pod the real scheduler puts on
    a simulated node is resized there; then ``down`` leaves nothing behind."""
    bed = mixed_bed
    plane = bed.plane
    names = json.loads(bed.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert sorted(n["metadata"]["name"] for n in names) == ["node-1", "sim-1", "sim-2"]
    bed.apply(
        """\
apiVersion: v1
kind: Pod
metadata: {name: modelled}
spec:
  nodeSelector: {inplace.dev/simulated: "true"}
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
    resources: {requests: {cpu: 100m, memory: 32Mi}}
"""
    )
    assert wait_running(bed, "modelled")["spec"]["nodeName"].startswith("sim-")
    bed.kubectl(
        "patch",
        "pod",
        "modelled",
        "--subresource",
        "resize",
        "-p",
        '{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"300m"}}}]}}',
    )
    wait_until(
        lambda: (
            bed.get("pod", "modelled")["status"]["containerStatuses"][0]
            .get("resources", {})
            .get("requests", {})
            .get("cpu")
            == "300m"
        ),
        what="the simulated node applied the resize",
    )
    bed.apply(
        """\
apiVersion: v1
kind: Pod
metadata: {name: leftover}
spec:
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "exec sleep 3600"]
    resources: {limits: {cpu: 100m, memory: 32Mi}}
"""
    )
    pod = wait_running(bed, "leftover")
    workload = int(pod["status"]["containerStatuses"][0]["containerID"].split("://")[1])
    started = dict(plane.pids)
    assert down(plane.directory) == []
    for name, pid in started.items():
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie", name
    wait_until(lambda: not psutil.pid_exists(workload), what="the workload gone")
    for controller in ("memory", "cpu", "pids", "freezer"):
        assert not (CGROUP_FS / controller / plane.cgroup_root).exists(), controller
    assert not (plane.directory / "state.json").exists()
    assert not any(
        line.split()[4].startswith(str(plane.directory))
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
    )
    assert os.path.isdir(plane.directory / "logs")  # the logs stay for a post-mortem


def test_kubelet_nodes_run_pods_with_their_own_network_and_down_leaves_nothing(
    tmp_path: Path,
) -> None:
    """A kubelet node (the kubelet, its own containerd and runc): its pod gets an address of
    the node's range on the bed's bridge, the host reaches it, and it reaches the API server
    at ``kubernetes.default``'s ClusterIP; then ``down`` leaves no process (kubelet,
    containerd, shim, the pod's), mount, network namespace, bridge, veth, iptables rule or
    cgroup behind."""
    plane = start_bed(tmp_path / "bed", nodes=0, kubelet_nodes=1, node_cpu="1", node_memory="1Gi")
    bed = Bed(plane)
    try:
        bed.apply(
            f"""\
apiVersion: v1
kind: Pod
metadata: {{name: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: {WORKLOAD_IMAGE}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo hello > /tmp/index.html && exec httpd -f -p 8080 -h /tmp"]
    resources: {{limits: {{cpu: 100m, memory: 32Mi}}}}
"""
        )
        pod = wait_running(bed, "web")
        network = plane.network
        ip = pod["status"]["podIP"]
        assert ip.startswith(network["subnet"].rsplit(".", 2)[0] + ".1.")  # kubelet-1's /24
        body = wait_until(lambda: http_get(f"http://{ip}:8080/index.html"), what="the pod serves")
        assert body == "hello\n"
        # the pod reaches kube-apiserver at the kubernetes Service's ClusterIP
        # busybox's TLS lacks the API server's ECDSA suites: a TCP connection is the proof
        out = bed.kubectl(
            "exec", "web", "--", "sh", "-c", "nc -w 5 10.96.0.1 443 </dev/null && echo connected",
            check=False,
        )  # fmt: skip
        assert out.stdout.strip() == "connected", out
        workload = pid_of(pod)
    except BaseException:
        down(plane.directory)
        raise
    started = dict(plane.pids)
    assert down(plane.directory) == []
    for name, pid in started.items():
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie", name
    assert not psutil.pid_exists(workload)
    bed_dir = str(plane.directory)
    left = [
        p.info["pid"]
        for p in psutil.process_iter(["pid", "cmdline"])
        if any(bed_dir in part for part in p.info["cmdline"] or ())
    ]
    assert not left, f"processes of the bed still run: {left}"
    mounts = Path("/proc/self/mountinfo").read_text()
    runtime = runtime_directory(plane.directory)
    assert bed_dir not in mounts
    assert str(runtime) not in mounts
    assert not runtime.exists()
    for controller in ("memory", "cpu", "pids", "freezer", "cpuset"):
        assert not (CGROUP_FS / controller / plane.cgroup_root).exists(), controller
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert network["bridge"] not in links
    rules = subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True)
    assert network["bridge"] not in rules.stdout
