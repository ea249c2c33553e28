"""In-place resize through the real ``pods/resize`` subresource, as the real kube-scheduler placed
the pod, on both kinds of node side by side in one bed: inplace's node agent, and the kubelet
with containerd and runc. The same assertions hold for both: same PID, new cgroup files, the
status (``containerStatuses[].resources``, ``observedGeneration``, ``PodResizePending``
``Deferred`` until room appears, then completion, ``PodResizeInProgress`` ``Error``), the
events, ``RestartContainer``; a resize larger than the node is refused by the API server
itself. What passes on the kubelet is the kubelet's behaviour; the agent is held to it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from testbed.images import WORKLOAD_IMAGE
from tests.poll import wait_until

from .conftest import (
    Bed,
    cgroup_file,
    condition,
    down,
    pid_of,
    start_bed,
    status_of,
    wait_running,
)

NODES = {"agent": ("node-1", "node-2"), "kubelet": ("kubelet-1", "kubelet-2")}


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    """Two 2-CPU, 2Gi agent nodes and two kubelet nodes of the same size."""
    directory = tmp_path_factory.mktemp("upstream")
    plane = start_bed(directory, nodes=2, kubelet_nodes=2, node_cpu="2", node_memory="2Gi")
    try:
        yield Bed(plane)
    finally:
        leftovers = down(directory)
    assert not leftovers, f"the test bed left behind: {leftovers}"


@pytest.fixture(params=sorted(NODES))
def kind(request: pytest.FixtureRequest) -> str:
    """Which kind of node the test's pods run on."""
    return str(request.param)


POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {node}}}
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: {image}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo pid $$$$; exec sleep 3600"]
    resources:
      requests: {{cpu: {cpu}, memory: {memory}}}
      limits: {{cpu: {cpu_limit}, memory: {memory_limit}}}
"""


def make_pod(
    bed: Bed,
    name: str,
    *,
    node: str,
    cpu: str = "100m",
    memory: str = "64Mi",
    cpu_limit: str = "200m",
    memory_limit: str = "128Mi",
) -> dict[str, Any]:
    bed.apply(
        POD.format(
            name=name,
            node=node,
            image=WORKLOAD_IMAGE,
            cpu=cpu,
            memory=memory,
            cpu_limit=cpu_limit,
            memory_limit=memory_limit,
        )
    )
    return wait_running(bed, name)


def resize(bed: Bed, name: str, resources: dict[str, Any]) -> None:
    patch = json.dumps({"spec": {"containers": [{"name": "main", "resources": resources}]}})
    bed.kubectl("patch", "pod", name, "--subresource", "resize", "-p", patch)


def settled(bed: Bed, name: str, want: dict[str, Any]) -> dict[str, Any]:
    """The pod once the agent applied ``want`` and cleared its resize conditions."""

    def check() -> dict[str, Any] | None:
        pod = bed.get("pod", name)
        if condition(pod, "PodResizeInProgress") or condition(pod, "PodResizePending"):
            return None
        if status_of(pod, "main").get("resources") != want:
            return None
        if pod["status"].get("observedGeneration") != pod["metadata"]["generation"]:
            return None
        return pod

    return dict(wait_until(check, timeout=60, what=f"resize of {name} to {want}"))


def pending(bed: Bed, name: str, reason: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        pod = bed.get("pod", name)
        cond = condition(pod, "PodResizePending")
        return cond if cond and cond.get("reason") == reason else None

    return dict(wait_until(check, timeout=60, what=f"{name} PodResizePending/{reason}"))


def test_resize_up_and_down_in_place(bed: Bed, kind: str) -> None:
    name, node = f"grow-{kind}", NODES[kind][0]
    pod = make_pod(bed, name, node=node)
    try:
        assert pod["spec"]["nodeName"] == node  # placed by the real kube-scheduler
        pid = pid_of(pod)
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(128 * 2**20)
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "20000"

        up = {
            "requests": {"cpu": "300m", "memory": "100Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        }
        resize(bed, name, up)
        pod = settled(bed, name, up)
        assert pid_of(pod) == pid
        assert status_of(pod, "main")["restartCount"] == 0
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(256 * 2**20)
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "50000"
        assert cgroup_file(pid, "cpu", "cpu.shares") == str(300 * 1024 // 1000)
        assert pod["metadata"]["generation"] == 2

        down = {
            "requests": {"cpu": "50m", "memory": "32Mi"},
            "limits": {"cpu": "100m", "memory": "64Mi"},
        }
        resize(bed, name, down)
        pod = settled(bed, name, down)
        assert pid_of(pod) == pid
        assert status_of(pod, "main")["restartCount"] == 0
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(64 * 2**20)
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "10000"
        reasons = [e["reason"] for e in bed.events_of(name)]
        assert "ResizeStarted" in reasons
        assert "ResizeCompleted" in reasons
    finally:
        bed.kubectl("delete", "pod", name, "--wait=false")


def test_resize_larger_than_the_node_is_refused(bed: Bed, kind: str) -> None:
    """Since 1.36 the API server itself refuses it (the PodResizeValidator admission
    plugin, plugin/pkg/admission/podresize): no resize reaches the node, whose kubelet would
    call it Deferred; the pod runs on untouched."""
    name = f"toobig-{kind}"
    pod = make_pod(bed, name, node=NODES[kind][1])
    try:
        pid = pid_of(pod)
        patch = {"requests": {"cpu": "100m", "memory": "3Gi"}, "limits": {"memory": "3Gi"}}
        body = json.dumps({"spec": {"containers": [{"name": "main", "resources": patch}]}})
        out = bed.kubectl("patch", "pod", name, "--subresource", "resize", "-p", body, check=False)
        assert out.returncode != 0
        assert "Forbidden" in out.stderr
        assert (
            "node didn't have enough allocatable resources: memory, requested: 3221225472, "
            "allocatable: 2147483648" in out.stderr
        )
        pod = bed.get("pod", name)
        assert pod["metadata"]["generation"] == 1
        assert pid_of(pod) == pid
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(128 * 2**20)
        assert condition(pod, "PodResizePending") is None
    finally:
        bed.kubectl("delete", "pod", name, "--wait=false")


def test_resize_that_does_not_fit_now_is_deferred_until_room_appears(bed: Bed, kind: str) -> None:
    node = NODES[kind][0]
    hog_name, name = f"hog-{kind}", f"small-{kind}"
    hog = make_pod(bed, hog_name, node=node, memory="1Gi", memory_limit="1Gi")
    small = make_pod(bed, name, node=node, memory="512Mi", memory_limit="512Mi")
    try:
        pid, hog_pid = pid_of(small), pid_of(hog)
        want = {
            "requests": {"cpu": "100m", "memory": "1536Mi"},
            "limits": {"cpu": "200m", "memory": "1536Mi"},
        }
        resize(bed, name, want)
        cond = pending(bed, name, "Deferred")
        assert cond.get("observedGeneration") == 2
        # the kubelet's words (pkg/kubelet/lifecycle/predicate.go, via the allocation manager)
        assert cond["message"].startswith("Node didn't have enough resource: memory, requested:")
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(512 * 2**20)
        assert "ResizeDeferred" in [e["reason"] for e in bed.events_of(name)]

        bed.kubectl("delete", "pod", hog_name, "--wait=true", "--timeout=60s")
        pod = settled(bed, name, want)
        assert pid_of(pod) == pid
        assert status_of(pod, "main")["restartCount"] == 0
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(1536 * 2**20)
        assert hog_pid != pid
    finally:
        bed.kubectl("delete", "pod", hog_name, name, "--ignore-not-found", "--wait=false")


HOG = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {node}}}
  terminationGracePeriodSeconds: 2
  volumes: [{{name: scratch, emptyDir: {{medium: Memory}}}}]
  containers:
  - name: main
    image: {image}
    imagePullPolicy: IfNotPresent
    # 100 MiB written to a memory-backed emptyDir is charged to this container's cgroup
    command:
    - sh
    - -c
    - dd if=/dev/zero of=/scratch/fill bs=1M count=100 && echo allocated && exec sleep 3600
    volumeMounts: [{{name: scratch, mountPath: /scratch}}]
    resources:
      requests: {{cpu: 100m, memory: 200Mi}}
      limits: {{cpu: 200m, memory: 200Mi}}
  - name: side
    image: {image}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    resizePolicy: [{{resourceName: memory, restartPolicy: RestartContainer}}]
    resources:
      requests: {{cpu: 100m, memory: 32Mi}}
      limits: {{cpu: 100m, memory: 32Mi}}
"""


def test_memory_below_usage_is_an_error_and_restart_policy(bed: Bed, kind: str) -> None:
    """A limit under what the process uses is refused by the kernel: the process runs on,
    ``PodResizeInProgress`` says ``Error`` for that generation; a ``RestartContainer`` policy
    restarts exactly that container, with the kubelet's ``Killing`` message."""
    name = f"hog-error-{kind}"
    bed.apply(HOG.format(name=name, node=NODES[kind][1], image=WORKLOAD_IMAGE))
    try:
        pod = wait_running(bed, name)
        wait_until(
            lambda: "allocated" in bed.kubectl("logs", name, "-c", "main").stdout,
            what="the hog allocated its memory",
        )
        main_pid, side_pid = pid_of(pod, "main"), pid_of(pod, "side")
        squeeze = {
            "name": "main",
            "resources": {"requests": {"memory": "50Mi"}, "limits": {"memory": "50Mi"}},
        }
        bed.kubectl(
            "patch", "pod", name, "--subresource", "resize",
            "-p", json.dumps({"spec": {"containers": [squeeze]}}),
        )  # fmt: skip

        def errored() -> dict[str, Any] | None:
            cond = condition(bed.get("pod", name), "PodResizeInProgress")
            return cond if cond and cond.get("reason") == "Error" else None

        cond = dict(wait_until(errored, timeout=60, what="PodResizeInProgress reason Error"))
        assert cond["observedGeneration"] == 2
        assert psutil.Process(main_pid).is_running()
        assert cgroup_file(main_pid, "memory", "memory.limit_in_bytes") == str(200 * 2**20)
        wait_until(
            lambda: "ResizeError" in [e["reason"] for e in bed.events_of(name)],
            what="ResizeError",
        )

        main_want = {
            "requests": {"cpu": "100m", "memory": "200Mi"},
            "limits": {"cpu": "200m", "memory": "200Mi"},
        }
        side_want = {
            "requests": {"cpu": "100m", "memory": "48Mi"},
            "limits": {"cpu": "100m", "memory": "48Mi"},
        }
        body = {
            "spec": {
                "containers": [
                    {"name": "main", "resources": main_want},
                    {"name": "side", "resources": side_want},
                ]
            }
        }
        bed.kubectl("patch", "pod", name, "--subresource", "resize", "-p", json.dumps(body))

        def done() -> dict[str, Any] | None:
            pod = bed.get("pod", name)
            if condition(pod, "PodResizeInProgress") or condition(pod, "PodResizePending"):
                return None
            if status_of(pod, "side").get("resources") != side_want:
                return None
            if "running" not in status_of(pod, "side")["state"]:
                return None
            return pod

        pod = dict(wait_until(done, timeout=60, what="both containers at their new size"))
        assert pid_of(pod, "main") == main_pid
        assert status_of(pod, "main")["restartCount"] == 0
        assert status_of(pod, "side")["restartCount"] == 1
        assert pid_of(pod, "side") != side_pid
        assert cgroup_file(pid_of(pod, "side"), "memory", "memory.limit_in_bytes") == str(
            48 * 2**20
        )
        killing = [e["message"] for e in bed.events_of(name) if e["reason"] == "Killing"]
        assert killing == ["Container side resize requires restart"]
    finally:
        bed.kubectl("delete", "pod", name, "--wait=false")
