"""What a pod's status says (inplace.node.status_model): the kubelet's shapes, phase rules and
pod-level resources, as tables; no I/O, no clock."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.node.cgroups.base import CgroupResources
from inplace.node.model import Alloc
from inplace.node.status_model import (
    ContainerState,
    pod_phase,
    pod_status_allocated,
    pod_status_resources,
    volume_mount_statuses,
)

Mi = 2**20


# -- status ----------------------------------------------------------------------------------


def cs(
    state: str, exit_code: int | None = None, restarts: int = 0, last: bool = False
) -> ContainerState:
    c = ContainerState("c", state=state, exit_code=exit_code, restart_count=restarts)  # type: ignore[arg-type]
    if last:
        c.last_state = {"terminated": {"exitCode": 1}}
    return c


@pytest.mark.parametrize(
    ("containers", "policy", "initialized", "failed_init", "phase"),
    [
        ([cs("waiting")], "Always", True, False, "Pending"),
        ([cs("running")], "Always", False, False, "Pending"),
        ([cs("running"), cs("terminated", 0)], "Never", True, False, "Running"),
        ([cs("terminated", 0)], "Never", True, False, "Succeeded"),
        ([cs("terminated", 0), cs("terminated", 1)], "Never", True, False, "Failed"),
        ([cs("terminated", 1)], "OnFailure", True, False, "Running"),
        ([cs("terminated", 0)], "OnFailure", True, False, "Succeeded"),
        ([cs("waiting", restarts=3, last=True)], "Always", True, False, "Running"),
        ([cs("waiting")], "Never", False, True, "Failed"),
    ],
)
def test_pod_phase(
    containers: list[ContainerState], policy: str, initialized: bool, failed_init: bool, phase: str
) -> None:
    assert pod_phase(containers, policy, initialized=initialized, failed_init=failed_init) == phase


def test_container_status_shapes() -> None:
    c = ContainerState("main", image="busybox", state="running", started_at="T1", pid=42)
    alloc = Alloc({"cpu": "1"}, {"cpu": "2"})
    out = c.status(allocated=alloc, actual=alloc)
    assert out["state"] == {"running": {"startedAt": "T1"}}
    assert out["ready"] and out["started"] and out["containerID"] == "inplace://42"
    assert out["allocatedResources"] == {"cpu": "1"}
    assert out["resources"] == {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}
    c.state, c.exit_code, c.reason, c.finished_at = "terminated", 137, "OOMKilled", "T2"
    term = c.status(allocated=None, actual=None)["state"]["terminated"]
    assert term == {
        "exitCode": 137,
        "reason": "OOMKilled",
        "startedAt": "T1",
        "finishedAt": "T2",
        "containerID": "inplace://42",
    }
    c.state, c.reason, c.message = "waiting", "CrashLoopBackOff", "back-off 10s"
    out = c.status(allocated=None, actual=None)
    assert out["state"] == {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}}
    assert not out["ready"] and "allocatedResources" not in out


# -- the kubelet's status shapes -------------------------------------------------------------


def _pod_of(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": list(containers), "initContainers": list(init)},
    }


def _ctr(
    name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "resources": resources}


def test_pod_allocated_resources_are_the_allocated_pods_requests() -> None:
    """kubelet_pods.go convertStatusToAPIStatus: PodRequests of the allocated pod (sidecars
    add up, a regular init container counts at its peak, other resources kept)."""
    pod = _pod_of(
        _ctr("main", {"cpu": "100m", "memory": "64Mi", "ephemeral-storage": "1Gi"}),
        _ctr("helper"),
        init=(
            _ctr("init", {"cpu": "1", "memory": "8Mi"}),
            {**_ctr("side", {"cpu": "50m", "memory": "16Mi"}), "restartPolicy": "Always"},
        ),
    )
    allocs = {"main": Alloc({"cpu": "300m", "memory": "100Mi"})}
    assert pod_status_allocated(pod, allocs) == {
        "cpu": "1",
        "ephemeral-storage": "1Gi",
        "memory": "116Mi",
    }
    assert pod_status_allocated(_pod_of(_ctr("main")), {}) == {}


def test_pod_resources_before_running_are_the_allocated_requests_and_limits() -> None:
    pod = _pod_of(_ctr("main", {"cpu": "100m", "memory": "64Mi"}, {"cpu": "200m"}), _ctr("helper"))
    allocs = {"main": Alloc({"cpu": "100m", "memory": "64Mi"}, {"cpu": "200m"})}
    cgroup = CgroupResources(cpu_shares=102, cpu_quota_us=None, memory_limit_bytes=None)
    for phase in ("Pending", None):
        stored = {"phase": phase} if phase else {}
        assert pod_status_resources(pod, allocs, stored=stored, cgroup=cgroup) == {
            "limits": {"cpu": "200m"},
            "requests": {"cpu": "100m", "memory": "64Mi"},
        }
    assert pod_status_resources(_pod_of(_ctr("main")), {}, stored={}, cgroup=None) == {}


def test_pod_resources_of_a_running_pod_are_its_cgroups_and_the_first_memory_request() -> None:
    """kubelet_pods.go convertToAPIPodLevelResourcesStatus: CPU from cpu.shares and the quota,
    the memory limit from the cgroup (v1's "none" is a number), the memory request kept from
    what the running pod reported before, a value the cgroup does not give kept too."""
    pod = _pod_of(
        _ctr("main", {"cpu": "300m", "memory": "100Mi"}, {"cpu": "500m", "memory": "256Mi"})
    )
    allocs = {"main": Alloc({"cpu": "300m", "memory": "100Mi"}, {"cpu": "500m", "memory": "256Mi"})}
    stored = {
        "phase": "Running",
        "resources": {
            "requests": {"cpu": "100m", "memory": "64Mi"},
            "limits": {"cpu": "200m", "memory": "128Mi"},
        },
    }
    cgroup = CgroupResources(cpu_shares=307, cpu_quota_us=50000, memory_limit_bytes=256 * Mi)
    assert pod_status_resources(pod, allocs, stored=stored, cgroup=cgroup) == {
        "limits": {"cpu": "500m", "memory": "256Mi"},
        "requests": {"cpu": "300m", "memory": "64Mi"},
    }
    # no quota, an unreadable cgroup: the values reported before stay
    unlimited = CgroupResources(cpu_shares=307, cpu_quota_us=None, memory_limit_bytes=None)
    assert pod_status_resources(pod, allocs, stored=stored, cgroup=unlimited)["limits"] == {
        "cpu": "200m",
        "memory": "128Mi",
    }
    assert pod_status_resources(pod, allocs, stored=stored, cgroup=None) == stored["resources"]
    # nothing reported before: the allocated memory request; v1's unlimited memory as read
    v1 = CgroupResources(cpu_shares=2, cpu_quota_us=None, memory_limit_bytes=9223372036854771712)
    assert pod_status_resources(pod, allocs, stored={"phase": "Running"}, cgroup=v1) == {
        "limits": {"memory": "9007199254740988Ki"},
        "requests": {"memory": "100Mi"},
    }


def test_volume_mount_statuses_say_read_only_mounts_are_not_recursive() -> None:
    container = {
        "volumeMounts": [
            {"name": "scratch", "mountPath": "/scratch", "subPath": "x"},
            {"name": "ca", "mountPath": "/ca", "readOnly": True, "recursiveReadOnly": "IfPossible"},
        ]
    }
    assert volume_mount_statuses(container) == [
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "ca", "mountPath": "/ca", "readOnly": True, "recursiveReadOnly": "Disabled"},
    ]
    assert volume_mount_statuses({}) == []


def test_a_container_reports_resources_and_user_once_created() -> None:
    """kubelet_pods.go convertToAPIContainerStatuses: resources, allocatedResources and user
    come from the runtime's container, so a container never created has none; a running one
    reports what runs, any other its allocation."""
    alloc = Alloc({"cpu": "100m"}, {"cpu": "200m"})
    actual = Alloc({"cpu": "50m"}, {"cpu": "200m"})
    mounts = [{"name": "v", "mountPath": "/v"}]
    fresh = ContainerState("c", reason="CreateContainerConfigError")
    status = fresh.status(allocated=alloc, actual=actual, volume_mounts=mounts)
    assert status["volumeMounts"] == mounts
    assert not {"resources", "allocatedResources", "user"} & set(status)

    user = {"uid": 1000, "gid": 3000, "supplementalGroups": [3000]}
    running = ContainerState("c", state="running", pid=42, started_at="T", user=user)
    status = running.status(allocated=alloc, actual=actual)
    assert status["resources"] == actual.to_json()
    assert status["allocatedResources"] == {"cpu": "100m"}
    assert status["user"] == {"linux": user}
    assert "volumeMounts" not in status

    done = ContainerState("c", state="terminated", exit_code=0, reason="Completed", pid=42)
    status = done.status(allocated=None, actual=actual)
    assert status["resources"] == {}
    assert "allocatedResources" not in status
