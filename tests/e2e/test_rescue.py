"""The rescuer end to end: real `inplace up` with one small node, real processes, real kubectl.

On a node of 2 CPU and 2Gi: a shrinkable pod requesting most of it while using little, a
pod that does not allow shrinking and a shrinkable pod of higher priority. A pending pod
that cannot fit gets room within seconds: the shrinkable pod is shrunk in place (same
process, restartCount 0, its cgroups rewritten, never below its usage plus the margin) and
the pending pod runs. The other two are never touched. Deleting the pending pod lets the
donor grow back to its size.
"""

from __future__ import annotations

import json
import math
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from inplace.api.quantity import Quantity
from inplace.cli.paths import DataDir
from inplace.cli.up import cgroup_root_of, remove_empty_cgroup_root
from tests.conftest import Cluster, start_cluster
from tests.poll import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

CGROUP_FS = Path("/sys/fs/cgroup")
MI = 1024 * 1024


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data_dir = tmp_path_factory.mktemp("rescue-cluster") / "data"
    running = start_cluster(
        data_dir, None, "--node-cpu", "2", "--node-memory", "2Gi", "--no-dashboard"
    )
    try:
        wait_until(
            lambda: running.kubectl("get", "nodes", "-o", "name", check=False).stdout.strip(),
            timeout=60,
            what="the node",
        )
        running.kubectl(
            "apply",
            "-f",
            "-",
            input=json.dumps(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": "high"},
                    "value": 1000,
                }
            ),
        )
        yield running
    finally:
        running.kubectl(
            "delete", "pods", "--all", "--grace-period=1", "--wait=true", check=False, timeout=120
        )
        running.stop()
        remove_empty_cgroup_root(cgroup_root_of(DataDir(data_dir)))


def pod_manifest(
    name: str,
    cpu: str,
    memory: str,
    *,
    shrinkable: bool = False,
    priority: str | None = None,
    limit_memory: bool = False,
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if limit_memory:
        resources["limits"] = {"memory": memory}
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "command": ["sh", "-c", "echo pid $$$$; exec sleep 3600"],
                "resources": resources,
            }
        ],
    }
    if priority:
        spec["priorityClassName"] = priority
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if shrinkable:
        meta["annotations"] = {"inplace.dev/shrinkable": "true"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def get(cluster: Cluster, name: str) -> dict[str, Any] | None:
    result = cluster.kubectl("get", "pod", name, "-o", "json", check=False)
    if result.returncode != 0:
        return None
    pod: dict[str, Any] = json.loads(result.stdout)
    return pod


def running(cluster: Cluster, name: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        pod = get(cluster, name)
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
        if (
            pod
            and pod["status"].get("phase") == "Running"
            and statuses
            and "running" in (statuses[0].get("state") or {})
        ):
            return pod
        return None

    pod: dict[str, Any] = wait_until(check, timeout=90, what=f"pod {name} running")
    return pod


def pid_of(pod: dict[str, Any]) -> int:
    return int(pod["status"]["containerStatuses"][0]["containerID"].removeprefix("inplace://"))


def cgroup_file(pid: int, controller: str, name: str) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return (CGROUP_FS / controller / path.lstrip("/") / name).read_text().strip()
    raise KeyError(controller)


def requests(pod: dict[str, Any]) -> tuple[int, int]:
    values = pod["spec"]["containers"][0]["resources"]["requests"]
    return Quantity.parse(values["cpu"]).milli_value(), Quantity.parse(values["memory"]).value()


def applied(pod: dict[str, Any]) -> tuple[int, int] | None:
    status = pod["status"]["containerStatuses"][0]
    values = (status.get("resources") or {}).get("requests")
    if not values:
        return None
    return Quantity.parse(values["cpu"]).milli_value(), Quantity.parse(values["memory"]).value()


def rescue_events(cluster: Cluster, name: str) -> list[tuple[str, str]]:
    out = cluster.kubectl(
        "get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json"
    ).stdout
    return [
        (e["reason"], e["message"])
        for e in json.loads(out)["items"]
        if (e.get("source") or {}).get("component") == "rescue-controller"
    ]


def peak_usage(cluster: Cluster, name: str, seen: dict[str, tuple[int, int]]) -> None:
    """Remember the largest usage ``kubectl get podmetrics`` reported for ``name``."""
    result = cluster.kubectl(
        "get", "--raw", f"/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/{name}", check=False
    )
    if result.returncode != 0:
        return
    usage = json.loads(result.stdout)["containers"][0]["usage"]
    cpu, memory = (
        Quantity.parse(usage["cpu"]).milli_value(),
        Quantity.parse(usage["memory"]).value(),
    )
    old = seen.get(name, (0, 0))
    seen[name] = (max(old[0], cpu), max(old[1], memory))


def manager_metrics(cluster: Cluster) -> dict[str, float]:
    """The controller manager's ``/metrics`` (its address is in `inplace up`'s output)."""
    match = re.search(
        r"controller manager \(.*metrics on (http://[\d.:]+/metrics)\)", cluster.output.read_text()
    )
    assert match, cluster.output.read_text()
    with urllib.request.urlopen(match.group(1), timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if line.startswith("inplace_rescue_"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_a_pending_pod_gets_room_and_the_donor_grows_back(cluster: Cluster) -> None:
    apply = lambda m: cluster.kubectl("apply", "-f", "-", input=json.dumps(m))  # noqa: E731
    apply(pod_manifest("big", "1200m", "1Gi", shrinkable=True, limit_memory=True))
    apply(pod_manifest("plain", "300m", "256Mi"))
    apply(pod_manifest("vip", "300m", "256Mi", shrinkable=True, priority="high"))
    big = running(cluster, "big")
    untouched = {name: running(cluster, name) for name in ("plain", "vip")}
    pid = pid_of(big)
    started = psutil.Process(pid).create_time()
    seen: dict[str, tuple[int, int]] = {}
    wait_until(
        lambda: peak_usage(cluster, "big", seen) or "big" in seen,
        timeout=60,
        what="usage of big in metrics.k8s.io",
    )
    node = json.loads(cluster.kubectl("get", "node", "node-1", "-o", "json").stdout)
    free_cpu = Quantity.parse(node["status"]["allocatable"]["cpu"]).milli_value() - 1800
    free_memory = Quantity.parse(node["status"]["allocatable"]["memory"]).value() - 1536 * MI
    assert 0 <= free_cpu < 800 and 0 <= free_memory < 768 * MI

    # Neither CPU nor memory is free enough: the scheduler says so, then the rescuer acts.
    apply(pod_manifest("new", "800m", "768Mi"))
    placed = running(cluster, "new")
    assert placed["spec"]["nodeName"] == "node-1"

    big = wait_until(
        lambda: (p := get(cluster, "big")) and applied(p) == requests(p) and p,
        timeout=30,
        what="big's shrink applied",
    )
    peak_usage(cluster, "big", seen)
    cpu, memory = requests(big)
    assert cpu <= 1200 - (800 - free_cpu) and memory <= 1024 * MI - (768 * MI - free_memory)
    # Never below its usage plus the margin (nor the 10m / 16Mi minimum).
    assert cpu >= max(10, math.ceil(seen["big"][0] * 1.15))
    assert memory >= max(16 * MI, math.ceil(seen["big"][1] * 1.15))
    status = big["status"]["containerStatuses"][0]
    assert status["restartCount"] == 0 and pid_of(big) == pid
    assert psutil.Process(pid).create_time() == started  # the same process, resized in place
    limit = big["spec"]["containers"][0]["resources"]["limits"]["memory"]
    assert Quantity.parse(limit).value() == memory  # a limit equal to the request moves with it
    assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(memory)
    assert cgroup_file(pid, "cpu", "cpu.shares") == str(cpu * 1024 // 1000)
    original = json.loads(big["metadata"]["annotations"]["inplace.dev/original-resources"])
    assert original == {
        "main": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "1200m", "memory": "1Gi"}}
    }
    assert any(
        reason == "ShrunkForPendingPod" and "shrunk to fit pending pod default/new" in message
        for reason, message in rescue_events(cluster, "big")
    )
    assert ("MadeRoom", "made room on node-1 by shrinking big") in rescue_events(cluster, "new")

    # The pod that does not allow shrinking and the one of higher priority: untouched.
    for name, before in untouched.items():
        after = get(cluster, name)
        assert after is not None
        assert (
            after["spec"]["containers"][0]["resources"]
            == (before["spec"]["containers"][0]["resources"])
        )
        assert "inplace.dev/original-resources" not in (after["metadata"].get("annotations") or {})
        assert rescue_events(cluster, name) == []

    # Pressure gone: the donor grows back to its size, in place.
    cluster.kubectl("delete", "pod", "new", "--grace-period=1", "--wait=true")
    big = wait_until(
        lambda: (
            (p := get(cluster, "big"))
            and requests(p) == (1200, 1024 * MI)
            and applied(p) == (1200, 1024 * MI)
            and "inplace.dev/original-resources" not in (p["metadata"].get("annotations") or {})
            and p
        ),
        timeout=60,
        what="big grown back and its annotation gone",
    )
    assert big["spec"]["containers"][0]["resources"]["limits"] == {"memory": "1Gi"}
    assert big["status"]["containerStatuses"][0]["restartCount"] == 0 and pid_of(big) == pid
    assert psutil.Process(pid).create_time() == started
    assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(1024 * MI)
    assert cgroup_file(pid, "cpu", "cpu.shares") == str(1200 * 1024 // 1000)
    assert any(reason == "GrownBack" for reason, _ in rescue_events(cluster, "big"))
    assert "pid 2" in cluster.kubectl("logs", "big").stdout  # its own PID namespace: PID 2

    metrics = manager_metrics(cluster)
    assert metrics["inplace_rescue_rescues_total"] == 1
    assert metrics['inplace_rescue_outcomes_total{outcome="placed"}'] == 1
    assert metrics['inplace_rescue_resizes_total{direction="shrink",result="ok"}'] == 1
    assert metrics['inplace_rescue_resizes_total{direction="grow",result="ok"}'] >= 1
