"""The checker's own rules, on hand-made watch events: it must be able to fail."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.chaos.checker import Checker, pod_charge

MI = 2**20


def node(name: str = "node-1", cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "resourceVersion": "1"},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def pod(
    name: str,
    rv: int,
    *,
    cpu: str = "100m",
    memory: str = "64Mi",
    allocated: dict[str, str] | None = None,
    approved: bool = False,
    generation: int = 1,
    pid: int | None = None,
    restarts: int = 0,
    last: dict[str, Any] | None = None,
    node_name: str = "node-1",
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Running", "conditions": []}
    if allocated is not None:
        cs: dict[str, Any] = {
            "name": "main",
            "allocatedResources": allocated,
            "resources": {"requests": allocated},
            "restartCount": restarts,
            "state": {"running": {}} if pid else {"waiting": {}},
            "lastState": {"terminated": last} if last else {},
        }
        if pid:
            cs["containerID"] = f"inplace://{pid}"
        status["containerStatuses"] = [cs]
    if approved:
        status["conditions"].append(
            {"type": "PodResizeScheduled", "status": "True", "observedGeneration": generation}
        )
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": str(rv),
            "generation": generation,
        },
        "spec": {
            "nodeName": node_name,
            "containers": [
                {"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            ],
        },
        "status": status,
    }


@pytest.mark.parametrize(
    ("desired", "allocated", "approved", "charge"),
    [
        ("500m", None, False, (500, 64 * MI)),  # not admitted: its spec
        ("500m", {"cpu": "200m", "memory": "64Mi"}, False, (200, 64 * MI)),  # waits: held
        ("500m", {"cpu": "200m", "memory": "64Mi"}, True, (500, 64 * MI)),  # approved: desired
        ("100m", {"cpu": "200m", "memory": "64Mi"}, True, (200, 64 * MI)),  # shrinking: held
    ],
)
def test_a_pods_charge(
    desired: str, allocated: dict[str, str] | None, approved: bool, charge: tuple[int, int]
) -> None:
    generation = 2 if allocated else 1
    assert (
        pod_charge(
            pod("p", 1, cpu=desired, allocated=allocated, approved=approved, generation=generation)
        )
        == charge
    )


def test_over_commit_is_caught_at_the_revision_it_appears() -> None:
    checker = Checker()
    checker.observe_node("ADDED", node())
    a = {"cpu": "600m", "memory": "64Mi"}
    checker.observe_pod("ADDED", pod("a", 2, cpu="600m", allocated=a))
    checker.observe_pod(
        "ADDED", pod("b", 3, cpu="300m", allocated={"cpu": "300m", "memory": "64Mi"})
    )
    assert not checker.violations
    checker.observe_pod(
        "MODIFIED",
        pod(
            "b",
            4,
            cpu="500m",
            allocated={"cpu": "300m", "memory": "64Mi"},
            approved=True,
            generation=2,
        ),
    )
    assert [(v.invariant, v.resource_version) for v in checker.violations] == [("1 over-commit", 4)]


def test_a_pod_resized_before_admission_counts_at_its_bound_size() -> None:
    checker = Checker()
    checker.observe_node("ADDED", node())
    checker.observe_pod(
        "ADDED", pod("a", 2, cpu="800m", allocated={"cpu": "800m", "memory": "64Mi"})
    )
    checker.observe_pod("ADDED", pod("b", 3, cpu="150m"))
    checker.observe_pod("MODIFIED", pod("b", 4, cpu="850m", generation=2))
    assert not checker.violations
    checker.observe_pod(
        "MODIFIED",
        pod("b", 5, cpu="850m", generation=2, allocated={"cpu": "850m", "memory": "64Mi"}),
    )
    assert [v.invariant for v in checker.violations] == ["1 over-commit"]


def test_a_pod_shrunk_before_admission_counts_at_its_smaller_size() -> None:
    """Found by a long storm: a pod bound at 350m and shrunk to 325m before its node admitted
    it; the scheduler gave the 25m to another pod's resize at once, as it should."""
    checker = Checker()
    checker.observe_node("ADDED", node())
    checker.observe_pod("ADDED", pod("b", 2, cpu="350m"))
    checker.observe_pod("MODIFIED", pod("b", 3, cpu="325m", generation=2))
    checker.observe_pod(
        "ADDED", pod("a", 4, cpu="675m", allocated={"cpu": "675m", "memory": "64Mi"})
    )
    assert not checker.violations


def test_a_process_end_must_be_recorded_and_explained() -> None:
    checker = Checker()
    alloc = {"cpu": "100m", "memory": "64Mi"}
    checker.observe_pod("ADDED", pod("p", 2, allocated=alloc, pid=10))
    oom = {"containerID": "inplace://10", "reason": "OOMKilled", "exitCode": 137}
    checker.observe_pod("MODIFIED", pod("p", 3, allocated=alloc, pid=11, restarts=1, last=oom))
    assert not checker.violations  # an OOM kill of a pod that did not opt out
    checker.observe_pod("MODIFIED", pod("p", 4, allocated=alloc, pid=12, restarts=1, last=oom))
    assert [v.message for v in checker.violations] == [
        "pod p container main: pid 11 became 12 with its end unrecorded"
    ]
    killed = {"containerID": "inplace://12", "reason": "Error", "exitCode": 137}
    checker.observe_pod("MODIFIED", pod("p", 5, allocated=alloc, pid=13, restarts=2, last=killed))
    assert "with no explanation" in checker.violations[-1].message
    paused = copy.deepcopy(pod("q", 6, allocated=alloc, pid=20))
    paused["metadata"]["annotations"] = {"inplace.dev/oom-kill-disable": "true"}
    checker.observe_pod("ADDED", paused)
    again = pod(
        "q", 7, allocated=alloc, pid=21, restarts=1, last={**oom, "containerID": "inplace://20"}
    )
    again["metadata"]["annotations"] = {"inplace.dev/oom-kill-disable": "true"}
    checker.observe_pod("MODIFIED", again)
    assert "OOMKilled" in checker.violations[-1].message  # it asked to be paused, not killed


def test_watch_streams_must_move_forward() -> None:
    checker = Checker()
    checker.observe_node("ADDED", node())
    checker.observe_pod("ADDED", pod("a", 5))
    checker.observe_pod("MODIFIED", pod("a", 4))
    assert [v.invariant for v in checker.violations] == ["watch"]
