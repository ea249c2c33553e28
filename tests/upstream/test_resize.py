"""In-place resize through the real ``pods/resize`` subresource, on inplace's node agent as the
real kube-scheduler placed the pod: same PID, new cgroup files, and the status the 1.36 kubelet
writes (``containerStatuses[].resources``, ``observedGeneration``, ``PodResizePending``
``Deferred`` until room appears, then completion); a resize larger than the node is refused by
the API server itself."""

from __future__ import annotations

import json
from typing import Any

import psutil

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
    command: ["sh", "-c", "echo pid $$$$; exec sleep 3600"]
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
        assert status_of(pod, "main")["restartCount"] == 0
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
        assert status_of(pod, "main")["restartCount"] == 0
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
        assert status_of(pod, "main")["restartCount"] == 0
        assert cgroup_file(pid, "memory", "memory.limit_in_bytes") == str(1536 * 2**20)
        assert pid_of(hog) != pid
    finally:
        bed.kubectl("delete", "pod", "hog", "small", "--ignore-not-found", "--wait=false")


HOG = """\
apiVersion: v1
kind: Pod
metadata: {name: hog-error}
spec:
  nodeSelector: {kubernetes.io/hostname: node-2}
  terminationGracePeriodSeconds: 2
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
      print("allocated", flush=True)
      time.sleep(3600)
    resources:
      requests: {cpu: 100m, memory: 200Mi}
      limits: {cpu: 200m, memory: 200Mi}
  - name: side
    image: busybox
    command: ["sh", "-c", "exec sleep 3600"]
    resizePolicy: [{resourceName: memory, restartPolicy: RestartContainer}]
    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {cpu: 100m, memory: 32Mi}
"""


def test_memory_below_usage_is_an_error_and_restart_policy(bed: Bed) -> None:
    """A limit under what the process uses is refused by the kernel: the process runs on,
    ``PodResizeInProgress`` says ``Error`` for that generation; a ``RestartContainer`` policy
    restarts exactly that container, with the kubelet's ``Killing`` message."""
    bed.apply(HOG)
    try:
        pod = wait_running(bed, "hog-error")
        wait_until(
            lambda: "allocated" in bed.kubectl("logs", "hog-error", "-c", "main").stdout,
            what="the hog allocated its memory",
        )
        main_pid, side_pid = pid_of(pod, "main"), pid_of(pod, "side")
        squeeze = {
            "name": "main",
            "resources": {"requests": {"memory": "50Mi"}, "limits": {"memory": "50Mi"}},
        }
        bed.kubectl(
            "patch", "pod", "hog-error", "--subresource", "resize",
            "-p", json.dumps({"spec": {"containers": [squeeze]}}),
        )  # fmt: skip

        def errored() -> dict[str, Any] | None:
            cond = condition(bed.get("pod", "hog-error"), "PodResizeInProgress")
            return cond if cond and cond.get("reason") == "Error" else None

        cond = dict(wait_until(errored, timeout=60, what="PodResizeInProgress reason Error"))
        assert cond["observedGeneration"] == 2
        assert psutil.Process(main_pid).is_running()
        assert cgroup_file(main_pid, "memory", "memory.limit_in_bytes") == str(200 * 2**20)
        wait_until(
            lambda: "ResizeError" in [e["reason"] for e in bed.events_of("hog-error")],
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
        bed.kubectl("patch", "pod", "hog-error", "--subresource", "resize", "-p", json.dumps(body))

        def done() -> dict[str, Any] | None:
            pod = bed.get("pod", "hog-error")
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
        killing = [e["message"] for e in bed.events_of("hog-error") if e["reason"] == "Killing"]
        assert killing == ["Container side resize requires restart"]
    finally:
        bed.kubectl("delete", "pod", "hog-error", "--wait=false")
