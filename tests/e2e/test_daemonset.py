"""DaemonSets end to end: real `inplace up --nodes 3`, real kubectl, real processes.

One cluster for the module:

* a DaemonSet converges to one running pod on every node, each bound by the default
  scheduler to the node its affinity names;
* a node tainted NoSchedule (`kubectl taint`) gets no pod of a DaemonSet that does not
  tolerate the taint, and one of a DaemonSet that does;
* `kubectl set resources daemonset/x` (QoS class kept): the same pods, the same PIDs, no
  restart, the new size in the spec, the status and the cgroup;
* an image change rolls out one pod at a time (maxUnavailable 1, never more unavailable);
  `kubectl rollout status | history | undo daemonset/x`;
* deleting the DaemonSet deletes its pods.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from inplace.cli.paths import DataDir
from inplace.cli.up import cgroup_root_of, remove_empty_cgroup_root
from tests.conftest import Cluster, reap_cgroups, start_cluster
from tests.e2e.test_workloads import (
    Workloads,
    actual,
    cgroup_memory_limit,
    container,
    pid_of,
    restarts,
)
from tests.poll import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def d(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workloads]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("daemonsets") / "data"
    cluster: Cluster = start_cluster(data_dir, None, "--nodes", "3")
    try:

        def nodes_ready() -> bool:
            out = cluster.kubectl("get", "nodes", "--no-headers", check=False).stdout
            return out.count(" Ready ") >= 3

        wait_until(nodes_ready, timeout=120, what="three nodes Ready")
        yield Workloads(cluster, tmp_path_factory.mktemp("unused"))
    finally:
        cluster.kubectl("delete", "daemonsets", "--all", "--wait=false", check=False, timeout=60)
        cluster.stop()
        reap_cgroups(data_dir)
        remove_empty_cgroup_root(cgroup_root_of(DataDir(data_dir)))


def daemon_set(
    name: str,
    *,
    tolerations: list[dict[str, Any]] | None = None,
    max_unavailable: int = 1,
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 1,
        "containers": [container("echo pid $$$$; exec sleep 3600")],
    }
    if tolerations:
        pod_spec["tolerations"] = tolerations
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": max_unavailable},
            },
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }


def node_names(d: Workloads) -> list[str]:
    out = d.kubectl("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}").stdout
    return sorted(out.split())


def one_running_per_node(d: Workloads, app: str, nodes: list[str]) -> dict[str, dict[str, Any]]:
    """``app``'s pods once exactly one runs (its process started) on each of ``nodes``."""

    def check() -> dict[str, dict[str, Any]] | None:
        pods = d.pods(f"app={app}")
        running = {
            p["spec"].get("nodeName"): p
            for p in pods
            if p["status"].get("phase") == "Running"
            and (p["status"].get("containerStatuses") or [{}])[0].get("containerID")
        }
        if len(pods) == len(nodes) and sorted(running) == sorted(nodes):
            return running
        return None

    found: dict[str, dict[str, Any]] = wait_until(
        check, timeout=120, what=f"one running {app} pod on each of {nodes}"
    )
    return found


def desired_and_ready(d: Workloads, name: str) -> tuple[int, int]:
    status = (d.get("daemonset", name) or {}).get("status") or {}
    return int(status.get("desiredNumberScheduled") or 0), int(status.get("numberReady") or 0)


def rollout_status(d: Workloads, name: str) -> str:
    return d.kubectl("rollout", "status", f"daemonset/{name}", "--timeout=150s", timeout=180).stdout


class UnavailableWatch:
    """Every ``status.numberUnavailable`` a DaemonSet goes through (`kubectl get -w`: each
    status write is an event)."""

    def __init__(self, d: Workloads, name: str) -> None:
        self.seen: list[int] = []
        self._proc = subprocess.Popen(
            [
                "kubectl",
                "get",
                "daemonset",
                name,
                "-w",
                "-o",
                'jsonpath={.status.numberUnavailable}{"\\n"}',
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=d.cluster.env(),
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        try:  # ready once its first listing arrived: nothing that happens next is missed
            wait_until(lambda: self.seen, timeout=30, what="the watch's listing")
        except BaseException:
            self.close()
            raise

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self.seen.append(int(line.strip() or 0))

    def close(self) -> list[int]:
        self._proc.terminate()
        self._proc.wait(10)
        self._thread.join(10)
        return list(self.seen)


def test_one_pod_per_node_and_a_tainted_node_only_if_tolerated(d: Workloads) -> None:
    nodes = node_names(d)
    assert len(nodes) == 3
    tainted = nodes[-1]
    d.kubectl("taint", "nodes", tainted, "dedicated=infra:NoSchedule")
    try:
        d.apply(
            daemon_set("plain"),
            daemon_set(
                "tolerant",
                tolerations=[{"key": "dedicated", "operator": "Equal", "value": "infra"}],
            ),
        )
        rollout_status(d, "plain")
        rollout_status(d, "tolerant")
        plain = one_running_per_node(d, "plain", nodes[:-1])
        tolerant = one_running_per_node(d, "tolerant", nodes)
        for node, pod in {**plain, **tolerant}.items():
            terms = pod["spec"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]["nodeSelectorTerms"]
            assert terms == [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]
        assert desired_and_ready(d, "plain") == (2, 2)
        assert desired_and_ready(d, "tolerant") == (3, 3)
        wide = d.kubectl("get", "daemonset", "plain", "-o", "wide").stdout
        assert wide.split("\n")[0].split()[:6] == [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
        ], wide
    finally:
        d.kubectl("taint", "nodes", tainted, "dedicated=infra:NoSchedule-", check=False)
    # Untainted, the node gets its pod.
    one_running_per_node(d, "plain", nodes)
    d.kubectl("delete", "daemonset", "plain", "tolerant")
    wait_until(
        lambda: not d.items("pods", "app in (plain,tolerant)"),
        timeout=90,
        what="the DaemonSets' pods deleted with them",
    )


def test_set_resources_resizes_in_place_then_an_image_rolls_out(d: Workloads) -> None:
    nodes = node_names(d)
    d.apply(daemon_set("agent"))
    rollout_status(d, "agent")
    before = one_running_per_node(d, "agent", nodes)
    pids = {p["metadata"]["uid"]: pid_of(p) for p in before.values()}

    d.kubectl(
        "set",
        "resources",
        "daemonset/agent",
        "--requests=cpu=200m,memory=48Mi",
        "--limits=memory=96Mi",
    )
    want = {"requests": {"cpu": "200m", "memory": "48Mi"}, "limits": {"memory": "96Mi"}}

    def resized() -> list[dict[str, Any]] | None:
        pods = d.pods("app=agent")
        done = [p for p in pods if p["status"].get("containerStatuses") and actual(p) == want]
        return pods if len(done) == len(pods) == 3 else None

    after = wait_until(resized, timeout=120, what="every agent pod resized")
    assert {p["metadata"]["uid"]: pid_of(p) for p in after} == pids, "a pod was replaced"
    for pod in after:
        assert restarts(pod) == 0
        assert pod["spec"]["containers"][0]["resources"] == want
        assert cgroup_memory_limit(pid_of(pod)) == 96 * 2**20
    rollout_status(d, "agent")
    history = d.kubectl("rollout", "history", "daemonset/agent").stdout
    assert [line.split()[0] for line in history.strip().splitlines()[2:]] == ["1", "2"], history

    watch = UnavailableWatch(d, "agent")
    try:
        d.kubectl("set", "image", "daemonset/agent", "main=busybox:1.36")
        out = rollout_status(d, "agent")
        assert "successfully rolled out" in out, out
    finally:
        seen = watch.close()
    assert seen and max(seen) <= 1, f"more than maxUnavailable pods were down: {seen}"
    rolled = one_running_per_node(d, "agent", nodes)
    assert not {p["metadata"]["uid"] for p in rolled.values()} & set(pids)
    assert all(p["spec"]["containers"][0]["image"] == "busybox:1.36" for p in rolled.values())
    assert all(p["spec"]["containers"][0]["resources"] == want for p in rolled.values())

    d.kubectl("rollout", "undo", "daemonset/agent")
    rollout_status(d, "agent")
    undone = one_running_per_node(d, "agent", nodes)
    assert all(p["spec"]["containers"][0]["image"] == "busybox" for p in undone.values())
    history = d.kubectl("rollout", "history", "daemonset/agent").stdout
    assert [line.split()[0] for line in history.strip().splitlines()[2:]] == ["1", "3", "4"], (
        history
    )
    d.kubectl("delete", "daemonset", "agent", "--wait=true", timeout=90)
    wait_until(lambda: not d.items("pods", "app=agent"), timeout=90, what="agent pods deleted")
