"""In-place resize through the real ``pods/resize`` subresource, on inplace's node agent as the
real kube-scheduler placed the pod: same PID, new cgroup files, and the status the 1.36 kubelet
writes (``containerStatuses[].resources``, ``observedGeneration``, ``PodResizePending``
``Deferred`` until room appears, then completion); a resize larger than the node is refused by
the API server itself."""

from __future__ import annotations

import json
from typing import Any

from tests.poll import wait_until

from .conftest import Bed, cgroup_file, condition, pid_of, status_of, wait_running

POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {node}}}
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo pid $$; exec sleep 3600"]
    resources:
      requests: {{cpu: {cpu}, memory: {memory}}}
      limits: {{cpu: {cpu_limit}, memory: {memory_limit}}}
"""


def make_pod(
    bed: Bed,
    name: str,
    *,
    node: str = "node-1",
    cpu: str = "100m",
    memory: str = "64Mi",
    cpu_limit: str = "200m",
    memory_limit: str = "128Mi",
) -> dict[str, Any]:
    bed.apply(
        POD.format(
            name=name,
            node=node,
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
        if status_of(pod).get("resources") != want:
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


def test_resize_up_and_down_in_place(bed: Bed) -> None:
    pod = make_pod(bed, "grow")
    try:
        assert pod["spec"]["nodeName"] == "node-1"  # placed by the real kube-scheduler
        pid = pid_of(pod)
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(128 * 2**20)
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "20000"

        up = {
            "requests": {"cpu": "300m", "memory": "100Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        }
        resize(bed, "grow", up)
        pod = settled(bed, "grow", up)
        assert pid_of(pod) == pid
        assert status_of(pod)["restartCount"] == 0
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(256 * 2**20)
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "50000"
        assert cgroup_file(pid, "cpu", "cpu.shares") == str(300 * 1024 // 1000)
        assert pod["metadata"]["generation"] == 2

        down = {
            "requests": {"cpu": "50m", "memory": "32Mi"},
            "limits": {"cpu": "100m", "memory": "64Mi"},
        }
        resize(bed, "grow", down)
        pod = settled(bed, "grow", down)
        assert pid_of(pod) == pid
        assert status_of(pod)["restartCount"] == 0
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(64 * 2**20)
        assert cgroup_file(pid, "cpu", "cpu.cfs_quota_us") == "10000"
        reasons = [e["reason"] for e in bed.events_of("grow")]
        assert "ResizeStarted" in reasons
    finally:
        bed.kubectl("delete", "pod", "grow", "--wait=false")


def test_resize_larger_than_the_node_is_refused(bed: Bed) -> None:
    """Since 1.36 the API server itself refuses it (the PodResizeValidator admission
    plugin, plugin/pkg/admission/podresize): no resize reaches the node, whose kubelet would
    call it Deferred; the pod runs on untouched."""
    pod = make_pod(bed, "toobig", node="node-2")
    try:
        pid = pid_of(pod)
        patch = {"requests": {"cpu": "100m", "memory": "3Gi"}, "limits": {"memory": "3Gi"}}
        body = json.dumps({"spec": {"containers": [{"name": "main", "resources": patch}]}})
        out = bed.kubectl(
            "patch", "pod", "toobig", "--subresource", "resize", "-p", body, check=False
        )
        assert out.returncode != 0
        assert "Forbidden" in out.stderr
        assert (
            "node didn't have enough allocatable resources: memory, requested: 3221225472, "
            "allocatable: 2147483648" in out.stderr
        )
        pod = bed.get("pod", "toobig")
        assert pod["metadata"]["generation"] == 1
        assert pid_of(pod) == pid
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(128 * 2**20)
        assert condition(pod, "PodResizePending") is None
    finally:
        bed.kubectl("delete", "pod", "toobig", "--wait=false")


def test_resize_that_does_not_fit_now_is_deferred_until_room_appears(bed: Bed) -> None:
    hog = make_pod(bed, "hog", memory="1Gi", memory_limit="1Gi")
    small = make_pod(bed, "small", memory="512Mi", memory_limit="512Mi")
    try:
        pid = pid_of(small)
        want = {
            "requests": {"cpu": "100m", "memory": "1536Mi"},
            "limits": {"cpu": "200m", "memory": "1536Mi"},
        }
        resize(bed, "small", want)
        cond = pending(bed, "small", "Deferred")
        assert cond.get("observedGeneration") == 2
        # the kubelet's words (pkg/kubelet/lifecycle/predicate.go, via the allocation manager)
        assert cond["message"].startswith("Node didn't have enough resource: memory, requested:")
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(512 * 2**20)
        assert "ResizeDeferred" in [e["reason"] for e in bed.events_of("small")]

        bed.kubectl("delete", "pod", "hog", "--wait=true", "--timeout=60s")
        pod = settled(bed, "small", want)
        assert pid_of(pod) == pid
        assert status_of(pod)["restartCount"] == 0
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(1536 * 2**20)
        assert pid_of(hog) != pid
    finally:
        bed.kubectl("delete", "pod", "hog", "small", "--ignore-not-found", "--wait=false")
