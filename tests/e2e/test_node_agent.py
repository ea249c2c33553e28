"""End to end: `inplace up --nodes 1`, real kubectl, real processes in real cgroups.

A small node (1 CPU, 1Gi). Every test names its own pods and deletes them; the module fixture
deletes whatever is left, stops the cluster, then SIGKILLs any process still in the cluster's
cgroup subtree and removes it, so nothing outlives the run even when a test fails.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from inplace.api.quantity import Quantity
from inplace.node.registration import ephemeral_storage
from tests.conftest import Cluster, start_cluster
from tests.poll import wait_until

NODE = "node-1"
CGROUP_FS = Path("/sys/fs/cgroup")

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (CGROUP_FS / "memory").is_dir(),
    reason="needs root and cgroup v1 (real limits are checked)",
)


def cgroup_root_of(data_dir: Path) -> str:
    """The cgroup subtree `inplace up` gives its node agents (see cli/up.py)."""
    return "inplace/" + hashlib.sha1(str(data_dir.resolve()).encode()).hexdigest()[:10]


def _kill_cgroup_tree(root: str) -> None:
    memory = CGROUP_FS / "memory" / root
    for _ in range(100):
        pids: list[int] = []
        if memory.is_dir():
            for dirpath, _, _ in os.walk(memory):
                with contextlib.suppress(OSError):
                    pids += [int(x) for x in Path(dirpath, "cgroup.procs").read_text().split()]
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    for controller in ("memory", "cpu", "cpuacct", "freezer", "pids"):
        base = CGROUP_FS / controller / root
        if not base.is_dir():
            continue
        for dirpath, _, _ in sorted(os.walk(base), key=lambda x: -len(x[0])):
            with contextlib.suppress(OSError):
                os.rmdir(dirpath)


@pytest.fixture(scope="module")
def node_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path_factory.mktemp("nodecluster") / "data"
    cluster = start_cluster(
        data_dir, None, "--nodes", "1", "--node-cpu", "1", "--node-memory", "1Gi"
    )
    try:
        wait_until(lambda: node_ready(cluster), what="node-1 Ready")
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            cluster.kubectl(
                "delete", "pods", "--all", "--wait=true", "--timeout=30s", check=False, timeout=40
            )
        cluster.stop()
        _kill_cgroup_tree(cgroup_root_of(data_dir))


# -- helpers ---------------------------------------------------------------------------------


def node_ready(cluster: Cluster) -> bool:
    out = cluster.kubectl("get", "node", NODE, "-o", "json", check=False)
    if out.returncode != 0:
        return False
    conds = json.loads(out.stdout)["status"].get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def get_pod(cluster: Cluster, name: str) -> dict[str, Any]:
    return dict(json.loads(cluster.kubectl("get", "pod", name, "-o", "json").stdout))


def status_of(pod: dict[str, Any], container: str) -> dict[str, Any]:
    for cs in pod["status"].get("containerStatuses") or ():
        if cs["name"] == container:
            return dict(cs)
    raise KeyError(container)


def pid_of(pod: dict[str, Any], container: str = "main") -> int:
    return int(status_of(pod, container)["containerID"].removeprefix("inplace://"))


def condition(pod: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in pod["status"].get("conditions") or ():
        if cond["type"] == ctype:
            return dict(cond)
    return None


def running(cluster: Cluster, name: str) -> dict[str, Any] | None:
    pod = get_pod(cluster, name)
    statuses = pod["status"].get("containerStatuses") or []
    if (
        pod["status"].get("phase") == "Running"
        and statuses
        and all("running" in cs["state"] for cs in statuses)
    ):
        return pod
    return None


def apply(cluster: Cluster, manifest: str) -> None:
    cluster.kubectl("apply", "-f", "-", input=manifest)


def delete(cluster: Cluster, name: str) -> None:
    for _ in range(20):  # the API server answers 409 when a delete races a status write
        out = cluster.kubectl(
            "delete", "pod", name, "--ignore-not-found", "--wait=true", check=False, timeout=60
        )
        if out.returncode == 0:
            return
        if "Conflict" not in out.stderr and "modified" not in out.stderr:
            raise AssertionError(f"kubectl delete pod {name} failed:\n{out.stderr}")
        time.sleep(0.1)
    raise AssertionError(f"kubectl delete pod {name} kept conflicting")


def cgroup_file(pid: int, controller: str, name: str) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return (CGROUP_FS / controller / path.lstrip("/") / name).read_text().strip()
    raise KeyError(controller)


def events_of(cluster: Cluster, name: str) -> list[str]:
    out = cluster.kubectl(
        "get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json"
    )
    return [e["reason"] for e in json.loads(out.stdout)["items"]]


def resize(cluster: Cluster, name: str, containers: list[dict[str, Any]]) -> None:
    patch = json.dumps({"spec": {"containers": containers}})
    cluster.kubectl("patch", "pod", name, "--subresource", "resize", "-p", patch)


def resize_settled(cluster: Cluster, name: str, container: str, want: dict[str, Any]):
    """The pod once the agent applied ``want`` (requests/limits) and cleared its conditions."""

    def check() -> dict[str, Any] | None:
        pod = get_pod(cluster, name)
        cs = status_of(pod, container)
        if condition(pod, "PodResizeInProgress") or condition(pod, "PodResizePending"):
            return None
        if cs.get("resources") != want or cs.get("allocatedResources") != want["requests"]:
            return None
        return pod

    return wait_until(check, what=f"resize of {name}/{container} to {want}")


SLEEPER = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo pid $$$$; exec sleep 3600"]
    resources:
      requests: {{cpu: 100m, memory: 64Mi}}
      limits: {{cpu: 200m, memory: 128Mi}}
"""

HOG = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: python
    command:
    - python3
    - -c
    - |
      import os, time
      b = bytearray(100 * 2**20)
      for i in range(0, len(b), 4096):
          b[i] = 1
      print("pid", os.getpid(), flush=True)
      time.sleep(3600)
    resources:
      requests: {{cpu: 100m, memory: 200Mi}}
      limits: {{cpu: 200m, memory: 200Mi}}
  - name: side
    image: busybox
    command: ["sleep", "3600"]
    resizePolicy:
    - {{resourceName: cpu, restartPolicy: NotRequired}}
    - {{resourceName: memory, restartPolicy: RestartContainer}}
    resources:
      requests: {{cpu: 100m, memory: 32Mi}}
      limits: {{cpu: 100m, memory: 32Mi}}
"""


# -- tests -----------------------------------------------------------------------------------


def test_node_registered_with_lease(node_cluster: Cluster) -> None:
    node = json.loads(node_cluster.kubectl("get", "node", NODE, "-o", "json").stdout)
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == NODE
    assert labels["kubernetes.io/os"] == "linux"
    status = node["status"]
    assert status["allocatable"]["cpu"] == "1"
    assert status["allocatable"]["memory"] == "1Gi"  # reported 1048576Ki, stored canonical
    assert status["nodeInfo"]["kubeletVersion"] == "v1.33.0-inplace"
    assert status["nodeInfo"]["containerRuntimeVersion"] == "inplace://0.1.0"
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
    assert {"type": "InternalIP", "address": "127.0.0.1"} in status["addresses"]
    assert node["metadata"]["annotations"]["inplace.dev/limits-enforced"] == "true"

    # the agent creates its Lease once the Node is registered, as the kubelet does
    def lease() -> dict[str, Any] | None:
        got = node_cluster.kubectl(
            "get", "lease", NODE, "-n", "kube-node-lease", "-o", "json", check=False
        )
        return json.loads(got.stdout) if got.returncode == 0 else None

    found = wait_until(lease, what="the node's Lease")
    assert found["spec"]["holderIdentity"] == NODE


def test_pod_runs_logs_and_follow(node_cluster: Cluster) -> None:
    apply(node_cluster, SLEEPER.format(name="logs"))
    try:
        pod = wait_until(lambda: running(node_cluster, "logs"), what="logs Running")
        pid = pid_of(pod, "main")
        cs = status_of(pod, "main")
        assert cs["restartCount"] == 0 and cs["ready"] and cs["started"]
        assert pod["status"]["podIP"] == "127.0.0.1"
        assert pod["status"]["qosClass"] == "Burstable"
        assert {c["type"] for c in pod["status"]["conditions"]} >= {
            "PodScheduled",
            "Initialized",
            "ContainersReady",
            "Ready",
        }
        assert psutil.Process(pid).name() == "sleep"
        wait_until(  # PID 2 in the container's own PID namespace (its init is 1)
            lambda: "pid 2" in node_cluster.kubectl("logs", "logs").stdout, what="log line"
        )
        follow = subprocess.Popen(
            ["kubectl", "logs", "-f", "logs"],
            env=node_cluster.env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert follow.stdout is not None
            assert follow.stdout.readline().strip() == "pid 2"
        finally:
            follow.terminate()
            follow.wait(10)
    finally:
        delete(node_cluster, "logs")
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_resize_up_and_down_in_place(node_cluster: Cluster) -> None:
    apply(node_cluster, SLEEPER.format(name="resize"))
    try:
        pod = wait_until(lambda: running(node_cluster, "resize"), what="resize Running")
        pid = pid_of(pod, "main")
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(128 * 2**20)
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "20000"

        up = {
            "requests": {"cpu": "300m", "memory": "100Mi"},
            "limits": {"cpu": "500m", "memory": "200Mi"},
        }
        resize(node_cluster, "resize", [{"name": "main", "resources": up}])
        pod = resize_settled(node_cluster, "resize", "main", up)
        assert pid_of(pod, "main") == pid
        assert status_of(pod, "main")["restartCount"] == 0
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(200 * 2**20)
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "50000"
        assert cgroup_file(pid, "cpu", "cpu.shares") == str(300 * 1024 // 1000)

        # A limit above the node's allocatable CPU (1) is upstream's right too: the node's
        # cgroup is sized by shares, so its quota does not cap the pod's (found by the chaos
        # storm: v1 quotas are hierarchical and the write failed with EINVAL).
        burst = {
            "requests": {"cpu": "300m", "memory": "100Mi"},
            "limits": {"cpu": "2", "memory": "200Mi"},
        }
        resize(node_cluster, "resize", [{"name": "main", "resources": burst}])
        pod = resize_settled(node_cluster, "resize", "main", burst)
        assert pid_of(pod, "main") == pid
        assert status_of(pod, "main")["restartCount"] == 0
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "200000"

        down = {
            "requests": {"cpu": "50m", "memory": "32Mi"},
            "limits": {"cpu": "100m", "memory": "64Mi"},
        }
        resize(node_cluster, "resize", [{"name": "main", "resources": down}])
        pod = resize_settled(node_cluster, "resize", "main", down)
        assert pid_of(pod, "main") == pid
        assert status_of(pod, "main")["restartCount"] == 0
        assert psutil.Process(pid).is_running()
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(64 * 2**20)
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "10000"
        assert cgroup_file(pid, "cpu", "cpu.shares") == str(50 * 1024 // 1000)
        wait_until(
            lambda: events_of(node_cluster, "resize").count("ResizeCompleted") >= 2,
            what="ResizeCompleted events",
        )
        assert "ResizeStarted" in events_of(node_cluster, "resize")
    finally:
        delete(node_cluster, "resize")


def test_memory_below_usage_is_an_error_and_restart_policy(node_cluster: Cluster) -> None:
    apply(node_cluster, HOG.format(name="hog"))
    try:
        pod = wait_until(lambda: running(node_cluster, "hog"), what="hog Running")
        wait_until(
            lambda: "pid" in node_cluster.kubectl("logs", "hog", "-c", "main").stdout,
            what="hog allocated its memory",
        )
        main_pid, side_pid = pid_of(pod, "main"), pid_of(pod, "side")

        resize(
            node_cluster,
            "hog",
            [
                {
                    "name": "main",
                    "resources": {"requests": {"memory": "50Mi"}, "limits": {"memory": "50Mi"}},
                }
            ],
        )

        def errored() -> dict[str, Any] | None:
            pod = get_pod(node_cluster, "hog")
            cond = condition(pod, "PodResizeInProgress")
            return pod if cond and cond.get("reason") == "Error" else None

        pod = wait_until(errored, what="PodResizeInProgress reason Error")
        # refused before any cgroup is written, in the kubelet's words
        # (kuberuntime_manager.go validateMemoryResizeAction): the pod's new limit is
        # 50Mi + 32Mi, the container's 50Mi, both below the pod's usage
        message = (condition(pod, "PodResizeInProgress") or {})["message"]
        assert message.startswith(
            "cannot decrease memory limits: [attempting to set pod memory limit (85983232) "
            "below current usage ("
        ), message
        assert 'attempting to set container "main" memory limit (52428800) below' in message
        assert psutil.Process(main_pid).is_running()
        assert pid_of(pod, "main") == main_pid
        assert status_of(pod, "main")["restartCount"] == 0
        assert cgroup_file(main_pid, "memory", "memory.limit_in_bytes") == str(200 * 2**20)
        wait_until(lambda: "ResizeError" in events_of(node_cluster, "hog"), what="ResizeError")

        # Back to what it uses, plus a memory change on the RestartContainer sidecar.
        main_want = {
            "requests": {"cpu": "100m", "memory": "200Mi"},
            "limits": {"cpu": "200m", "memory": "200Mi"},
        }
        side_want = {
            "requests": {"cpu": "100m", "memory": "48Mi"},
            "limits": {"cpu": "100m", "memory": "48Mi"},
        }
        resize(
            node_cluster,
            "hog",
            [
                {"name": "main", "resources": main_want},
                {"name": "side", "resources": side_want},
            ],
        )
        pod = resize_settled(node_cluster, "hog", "side", side_want)
        pod = resize_settled(node_cluster, "hog", "main", main_want)
        pod = wait_until(lambda: running(node_cluster, "hog"), what="hog Running again")
        assert pid_of(pod, "main") == main_pid
        assert status_of(pod, "main")["restartCount"] == 0
        assert status_of(pod, "side")["restartCount"] == 1
        new_side = pid_of(pod, "side")
        assert new_side != side_pid
        assert cgroup_file(new_side, "memory", "memory.limit_in_bytes") == str(48 * 2**20)
        out = node_cluster.kubectl(
            "get", "events", "--field-selector", "involvedObject.name=hog,reason=Killing",
            "-o", "json",
        ).stdout  # fmt: skip
        killing = [e["message"] for e in json.loads(out)["items"]]
        assert killing == ["Container side resize requires restart"]
    finally:
        delete(node_cluster, "hog")


def test_agent_sigkill_leaves_workloads_running(node_cluster: Cluster) -> None:
    pid_file = node_cluster.data_dir / "nodes" / NODE / "agent.pid"
    apply(node_cluster, SLEEPER.format(name="survivor"))
    doomed = SLEEPER.format(name="doomed").replace(
        "terminationGracePeriodSeconds: 5",
        "terminationGracePeriodSeconds: 5\n  restartPolicy: Never",
    )
    apply(node_cluster, doomed)
    try:
        pod = wait_until(lambda: running(node_cluster, "survivor"), what="survivor Running")
        pid = pid_of(pod)
        doomed_pid = pid_of(wait_until(lambda: running(node_cluster, "doomed"), what="doomed"))
        agent = int(pid_file.read_text())
        # Freeze the agent so it cannot see the workload exit, end the workload, then SIGKILL
        # the agent: the next agent must learn the exit code from what the shim recorded.
        os.kill(agent, signal.SIGSTOP)
        try:
            os.kill(doomed_pid, signal.SIGTERM)
            wait_until(lambda: not alive(doomed_pid), what="doomed workload exited")
        finally:
            os.kill(agent, signal.SIGKILL)

        def restarted() -> int | None:
            with contextlib.suppress(OSError, ValueError):
                new = int(pid_file.read_text())
                if new != agent and psutil.pid_exists(new):
                    return new
            return None

        wait_until(restarted, what="the supervisor restarted the agent")
        assert psutil.Process(pid).is_running()

        def doomed_failed() -> dict[str, Any] | None:
            pod = get_pod(node_cluster, "doomed")
            return pod if pod["status"].get("phase") == "Failed" else None

        failed = wait_until(doomed_failed, what="doomed reaped as Failed")
        term = status_of(failed, "main")["state"]["terminated"]
        assert term["exitCode"] == 143 and term["reason"] == "Error"
        assert status_of(failed, "main")["restartCount"] == 0

        # The new agent serves the pod: a resize goes through, the PID is unchanged.
        want = {
            "requests": {"cpu": "150m", "memory": "64Mi"},
            "limits": {"cpu": "250m", "memory": "128Mi"},
        }
        resize(node_cluster, "survivor", [{"name": "main", "resources": want}])
        pod = resize_settled(node_cluster, "survivor", "main", want)
        assert pod["status"]["phase"] == "Running"
        assert pid_of(pod) == pid
        assert status_of(pod, "main")["restartCount"] == 0
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "25000"
    finally:
        delete(node_cluster, "survivor")
        delete(node_cluster, "doomed")


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_kubectl_top(node_cluster: Cluster) -> None:
    apply(node_cluster, SLEEPER.format(name="topped"))
    try:
        wait_until(lambda: running(node_cluster, "topped"), what="topped Running")

        def top_pod() -> str | None:
            out = node_cluster.kubectl("top", "pod", "topped", check=False)
            return out.stdout if out.returncode == 0 and "topped" in out.stdout else None

        assert "MEMORY" in wait_until(top_pod, what="kubectl top pod")
        out = wait_until(
            lambda: (
                (r := node_cluster.kubectl("top", "node", check=False)).returncode == 0
                and NODE in r.stdout
                and r.stdout
            ),
            what="kubectl top node",
        )
        assert NODE in out
    finally:
        delete(node_cluster, "topped")


def test_pod_that_does_not_fit_is_rejected(node_cluster: Cluster) -> None:
    apply(
        node_cluster,
        """\
apiVersion: v1
kind: Pod
metadata: {name: toobig}
spec:
  nodeName: node-1
  containers:
  - {name: main, image: busybox, command: [sleep, "3600"], resources: {requests: {cpu: "2"}}}
""",
    )
    try:
        pod = wait_until(
            lambda: (p := get_pod(node_cluster, "toobig"))["status"].get("phase") == "Failed" and p,
            what="toobig Failed",
        )
        assert pod["status"]["reason"] == "OutOfcpu"
        assert pod["status"]["message"].startswith(
            "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000"
        )
    finally:
        delete(node_cluster, "toobig")


DISK = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: busybox
    command: [sleep, "3600"]
    resources: {{requests: {{cpu: 10m, memory: 16Mi, ephemeral-storage: "{storage}"}}}}
"""


def test_ephemeral_storage_is_reported_and_counted(node_cluster: Cluster) -> None:
    """The agent reports the filesystem of its data dir as a kubelet reports its root dir's,
    and the embedded scheduler counts ephemeral storage as kube-scheduler does: a pod asking
    1Mi is placed and runs, one asking more than the node's allocatable waits, Unschedulable
    with upstream's reason."""
    node = json.loads(node_cluster.kubectl("get", "node", NODE, "-o", "json").stdout)
    capacity, allocatable = ephemeral_storage(node_cluster.data_dir.resolve() / "nodes" / NODE)
    reported = {
        kind: Quantity.parse(node["status"][kind]["ephemeral-storage"]).value()
        for kind in ("capacity", "allocatable")
    }
    assert reported == {"capacity": capacity, "allocatable": allocatable}
    apply(node_cluster, DISK.format(name="disk", storage="1Mi"))
    apply(node_cluster, DISK.format(name="bigdisk", storage=allocatable + 1))
    try:
        pod = wait_until(lambda: running(node_cluster, "disk"), what="disk Running")
        assert pod["spec"]["nodeName"] == NODE

        def unschedulable() -> dict[str, Any] | None:
            cond = condition(get_pod(node_cluster, "bigdisk"), "PodScheduled")
            return cond if cond and cond.get("reason") == "Unschedulable" else None

        cond = wait_until(unschedulable, what="bigdisk Unschedulable")
        assert cond["message"] == "0/1 nodes are available: 1 Insufficient ephemeral-storage."
    finally:
        delete(node_cluster, "disk")
        delete(node_cluster, "bigdisk")


def test_delete_stops_processes_and_removes_cgroup(node_cluster: Cluster) -> None:
    apply(node_cluster, SLEEPER.format(name="gone"))
    pod = wait_until(lambda: running(node_cluster, "gone"), what="gone Running")
    pid = pid_of(pod, "main")
    memory_dir = Path(cgroup_file(pid, "memory", "cgroup.procs") and "/")  # exists while running
    pod_cgroup = None
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            pod_cgroup = CGROUP_FS / "memory" / Path(path.lstrip("/")).parent
    assert pod_cgroup is not None and pod_cgroup.is_dir() and memory_dir
    delete(node_cluster, "gone")
    wait_until(lambda: not psutil.pid_exists(pid), what="process gone")
    wait_until(lambda: not pod_cgroup.exists(), what="pod cgroup removed")
    wait_until(lambda: "Killing" in events_of(node_cluster, "gone"), what="the Killing event")
    assert {"Created", "Started", "Killing"} <= set(events_of(node_cluster, "gone"))


PAUSER = """\
apiVersion: v1
kind: Pod
metadata:
  name: pauser
  annotations: {"inplace.dev/oom-kill-disable": "true"}
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: python
    command:
    - python3
    - -c
    - |
      import os, time
      print("pid", os.getpid(), flush=True)
      chunks = []
      for _ in range(15):
          chunk = bytearray(10 * 2**20)
          for i in range(0, len(chunk), 4096):
              chunk[i] = 1
          chunks.append(chunk)
      print("allocated", len(chunks) * 10, "MiB", flush=True)
      time.sleep(3600)
    resources:
      requests: {cpu: 100m, memory: 100Mi}
      limits: {cpu: 500m, memory: 100Mi}
"""


def test_memory_pause_instead_of_oom_kill(node_cluster: Cluster) -> None:
    apply(node_cluster, PAUSER)
    try:

        def paused() -> dict[str, Any] | None:
            pod = get_pod(node_cluster, "pauser")
            cond = condition(pod, "MemoryPaused")
            return pod if cond and cond["status"] == "True" else None

        pod = wait_until(paused, what="MemoryPaused")
        pid = pid_of(pod)
        assert alive(pid)
        assert "allocated" not in node_cluster.kubectl("logs", "pauser").stdout
        wait_until(lambda: "MemoryPaused" in events_of(node_cluster, "pauser"), what="event")

        want = {
            "requests": {"cpu": "100m", "memory": "200Mi"},
            "limits": {"cpu": "500m", "memory": "200Mi"},
        }
        resize(node_cluster, "pauser", [{"name": "main", "resources": want}])
        pod = resize_settled(node_cluster, "pauser", "main", want)
        wait_until(
            lambda: "allocated 150 MiB" in node_cluster.kubectl("logs", "pauser").stdout,
            what="the workload finished its allocation after the resize",
        )
        pod = wait_until(
            lambda: (
                (p := get_pod(node_cluster, "pauser"))
                and condition(p, "MemoryPaused") is None
                and p
            ),
            what="MemoryPaused cleared",
        )
        assert pid_of(pod) == pid
        assert status_of(pod, "main")["restartCount"] == 0
    finally:
        delete(node_cluster, "pauser")


CRASHY = """\
apiVersion: v1
kind: Pod
metadata: {name: crashy}
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 1
  initContainers:
  - {name: init, image: busybox, command: ["sh", "-c", "echo init done"]}
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo run $$; exit 3"]
"""


def test_crash_loop_back_off_and_previous_logs(node_cluster: Cluster) -> None:
    apply(node_cluster, CRASHY)
    try:

        def backing_off() -> dict[str, Any] | None:
            pod = get_pod(node_cluster, "crashy")
            statuses = pod["status"].get("containerStatuses") or []
            waiting = statuses[0]["state"].get("waiting", {}) if statuses else {}
            return pod if waiting.get("reason") == "CrashLoopBackOff" else None

        pod = wait_until(backing_off, what="CrashLoopBackOff")
        cs = status_of(pod, "main")
        # kubelet's rhythm: the first restart is immediate, the second waits 10 s.
        assert cs["restartCount"] == 1
        assert cs["lastState"]["terminated"]["exitCode"] == 3
        assert "back-off 10s" in cs["state"]["waiting"]["message"]
        assert pod["status"]["phase"] == "Running"
        init = pod["status"]["initContainerStatuses"][0]
        assert init["state"]["terminated"]["reason"] == "Completed"
        assert "init done" in node_cluster.kubectl("logs", "crashy", "-c", "init").stdout
        assert "run" in node_cluster.kubectl("logs", "crashy", "--previous").stdout
        listing = node_cluster.kubectl("get", "pod", "crashy").stdout
        assert "CrashLoopBackOff" in listing

        # kubelet's events, counted as upstream's recorder counts them: the second back-off
        # (20 s) is one BackOff event with count 2, not a second event.
        def backoff_line() -> str | None:
            text = node_cluster.kubectl("describe", "pod", "crashy").stdout
            for line in text.splitlines():
                if "BackOff" in line and "(x2 over" in line:
                    return line
            return None

        line = wait_until(backoff_line, timeout=60, what="the BackOff event counted twice")
        assert line.split()[0] == "Warning"
        assert "kubelet" in line
        assert "Back-off restarting failed container main in pod crashy_default(" in line
        events = json.loads(
            node_cluster.kubectl(
                "get", "events", "--field-selector", "involvedObject.name=crashy", "-o", "json"
            ).stdout
        )["items"]
        backoffs = [e for e in events if e["reason"] == "BackOff"]
        assert len(backoffs) == 1 and backoffs[0]["count"] >= 2
        assert backoffs[0]["involvedObject"]["fieldPath"] == "spec.containers{main}"
        assert backoffs[0]["source"] == {"component": "kubelet", "host": NODE}
        # the kubelet's words, one Event per container (kuberuntime_container.go)
        by_reason = {
            (e["reason"], e["message"], e["involvedObject"].get("fieldPath")): e for e in events
        }
        main, init = "spec.containers{main}", "spec.initContainers{init}"
        assert by_reason[("Created", "Container created", main)]["count"] >= 3
        assert by_reason[("Started", "Container started", main)]["count"] >= 3
        assert ("Started", "Container started", init) in by_reason
        pulled = (
            'Container image "busybox" already present on machine and can be accessed by the pod'
        )
        assert by_reason[("Pulled", pulled, main)]["count"] >= 3
    finally:
        delete(node_cluster, "crashy")
