"""End to end: `inplace down` after real runs with pods, and `inplace up` on a live data dir.

Two clusters: one that `inplace down` takes down while it runs (through its API), and one
stopped with Ctrl-C first, whose workloads outlive it until `inplace down` stops them (and
deletes them from the store, read back here, so that no later `inplace up` restarts them).
Each must leave no process, no cgroup and no mount of the cluster behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from inplace.apiserver.cache import WatchCache
from inplace.cli.down import cluster_cgroups
from inplace.cli.paths import DataDir
from inplace.registry.kinds import REGISTRY
from inplace.store import Store
from tests.conftest import Cluster, free_port, reap_cgroups, reap_mounts, start_cluster
from tests.e2e.test_node_agent import apply, cgroup_root_of, node_ready, pid_of, running
from tests.poll import wait_until

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/sys/fs/cgroup/memory").is_dir(),
    reason="needs root and cgroup v1 (cgroups and mounts are checked)",
)


def manifest(marker: Path) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: polite}}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "trap 'echo term > {marker}; exit 0' TERM; while :; do sleep 0.1; done"]
    # the marker reaches the host through a volume (a pod's own writes stay in its layer)
    volumeMounts: [{{name: marks, mountPath: {marker.parent}}}]
  volumes: [{{name: marks, hostPath: {{path: {marker.parent}}}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: mounted}}
spec:
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
    volumeMounts: [{{name: scratch, mountPath: /scratch}}]
  volumes: [{{name: scratch, emptyDir: {{}}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: c, image: busybox, command: ["sleep", "3600"]}}]}}
"""


def inplace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inplace", *args], capture_output=True, text=True, timeout=180
    )


def fingerprint(data_dir: Path) -> dict[str, str]:
    """What a second `inplace up` must not touch: kubeconfigs, keys, tokens."""
    files = [data_dir / "kubeconfig.yaml", *data_dir.glob("components/*"), *data_dir.glob("pki/*")]
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.is_file()}


async def stored(data_dir: Path, kinds: tuple[str, ...]) -> list[str]:
    """The objects of ``kinds`` in the cluster's store (read directly: nothing runs it)."""
    store = await Store.open(DataDir(data_dir).store)
    cache = WatchCache(store, REGISTRY)
    try:
        await cache.start()
        found = []
        for kind in REGISTRY.kinds:
            if kind.kind in kinds:
                found += [e.value["metadata"]["name"] for e in cache.entries(kind, None)]
        return found
    finally:
        await cache.stop()
        await store.close()


def nothing_left(data_dir: Path, pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, f"{pid} still runs"
    assert cluster_cgroups(cgroup_root_of(data_dir)) == []
    prefix = str(data_dir.resolve())
    mounts = [
        line.split(" ")[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split(" ")[4].startswith(prefix)
    ]
    assert mounts == []


@pytest.fixture
def clusters() -> Iterator[list[Cluster]]:
    """Whatever a test started is stopped and reaped, even when it failed."""
    started: list[Cluster] = []
    yield started
    for cluster in started:
        with contextlib.suppress(Exception):
            cluster.stop()
        reap_cgroups(cluster.data_dir)
        reap_mounts(cluster.data_dir)


def start(data_dir: Path, clusters: list[Cluster]) -> Cluster:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    cluster = start_cluster(
        data_dir, None, "--nodes", "1", "--node-cpu", "1", "--node-memory", "1Gi"
    )
    clusters.append(cluster)
    wait_until(lambda: node_ready(cluster), what="node-1 Ready")
    return cluster


def web_pod(cluster: Cluster) -> dict[str, Any] | None:
    """The Deployment's one pod, once its ReplicaSet made it and it runs."""
    listed = json.loads(cluster.kubectl("get", "pods", "-l", "app=web", "-o", "json").stdout)
    [pod] = listed["items"] or [None]
    return None if pod is None else running(cluster, pod["metadata"]["name"])


def start_pods(cluster: Cluster, marker: Path) -> list[int]:
    """Two bare pods and a Deployment's (Deployment and ReplicaSet: two workloads, three pods)."""
    marker.parent.mkdir(exist_ok=True)
    apply(cluster, manifest(marker))
    pods = [
        wait_until(lambda n=name: running(cluster, n), what=name) for name in ("polite", "mounted")
    ]
    web = wait_until(lambda: web_pod(cluster), what="the Deployment's pod")
    return [*(pid_of(pod) for pod in pods), pid_of(web, "c")]


def test_down_takes_a_running_cluster_and_a_second_up_leaves_it_alone(
    tmp_path: Path, clusters: list[Cluster]
) -> None:
    data_dir = tmp_path / "data"
    cluster = start(data_dir, clusters)
    pids = start_pods(cluster, tmp_path / "marks" / "polite-got-sigterm")
    before = fingerprint(data_dir)

    second = inplace("up", "--data-dir", str(data_dir), "--port", str(free_port()))
    assert second.returncode == 1
    [line] = second.stderr.splitlines()
    assert line.startswith(
        f"inplace up: data dir {data_dir} is in use by process {cluster.process.pid} ("
    )
    assert "inplace up --data-dir" in line and "inplace down --data-dir" in line
    assert fingerprint(data_dir) == before
    assert running(cluster, "polite") is not None  # the running cluster still answers

    down = inplace("down", "--data-dir", str(data_dir))
    assert down.returncode == 0, down.stderr
    assert "✓ deleted 2 workload(s) and 3 pod(s) through the API" in down.stdout
    assert f"✓ stopped inplace up (process {cluster.process.pid} (" in down.stdout
    assert cluster.process.wait(30) == 0
    assert (tmp_path / "marks" / "polite-got-sigterm").read_text() == "term\n"
    nothing_left(data_dir, pids)
    assert cluster.output.read_text().rstrip().endswith("inplace: stopped")

    purged = inplace("down", "--data-dir", str(data_dir), "--purge")
    assert purged.returncode == 0, purged.stderr
    assert f"✓ removed {data_dir}" in purged.stdout
    assert not data_dir.exists()


def test_down_after_ctrl_c_stops_what_outlived_the_cluster(
    tmp_path: Path, clusters: list[Cluster]
) -> None:
    data_dir = tmp_path / "data"
    cluster = start(data_dir, clusters)
    pids = start_pods(cluster, tmp_path / "marks" / "polite-got-sigterm")

    cluster.process.send_signal(signal.SIGINT)
    assert cluster.process.wait(60) == 0
    said = cluster.output.read_text()
    assert (
        "inplace: stopped; the processes of 3 pod(s) keep running, as a kubelet's would. "
        f"`inplace down --data-dir {data_dir}` stops them and removes their cgroups"
    ) in said
    assert all(psutil.pid_exists(pid) for pid in pids)  # workloads outlive their cluster

    down = inplace("down", "--data-dir", str(data_dir))
    assert down.returncode == 0, down.stderr
    assert "✓ deleted 2 workload(s) and 3 pod(s) from the store" in down.stdout
    assert (tmp_path / "marks" / "polite-got-sigterm").read_text() == "term\n"
    nothing_left(data_dir, pids)

    assert (
        asyncio.run(stored(data_dir, ("Pod", "Deployment", "ReplicaSet"))) == []
    )  # none comes back
    purged = inplace("down", "--data-dir", str(data_dir), "--purge")
    assert purged.returncode == 0, purged.stderr
    assert not data_dir.exists()
