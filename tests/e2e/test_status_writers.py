"""Status writers never erase each other's decisions: a real `inplace up` on one 2-CPU node.

The scheduler's arbiter and the node agent both write a pod's ``status.conditions``. These
tests watch every revision of the pod, so a condition that appears and is gone one revision
later is caught, not just the final state:

* a resize approved at generation 2, then one to more memory than the node has at
  generation 3, ends with ``PodResizePending`` ``Infeasible`` ``observedGeneration: 3``, and
  keeps it;
* a first resize of a running pod to 100 CPUs shows ``PodResizePending`` ``Infeasible`` and
  keeps it, the node does not count the 100 CPUs (``kubectl describe node``), and a new
  100m pod is scheduled onto the node afterwards.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inplace.cli.paths import DataDir
from inplace.cli.up import cgroup_root_of, remove_empty_cgroup_root
from tests.conftest import Cluster, start_cluster
from tests.poll import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

NODE = "node-1"


@pytest.fixture(scope="module")
def cluster2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data_dir = tmp_path_factory.mktemp("status-writers") / "data"
    cluster = start_cluster(data_dir, None, "--node-cpu", "2", "--node-memory", "2Gi")
    try:
        wait_until(
            lambda: cluster.kubectl("get", "node", NODE, check=False).returncode == 0,
            what="the node registered",
        )
        yield cluster
    finally:
        cluster.stop()
        remove_empty_cgroup_root(cgroup_root_of(DataDir(data_dir)))


class PodRecorder:
    """Every revision of one pod, from ``kubectl get --watch`` (which lists it, then
    follows every change); killed on exit, so it can never hang the test."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.process = subprocess.Popen(
            ["kubectl", "get", "pod", name, "--watch", "-o", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=cluster.env(),
            text=True,
        )
        self.revisions: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._listed = threading.Event()

    def _read(self) -> None:
        assert self.process.stdout is not None
        decoder = json.JSONDecoder()
        buffer = ""
        for line in self.process.stdout:
            buffer += line
            while buffer.strip():
                try:
                    obj, end = decoder.raw_decode(buffer.lstrip())
                except ValueError:
                    break  # an object not complete yet
                self.revisions.append(obj)
                self._listed.set()
                buffer = buffer.lstrip()[end:]

    def __enter__(self) -> PodRecorder:
        self._thread.start()
        wait_until(self._listed.is_set, timeout=30, what="the watch to list the pod")
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.kill()
        self.process.wait()
        self._thread.join(10)


def manifest(name: str, cpu: str, memory: str = "64Mi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "3600"],
                    "resources": {
                        "requests": {"cpu": cpu, "memory": memory},
                        "limits": {"memory": memory},
                    },
                }
            ],
        },
    }


def get(cluster: Cluster, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = json.loads(cluster.kubectl("get", "pod", name, "-o", "json").stdout)
    return pod


def condition(pod: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in pod.get("status", {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def running(cluster: Cluster, name: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        pod = get(cluster, name)
        statuses = pod["status"].get("containerStatuses") or []
        if pod["status"].get("phase") == "Running" and statuses and statuses[0].get("ready"):
            return pod
        return None

    pod: dict[str, Any] = wait_until(check, what=f"{name} running")
    return pod


def resize(cluster: Cluster, name: str, resources: dict[str, Any]) -> None:
    patch = {"spec": {"containers": [{"name": "main", "resources": resources}]}}
    cluster.kubectl("patch", "pod", name, "--subresource", "resize", "-p", json.dumps(patch))


def settled_infeasible(cluster: Cluster, name: str, generation: int) -> dict[str, Any]:
    """The pod once it says Infeasible for ``generation`` and the node agent has acted on
    that generation (``status.observedGeneration``)."""

    def check() -> dict[str, Any] | None:
        pod = get(cluster, name)
        pending = condition(pod, "PodResizePending") or {}
        if (
            pending.get("reason") == "Infeasible"
            and pending.get("observedGeneration") == generation
            and pod["status"].get("observedGeneration") == generation
        ):
            return pod
        return None

    pod: dict[str, Any] = wait_until(check, timeout=30, what=f"Infeasible at gen {generation}")
    return pod


def assert_kept(revisions: list[dict[str, Any]], generation: int) -> None:
    """From the first revision that says Infeasible for ``generation``, every later one does."""
    seen = [
        (condition(p, "PodResizePending") or {}).get("observedGeneration") == generation
        for p in revisions
    ]
    assert True in seen, "no revision showed the Infeasible condition"
    first = seen.index(True)
    lost = [
        p["metadata"]["resourceVersion"]
        for p, ok in list(zip(revisions, seen, strict=True))[first:]
        if not ok
    ]
    assert lost == [], f"PodResizePending gone in revisions {lost}"


def delete(cluster: Cluster, *names: str) -> None:
    cluster.kubectl(
        "delete", "pod", *names, "--grace-period=1", "--wait=true", "--ignore-not-found"
    )


def test_a_second_resize_larger_than_the_node_stays_infeasible(cluster2: Cluster) -> None:
    cluster2.kubectl("apply", "-f", "-", input=json.dumps(manifest("twice", "200m")))
    try:
        running(cluster2, "twice")
        resize(cluster2, "twice", {"requests": {"cpu": "300m"}})

        def approved_and_applied() -> dict[str, Any] | None:
            pod = get(cluster2, "twice")
            scheduled = condition(pod, "PodResizeScheduled") or {}
            allocated = pod["status"]["containerStatuses"][0].get("allocatedResources") or {}
            if scheduled.get("observedGeneration") == 2 and allocated.get("cpu") == "300m":
                return pod
            return None

        wait_until(approved_and_applied, timeout=30, what="generation 2 applied")
        with PodRecorder(cluster2, "twice") as recorder:
            resize(cluster2, "twice", {"requests": {"memory": "3Gi"}, "limits": {"memory": "3Gi"}})
            pod = settled_infeasible(cluster2, "twice", 3)
        assert pod["metadata"]["generation"] == 3
        pending = condition(pod, "PodResizePending")
        assert pending is not None
        assert "Node didn't have enough capacity: memory" in pending["message"]
        assert_kept(recorder.revisions, 3)
        allocated = pod["status"]["containerStatuses"][0]["allocatedResources"]
        assert allocated == {"cpu": "300m", "memory": "64Mi"}
    finally:
        delete(cluster2, "twice")


def _allocated_cpu_requests(cluster: Cluster) -> str:
    """The cpu requests column of ``kubectl describe node``'s "Allocated resources"."""
    text = cluster.kubectl("describe", "node", NODE).stdout
    section = text.split("Allocated resources:", 1)[1]
    for line in section.splitlines():
        words = line.split()
        if words and words[0] == "cpu":
            return words[1]
    raise AssertionError(f"no cpu line in:\n{section}")


def test_a_first_resize_to_100_cpus_stays_infeasible_and_takes_no_room(
    cluster2: Cluster,
) -> None:
    cluster2.kubectl("apply", "-f", "-", input=json.dumps(manifest("greedy", "200m")))
    try:
        running(cluster2, "greedy")
        with PodRecorder(cluster2, "greedy") as recorder:
            resize(cluster2, "greedy", {"requests": {"cpu": "100"}})
            settled_infeasible(cluster2, "greedy", 2)
        assert_kept(recorder.revisions, 2)
        assert _allocated_cpu_requests(cluster2) == "200m"
        cluster2.kubectl("apply", "-f", "-", input=json.dumps(manifest("small", "100m")))
        small = running(cluster2, "small")
        assert small["spec"]["nodeName"] == NODE
        assert condition(get(cluster2, "greedy"), "PodResizePending") is not None
    finally:
        delete(cluster2, "greedy", "small")


def test_log_files_have_no_traceback(cluster2: Cluster) -> None:
    logs = Path(cluster2.data_dir) / "logs" / "components"
    for log in logs.glob("*.log"):
        assert "Traceback" not in log.read_text(), log
