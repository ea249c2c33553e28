"""The upstream test bed as a fixture: one real control plane per test module.

kube-apiserver, kube-controller-manager, kube-scheduler and etcd are the release that
``upstream/go.mod`` pins, built by ``scripts/upstream build`` (cached; the first build on a
machine takes minutes); inplace's node agents are their nodes. A machine without Go gets a
failure saying what to install: these tests are the proof against the real thing, never skipped
in silence.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_node_agent import CGROUP_FS, cgroup_file, condition, status_of
from tests.e2e.test_node_agent import pid_of as agent_pid_of
from tests.poll import wait_until

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "upstream"))

from testbed.build import BuildError, build  # noqa: E402
from testbed.cluster import ControlPlane, down, up  # noqa: E402
from testbed.kubelet_node import container_pid  # noqa: E402


@dataclass
class Bed:
    """A running test bed and the ways a test talks to it."""

    plane: ControlPlane

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.plane.kubeconfig)}

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(
            ["kubectl", *args],
            input=input,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
        )
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {out.stderr}")
        return out

    def get(self, kind: str, name: str, namespace: str = "default") -> dict[str, Any]:
        out = self.kubectl("get", kind, name, "-n", namespace, "-o", "json")
        return dict(json.loads(out.stdout))

    def apply(self, manifest: str) -> None:
        self.kubectl("apply", "-f", "-", input=manifest)

    def events_of(self, name: str) -> list[dict[str, Any]]:
        out = self.kubectl(
            "get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json"
        )
        return list(json.loads(out.stdout)["items"])


def start_bed(
    directory: Path,
    *,
    nodes: int,
    node_cpu: str,
    node_memory: str,
    simulated: int = 0,
    kubelet_nodes: int = 0,
    operator: bool = False,
    release: str = "",
) -> ControlPlane:
    if shutil.which("kubectl") is None:
        pytest.fail("the upstream tests drive kubectl; put kubectl on PATH")
    if os.geteuid() != 0 or not (CGROUP_FS / "memory").is_dir():
        pytest.fail("the upstream tests run real pods in cgroup v1: run them as root")
    try:
        binaries = build(log=False, releases=[release] if release else [])
    except BuildError as exc:
        pytest.fail(f"cannot build the upstream control plane: {exc}")
    return up(
        directory,
        nodes=nodes,
        node_cpu=node_cpu,
        node_memory=node_memory,
        simulated=simulated,
        kubelet_nodes=kubelet_nodes,
        operator=operator,
        release=release,
        binaries=binaries,
    )


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    """Two 2-CPU, 2Gi inplace nodes under the real control plane."""
    directory = tmp_path_factory.mktemp("upstream")
    plane = start_bed(directory, nodes=2, node_cpu="2", node_memory="2Gi")
    try:
        yield Bed(plane)
    finally:
        leftovers = down(directory)
    assert not leftovers, f"the test bed left behind: {leftovers}"


# -- pods (the pure helpers are the node agent's end-to-end tests': status_of, condition,
# cgroup_file) -----------------------------------------------------------------------------


def pid_of(pod: dict[str, Any], container: str = "main") -> int:
    """The host PID of a container's first process, on either kind of node: the agent's
    container ID is that PID (``inplace://PID``); a kubelet's is containerd's."""
    if str(status_of(pod, container)["containerID"]).startswith("containerd://"):
        return container_pid(pod, container)
    return agent_pid_of(pod, container)


def running(bed: Bed, name: str) -> dict[str, Any] | None:
    pod = bed.get("pod", name)
    statuses = pod["status"].get("containerStatuses") or []
    if (
        pod["status"].get("phase") == "Running"
        and statuses
        and all("running" in cs["state"] for cs in statuses)
    ):
        return pod
    return None


def wait_running(bed: Bed, name: str, timeout: float = 90) -> dict[str, Any]:
    return dict(wait_until(lambda: running(bed, name), timeout=timeout, what=f"{name} Running"))


__all__ = [
    "CGROUP_FS",
    "Bed",
    "cgroup_file",
    "condition",
    "down",
    "pid_of",
    "start_bed",
    "status_of",
    "wait_running",
]
