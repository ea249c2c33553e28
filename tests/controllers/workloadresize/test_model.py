"""The in-place rule and a workload's resize progress, tabled."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from inplace.controllers.workloadresize import model as m


def template(
    *,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    image: str = "busybox",
    policy: list[dict[str, str]] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    init: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": image, "command": ["sleep", "9"]}
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    if resources:
        container["resources"] = resources
    if policy is not None:
        container["resizePolicy"] = policy
    meta: dict[str, Any] = {"labels": labels or {"app": "web"}}
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"containers": [container]}
    if init:
        spec["initContainers"] = init
    return {"metadata": meta, "spec": spec}


BURSTABLE = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}


@pytest.mark.parametrize(
    ("old", "new", "in_place", "why"),
    [
        (
            template(**BURSTABLE),
            template(requests={"cpu": "200m", "memory": "96Mi"}, limits={"memory": "256Mi"}),
            True,
            "",
        ),
        (  # memory limit down: allowed (v1.34 rule)
            template(**BURSTABLE),
            template(requests={"cpu": "100m", "memory": "64Mi"}, limits={"memory": "96Mi"}),
            True,
            "",
        ),
        (  # resizePolicy only: a running pod's policy cannot change (upstream's resize rules)
            template(**BURSTABLE),
            template(
                **BURSTABLE,
                policy=[{"resourceName": "memory", "restartPolicy": "RestartContainer"}],
            ),
            False,
            "only cpu and memory resources are mutable",
        ),
        (  # the image: a rollout
            template(**BURSTABLE),
            template(**BURSTABLE, image="busybox:2"),
            False,
            "beyond container resources",
        ),
        (  # a label: a rollout
            template(**BURSTABLE),
            template(**BURSTABLE, labels={"app": "web", "v": "2"}),
            False,
            "beyond container resources",
        ),
        (  # the resize policy annotation is template metadata: a rollout
            template(**BURSTABLE),
            template(**BURSTABLE, annotations={"inplace.dev/resize-policy": "InPlacePreferred"}),
            False,
            "beyond container resources",
        ),
        (  # BestEffort → Burstable changes the QoS class
            template(),
            template(requests={"cpu": "100m"}),
            False,
            "Pod QOS Class may not change",
        ),
        (  # Burstable → Guaranteed changes the QoS class
            template(**BURSTABLE),
            template(
                requests={"cpu": "100m", "memory": "64Mi"},
                limits={"cpu": "100m", "memory": "64Mi"},
            ),
            False,
            "Pod QOS Class may not change",
        ),
        (  # a request removed
            template(**BURSTABLE),
            template(requests={"memory": "64Mi"}, limits={"memory": "128Mi"}),
            False,
            "resource requests cannot be removed",
        ),
        (  # an extended resource is not resizable
            template(requests={"cpu": "100m", "ephemeral-storage": "1Gi"}),
            template(requests={"cpu": "100m", "ephemeral-storage": "2Gi"}),
            False,
            "only cpu and memory resources are mutable",
        ),
        (  # a regular init container's resources are immutable
            template(**BURSTABLE, init=[{"name": "i", "image": "b", "resources": BURSTABLE}]),
            template(
                **BURSTABLE,
                init=[
                    {
                        "name": "i",
                        "image": "b",
                        "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}},
                    }
                ],
            ),
            False,
            "resources for non-sidecar init containers are immutable",
        ),
        (  # identical templates are no change at all
            template(**BURSTABLE),
            template(**BURSTABLE),
            False,
            "beyond container resources",
        ),
    ],
)
def test_in_place_verdict(
    old: dict[str, Any], new: dict[str, Any], in_place: bool, why: str
) -> None:
    verdict = m.in_place_verdict(old, new)
    assert verdict.in_place is in_place, verdict.reason
    assert why in verdict.reason


def pod(
    tpl: dict[str, Any],
    *,
    name: str = "web-1",
    generation: int = 1,
    actual: dict[str, Any] | None = None,
    allocated: dict[str, str] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    node: str = "node-1",
) -> dict[str, Any]:
    spec = copy.deepcopy(tpl["spec"])
    spec["nodeName"] = node
    container = spec["containers"][0]
    res = container.get("resources") or {}
    status: dict[str, Any] = {
        "phase": "Running",
        "containerStatuses": [
            {
                "name": "main",
                "allocatedResources": allocated if allocated is not None else res.get("requests"),
                "resources": actual if actual is not None else res,
            }
        ],
        "conditions": conditions or [],
    }
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "generation": generation,
            "annotations": dict(tpl["metadata"].get("annotations") or {}),
        },
        "spec": spec,
        "status": status,
    }


NEW = template(requests={"cpu": "200m", "memory": "96Mi"}, limits={"memory": "256Mi"})


def test_resize_patch_brings_a_pod_to_the_template_and_nothing_when_it_is_there() -> None:
    want = m.desired_resources(NEW)
    old_pod = pod(template(**BURSTABLE))
    assert m.resize_patch(old_pod, want) == {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {
                        "requests": {"cpu": "200m", "memory": "96Mi"},
                        "limits": {"memory": "256Mi"},
                    },
                }
            ]
        }
    }
    assert m.resize_patch(pod(NEW), want) is None
    # Quantities compare by value, and requests default to limits as pods are stored.
    spelled = template(requests={"cpu": "0.2", "memory": "98304Ki"}, limits={"memory": "0.25Gi"})
    assert m.resize_patch(pod(spelled), want) is None
    only_limits = template(limits={"cpu": "1", "memory": "1Gi"})
    stored = pod(
        template(requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"})
    )
    assert m.resize_patch(stored, m.desired_resources(only_limits)) is None


def test_a_resize_policy_difference_is_not_a_resize() -> None:
    """A running pod's resizePolicy cannot change (upstream's resize rules): only cpu and
    memory are compared and sent."""
    policy = [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]
    want = m.desired_resources(template(**BURSTABLE, policy=policy))
    assert m.resize_patch(pod(template(**BURSTABLE)), want) is None


@pytest.mark.parametrize(
    ("the_pod", "state"),
    [
        (pod(template(**BURSTABLE)), m.State.NEEDS_PATCH),
        (pod(NEW, generation=2), m.State.AT_SIZE),
        (pod(NEW, actual=BURSTABLE), m.State.RESIZING),
        (pod(NEW, allocated={"cpu": "100m", "memory": "64Mi"}), m.State.RESIZING),
        (
            pod(
                NEW,
                actual=BURSTABLE,
                conditions=[
                    {
                        "type": "PodResizePending",
                        "status": "True",
                        "reason": "Infeasible",
                        "message": "Node didn't have enough capacity",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ],
            ),
            m.State.INFEASIBLE,
        ),
        (
            pod(
                NEW,
                actual=BURSTABLE,
                conditions=[{"type": "PodResizePending", "status": "True", "reason": "Deferred"}],
            ),
            m.State.DEFERRED,
        ),
        (
            pod(
                NEW,
                actual=BURSTABLE,
                conditions=[{"type": "PodResizeInProgress", "status": "True", "reason": "Error"}],
            ),
            m.State.ERROR,
        ),
        (pod(NEW, actual={}, allocated={}) | {"status": {"phase": "Pending"}}, m.State.AT_SIZE),
    ],
)
def test_pod_state(the_pod: dict[str, Any], state: m.State) -> None:
    assert m.pod_state(the_pod, m.desired_resources(NEW)).state is state


def test_at_size_tells_resized_in_place_from_created_so() -> None:
    want = m.desired_resources(NEW)
    assert m.pod_state(pod(NEW, generation=3), want).in_place
    assert not m.pod_state(pod(NEW, generation=1), want).in_place


def test_fingerprint_changes_with_the_resources_only() -> None:
    a = m.fingerprint(m.desired_resources(NEW))
    assert a == m.fingerprint(m.desired_resources(copy.deepcopy(NEW)))
    assert a != m.fingerprint(m.desired_resources(template(**BURSTABLE)))


PENDING = m.PodState(m.State.INFEASIBLE, "too big", since=1000.0)


@pytest.mark.parametrize(
    ("policy", "state", "now", "fits", "replace"),
    [
        ("InPlacePreferred", PENDING, 1031.0, True, True),
        ("InPlacePreferred", PENDING, 1029.0, True, False),  # not waited long enough
        ("InPlacePreferred", PENDING, 1031.0, False, False),  # would not fit anywhere
        ("InPlaceOnly", PENDING, 5000.0, True, False),
        ("InPlacePreferred", m.PodState(m.State.RESIZING), 5000.0, True, False),
        ("InPlacePreferred", m.PodState(m.State.DEFERRED, "", 1000.0), 1031.0, True, True),
    ],
)
def test_should_replace(
    policy: str, state: m.PodState, now: float, fits: bool, replace: bool
) -> None:
    the_pod = pod(NEW)
    the_pod["metadata"]["annotations"] = {"inplace.dev/resize-policy": policy}
    assert m.should_replace(the_pod, state, now=now, timeout=30.0, fits_elsewhere=fits) is replace


def node(name: str, cpu: str, memory: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": memory}},
    }


def test_fits_elsewhere_counts_what_other_nodes_hold() -> None:
    big = pod(template(requests={"cpu": "600m", "memory": "64Mi"}, limits={"memory": "1Gi"}))
    other = pod(
        template(requests={"cpu": "500m", "memory": "64Mi"}, limits={"memory": "1Gi"}),
        node="node-2",
    )
    nodes = [node("node-1", "1", "1Gi"), node("node-2", "1", "1Gi")]
    assert not m.fits_elsewhere(big, nodes, {"node-2": [other]})
    assert m.fits_elsewhere(big, nodes, {"node-2": []})
    tainted = [
        node("node-1", "1", "1Gi"),
        node("node-2", "1", "1Gi", taints=[{"key": "x", "effect": "NoSchedule"}]),
    ]
    assert not m.fits_elsewhere(big, tainted, {})
    cordoned = [node("node-1", "1", "1Gi"), node("node-2", "4", "4Gi", unschedulable=True)]
    assert not m.fits_elsewhere(big, cordoned, {})


def test_progress_condition_counts_and_names_what_waits() -> None:
    states = [
        ("a", m.PodState(m.State.AT_SIZE, in_place=True)),
        ("b", m.PodState(m.State.AT_SIZE, in_place=False)),
        ("c", m.PodState(m.State.DEFERRED, "Node didn't have enough resources: cpu")),
        ("d", m.PodState(m.State.RESIZING)),
    ]
    progress = m.summarize(states, moved=1)
    assert (progress.total, progress.at_size, progress.in_place, progress.pending) == (4, 2, 1, 2)
    cond = m.progress_condition(progress, policy="InPlaceOnly", kind="Deployment", now="T")
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "PodsResized",
        "False",
        "ResizePending",
    )
    assert cond["message"].startswith(
        "2/4 pods at the template's resources (1 resized in place, 1 moved); 1 resizing; "
        "1 pending (resize policy InPlaceOnly: they stay where they are until room appears)"
    )
    assert "c: Deferred: Node didn't have enough resources: cpu" in cond["message"]
    assert "lastUpdateTime" in cond
    done = m.summarize([("a", m.PodState(m.State.AT_SIZE, in_place=True))])
    job_cond = m.progress_condition(done, policy="InPlaceOnly", kind="Job", now="T")
    assert (job_cond["status"], job_cond["reason"]) == ("True", "AllPodsResized")
    assert "lastProbeTime" in job_cond and "lastUpdateTime" not in job_cond
    resizing = m.summarize([("d", m.PodState(m.State.RESIZING))])
    assert m.progress_condition(resizing, policy="", kind="ReplicaSet", now="T")["reason"] == (
        "ResizeInProgress"
    )


@pytest.mark.parametrize(
    ("version", "allowed"),
    [
        ({"major": "1", "minor": "33", "gitVersion": "v1.33.13"}, False),
        ({"major": "1", "minor": "33+", "gitVersion": "v1.33.5-eks-1"}, False),
        ({"major": "1", "minor": "34", "gitVersion": "v1.34.0"}, True),
        ({"major": "1", "minor": "37", "gitVersion": "v1.37.2"}, True),
        # inplace's own API server names 1.33 and applies 1.34's rule
        ({"major": "1", "minor": "33", "gitVersion": "v1.33.0+inplace.0.1.0"}, True),
        ({}, True),
    ],
)
def test_which_api_servers_let_a_memory_limit_be_lowered_in_place(
    version: dict[str, str], allowed: bool
) -> None:
    assert m.allows_memory_limit_decrease(version) is allowed
