"""The real node lifecycle controller judges an inplace node as it judges a kubelet: an agent
that stops renewing its Lease makes its Node NotReady and tainted, and the taint manager evicts
a pod that tolerates the taint only briefly. Its own test bed of two nodes, one of whose agents
is killed (with every node of a zone down the controller assumes a partition and evicts
nothing, so one node alone would show no eviction)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.poll import wait_until

from .conftest import Bed, down, start_bed, wait_running


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    directory: Path = tmp_path_factory.mktemp("lifecycle")
    plane = start_bed(directory, nodes=2, node_cpu="1", node_memory="1Gi")
    try:
        yield Bed(plane)
    finally:
        leftovers = down(directory)
    assert not leftovers, f"the test bed left behind: {leftovers}"


def test_stopped_agent_makes_its_node_not_ready_and_its_pods_evicted(pair: Bed) -> None:
    pair.apply(
        """\
apiVersion: v1
kind: Pod
metadata: {name: brief}
spec:
  nodeSelector: {kubernetes.io/hostname: node-2}
  terminationGracePeriodSeconds: 2
  tolerations:
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute,
     tolerationSeconds: 2}
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute,
     tolerationSeconds: 2}
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "exec sleep 3600"]
    resources: {limits: {cpu: 100m, memory: 32Mi}}
"""
    )
    wait_running(pair, "brief")
    os.kill(pair.plane.pids["node-2"], signal.SIGKILL)

    def node_state() -> tuple[str, list[str]]:
        node = pair.get("node", "node-2", "")
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        return ready["status"], [t["key"] for t in node["spec"].get("taints") or []]

    wait_until(lambda: node_state()[0] == "Unknown", timeout=90, interval=1, what="node-2 NotReady")
    wait_until(
        lambda: "node.kubernetes.io/unreachable" in node_state()[1],
        timeout=30,
        interval=1,
        what="node-2 tainted unreachable",
    )

    def evicted() -> bool:
        out = pair.kubectl("get", "pod", "brief", "-o", "json", check=False)
        return out.returncode != 0 or "deletionTimestamp" in json.loads(out.stdout)["metadata"]

    wait_until(evicted, timeout=60, interval=1, what="the pod evicted by the taint manager")
