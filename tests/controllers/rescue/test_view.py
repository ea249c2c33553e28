"""API objects read as the rescuer's values, and its patches valid pod resizes."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from inplace.api.defaults import default_pod
from inplace.api.resources import qos_class
from inplace.api.validation import validate_resize
from inplace.controllers.rescue.model import Donor, Growth, NodeRoom, Rescue, Size, plan
from inplace.controllers.rescue.snapshot import workload_lookup
from inplace.controllers.rescue.view import (
    donor_of,
    goal_of,
    growth_patch,
    lacking,
    node_rooms,
    original_resources,
    pending_of,
    shrink_patch,
    vpa_of,
)
from inplace.registry.kinds import REGISTRY
from inplace.registry.patch import apply_strategic_merge_patch
from inplace.registry.patchmeta import schema_for_kind

from .builders import node, peaks_of, pending, running, vpa

MI = 1024 * 1024
GI = 1024 * MI
_POD = REGISTRY.by_kind("", "Pod")
assert _POD is not None
_SCHEMA = schema_for_kind(_POD)
assert _SCHEMA is not None


def resized(pod: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """The pod after the patch, checked as the API server checks a pods/resize."""
    old = copy.deepcopy(pod)
    default_pod(old, True)
    new = apply_strategic_merge_patch(old, patch, _SCHEMA)  # type: ignore[arg-type]
    validate_resize(new, old)
    return new


# -- pending pods ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (pending(), {"cpu"}),
        (
            pending(message="0/3 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."),
            {"cpu", "memory"},
        ),
        (
            pending(message="0/1 nodes are available: 1 node(s) didn't match Pod's node selector."),
            set(),
        ),
        (pending(nominated="node-1"), set()),  # preemption is on its way
        (
            pending(
                message="0/1 nodes are available: 1 Insufficient cpu. preempting 1 "
                "lower-priority pod(s) on node node-1: default/low."
            ),
            set(),
        ),
        (pending(reason="SchedulingGated"), set()),
        (running("a"), set()),
    ],
    ids=["cpu", "both", "affinity", "nominated", "preempting", "gated", "bound"],
)
def test_lacking(pod: dict[str, Any], expected: set[str]) -> None:
    assert lacking(pod) == expected


# The real kube-scheduler's messages (v1.36: upstream's FitError.Error in
# pkg/scheduler/framework/types.go, "0/N nodes are available: <sorted reasons>." then the
# PostFilter's "preemption: ..."; NodeResourcesFit's "Insufficient <resource>").
UPSTREAM_MESSAGES = [
    (
        "0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's node "
        "affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims found "
        "for incoming pod, 2 Preemption is not helpful for scheduling.",
        {"memory"},
    ),
    (
        "0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't satisfy plugin(s) "
        "[NodeAffinity]. preemption: 0/3 nodes are available: 1 No preemption victims found for "
        "incoming pod, 2 Preemption is not helpful for scheduling.",
        {"memory"},
    ),
    (
        "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: 0/2 "
        "nodes are available: 2 No preemption victims found for incoming pod.",
        {"cpu", "memory"},
    ),
    (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: 0/1 "
        "nodes are available: 1 No preemption victims found for incoming pod.",
        {"cpu", "memory"},
    ),
    (
        "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/"
        "unreachable: }, 2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption "
        "is not helpful for scheduling, 2 No preemption victims found for incoming pod.",
        {"cpu"},
    ),
    (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
        set(),
    ),
    (
        "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No "
        "preemption victims found for incoming pod.",
        set(),
    ),
    ("0/2 nodes are available: 2 Insufficient ephemeral-storage.", set()),
]


@pytest.mark.parametrize(("message", "expected"), UPSTREAM_MESSAGES)
def test_lacking_reads_the_real_schedulers_messages(message: str, expected: set[str]) -> None:
    assert lacking(pending(message=message)) == expected


def test_pending_of_lists_the_nodes_the_pod_may_use() -> None:
    nodes = [
        node("plain"),
        node("not-ready", ready=False),
        node("cordoned", unschedulable=True),
        node("tainted", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
        node("labelled", labels={"disk": "ssd"}),
    ]
    plain = pending_of(pending(), nodes)
    assert plain is not None
    assert plain.nodes == {"plain", "labelled"}
    assert plain.request == Size(1000, 256 * MI)
    picky = pending_of(
        pending(
            spec={
                "nodeSelector": {"disk": "ssd"},
                "tolerations": [{"key": "gpu", "operator": "Exists"}],
            }
        ),
        nodes,
    )
    assert picky is not None and picky.nodes == {"labelled"}
    assert pending_of(running("a"), nodes) is None


def test_node_rooms_charge_what_the_scheduler_charges() -> None:
    pods = [
        running("steady", "1", "1Gi"),
        # A resize down not applied yet still holds its old size.
        running("shrinking", "500m", "512Mi", allocated={"cpu": "1", "memory": "1Gi"}),
        pending("nominated", "1", "1Gi", nominated="node-1"),
        pending("elsewhere", "1", "1Gi"),
        {**running("done"), "status": {"phase": "Succeeded"}},
    ]
    (room,) = node_rooms([node(cpu="4", memory="8Gi", pods=10)], pods)
    assert room == NodeRoom("node-1", Size(1000, 5 * GI), 7)


# -- donors ----------------------------------------------------------------------------------


def test_an_annotated_pod_is_a_donor_down_to_its_peak_plus_margin() -> None:
    pod = running("a", "2", "2Gi")
    donor = donor_of(pod, vpa=None, peaks=peaks_of({"a": Size(100, 200 * MI)}), now=1000.0)
    assert isinstance(donor, Donor)
    (share,) = donor.containers
    assert share.floor == Size(115, 230 * MI)
    assert donor.reclaimable == Size(2000 - 115, 2 * GI - 230 * MI)


@pytest.mark.parametrize(
    ("pod", "the_vpa", "why"),
    [
        (running("a", shrinkable="false"), None, "inplace.dev/shrinkable is false"),
        (running("a", shrinkable=None), None, "not inplace.dev/shrinkable"),
        (
            running("a", shrinkable=None, owner=("ReplicaSet", "web-1")),
            vpa(("Deployment", "web"), mode="Recreate"),
            "not inplace.dev/shrinkable",
        ),
        (
            running("a", allocated={"cpu": "2", "memory": "1Gi"}),
            None,
            "resizing",
        ),
        (
            running(
                "a",
                conditions=[{"type": "PodResizePending", "status": "True", "reason": "Deferred"}],
            ),
            None,
            "resizing",
        ),
        ({**running("a"), "status": {"phase": "Pending"}}, None, "not running"),
        (running("unknown"), None, "usage not known yet"),
    ],
    ids=["opted out", "not opted in", "vpa recreates", "resizing", "deferred", "pending", "usage"],
)
def test_not_donors(pod: dict[str, Any], the_vpa: dict[str, Any] | None, why: str) -> None:
    peaks = peaks_of({"a": Size(100, 100 * MI)})
    reason = donor_of(pod, vpa=the_vpa, peaks=peaks, now=1000.0)
    assert isinstance(reason, str) and reason.startswith(why), reason


def _workload(name: str, app: str, owner: tuple[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "controller": True}
        ]
    return {"metadata": meta, "spec": {"selector": {"matchLabels": {"app": app}}}}


# The Deployment ``web`` owns ReplicaSet ``web-1``; ``orphan-1``'s Deployment ``gone`` is not
# there (deleted, or not in the cache yet).
WORKLOADS = workload_lookup(
    {
        "Deployment": [_workload("web", "web")],
        "ReplicaSet": [
            _workload("web-1", "web", ("Deployment", "web")),
            _workload("orphan-1", "web", ("Deployment", "gone")),
        ],
    }
)
OLDER = "2025-06-01T00:00:00Z"


@pytest.mark.parametrize(
    ("owner", "labels", "vpas", "expected"),
    [
        (
            ("ReplicaSet", "web-1"),
            {"app": "web"},
            [vpa(("Deployment", "other"), name="a"), vpa(("Deployment", "web"), name="b")],
            "b",
        ),
        (("ReplicaSet", "orphan-1"), {"app": "web"}, [vpa(("Deployment", "gone"))], None),
        (
            ("ReplicaSet", "web-1"),
            {"app": "web"},
            [vpa(("Deployment", "web"), name="a"), vpa(("Deployment", "web"), created=OLDER)],
            "vpa",
        ),
        (
            ("ReplicaSet", "web-1"),
            {"app": "web"},
            [vpa(("Deployment", "web"), namespace="elsewhere")],
            None,
        ),
        (("ReplicaSet", "web-1"), {"app": "web"}, [vpa(("ReplicaSet", "web-1"))], None),
        (("ReplicaSet", "web-1"), {"app": "api"}, [vpa(("Deployment", "web"))], None),
    ],
    ids=[
        "the pod's deployment",
        "target missing",
        "oldest wins",
        "other namespace",
        "target has a parent",
        "selector does not match",
    ],
)
def test_vpa_of_is_the_controlling_vpa(
    owner: tuple[str, str],
    labels: dict[str, str],
    vpas: list[dict[str, Any]],
    expected: str | None,
) -> None:
    """The shared rule (``vpa_targets.controlling_vpa``), where the rescuer used to take the
    first VPA by name whose targetRef named any controller above the pod."""
    pod = running("a", shrinkable=None, owner=owner, labels=labels)
    found = vpa_of(pod, vpas, WORKLOADS)
    assert (None if found is None else found["metadata"]["name"]) == expected


def test_a_vpa_in_place_makes_a_donor_with_its_bounds() -> None:
    pod = running("a", "2", "2Gi", shrinkable=None, owner=("ReplicaSet", "web-1"))
    the_vpa = vpa(
        ("Deployment", "web"),
        lower={"cpu": "500m", "memory": "100Mi"},
        policy={"minAllowed": {"memory": "1Gi"}},
    )
    donor = donor_of(pod, vpa=the_vpa, peaks=peaks_of({"a": Size(100, 100 * MI)}), now=1000.0)
    assert isinstance(donor, Donor)
    assert donor.containers[0].floor == Size(500, GI)


def test_a_vpa_moves_only_what_it_controls() -> None:
    pod = running("a", "2", "2Gi", shrinkable=None, owner=("Job", "batch"))
    the_vpa = vpa(("Job", "batch"), mode="InPlace", policy={"controlledResources": ["cpu"]})
    donor = donor_of(pod, vpa=the_vpa, peaks=peaks_of({"a": Size(100, 100 * MI)}), now=1000.0)
    assert isinstance(donor, Donor)
    assert donor.containers[0].floor == Size(115, 2 * GI)


# -- patches ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "expect_limits", "qos"),
    [
        (None, None, "Burstable"),
        ({"cpu": "2", "memory": "2Gi"}, {"cpu": "500m", "memory": "1Gi"}, "Guaranteed"),
        ({"cpu": "4", "memory": "3Gi"}, {"cpu": "4", "memory": "3Gi"}, "Burstable"),
    ],
    ids=["no limits", "guaranteed: limits move with requests", "burstable: limits stay"],
)
def test_shrink_patch_is_a_valid_resize_that_keeps_the_qos(
    limits: dict[str, str] | None, expect_limits: dict[str, str] | None, qos: str
) -> None:
    pod = running("a", "2", "2Gi", limits=limits)
    donor = donor_of(pod, vpa=None, peaks=peaks_of({"a": Size(100, 100 * MI)}), now=1000.0)
    assert isinstance(donor, Donor)
    result = plan(
        [pending_of(pending(cpu="3500m", memory="7Gi"), [node()])],  # type: ignore[list-item]
        node_rooms([node()], [pod]),
        [donor],
    )
    (rescue,) = result.rescues
    assert isinstance(rescue, Rescue)
    after = resized(pod, shrink_patch(pod, rescue.shrinks[0]))
    resources = after["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "500m", "memory": "1Gi"}
    assert resources.get("limits") == expect_limits
    assert qos_class(after) == qos_class(pod) == qos


def test_growth_back_to_the_originals_is_exact() -> None:
    original = running("a", "2", "2Gi", limits={"cpu": "4", "memory": "2Gi"})
    remembered = json.dumps(original_resources(original))
    shrunk = running(
        "a",
        "500m",
        "1Gi",
        limits={"cpu": "4", "memory": "1Gi"},
        annotations={"inplace.dev/original-resources": remembered},
    )
    goal = goal_of(shrunk, None)
    assert goal == {"main": Size(2000, 2 * GI)}
    partial = Growth(
        "default/a", "node-1", (("main", Size(500, GI), Size(1000, GI + 512 * MI)),), False
    )
    after = resized(shrunk, growth_patch(shrunk, partial, None))
    assert after["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "1536Mi"},
        "limits": {"cpu": "4", "memory": "1536Mi"},
    }
    complete = Growth("default/a", "node-1", (("main", Size(500, GI), Size(2000, 2 * GI)),), True)
    after = resized(shrunk, growth_patch(shrunk, complete, None))
    assert (
        after["spec"]["containers"][0]["resources"]
        == original["spec"]["containers"][0]["resources"]
    )


def test_growth_goal_is_the_vpa_target_when_a_vpa_acts_in_place() -> None:
    shrunk = running(
        "a",
        "500m",
        "1Gi",
        shrinkable=None,
        owner=("Job", "batch"),
        annotations={
            "inplace.dev/original-resources": json.dumps(
                {"main": {"requests": {"cpu": "2", "memory": "2Gi"}}}
            )
        },
    )
    the_vpa = vpa(("Job", "batch"), target_rec={"cpu": "800m", "memory": "1500Mi"})
    assert goal_of(shrunk, the_vpa) == {"main": Size(800, 1500 * MI)}
    assert goal_of(shrunk, None) == {"main": Size(2000, 2 * GI)}
