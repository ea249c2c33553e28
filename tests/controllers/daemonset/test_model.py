"""The DaemonSet controller's decisions, tabled: which nodes run a daemon pod, what manage
creates and deletes, the rolling update under maxUnavailable and maxSurge, the in-place
rule, the status counts and the history kept."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.controllers.daemonset.model import (
    REVISION_HASH_LABEL,
    TEMPLATE_GENERATION_ANNOTATION,
    TEMPLATE_GENERATION_LABEL,
    daemon_pod_template,
    daemon_set_status,
    desired_counts,
    history_to_clean,
    in_place_adoptions,
    is_pod_updated,
    manage,
    node_should_run,
    pods_by_node,
    rolling_update,
    split_history,
    status_unchanged,
    target_node,
    with_daemon_tolerations,
    with_node_affinity,
)
from inplace.controllers.history import new_revision

T0 = 1767225600.0  # 2026-01-01T00:00:00Z
LONG_AGO = "2025-12-31T00:00:00Z"
JUST_NOW = "2026-01-01T00:00:00Z"
NOW = T0 + 5


def node(
    name: str,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    *,
    unschedulable: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def daemon_set(
    spec: dict[str, Any] | None = None,
    *,
    strategy: dict[str, Any] | None = None,
    min_ready: int = 0,
    generation: int | None = 2,
    history_limit: int | None = None,
) -> dict[str, Any]:
    ds_spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": spec or {"containers": [{"name": "c", "image": "busybox"}]},
        },
        "updateStrategy": strategy
        or {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
    }
    if min_ready:
        ds_spec["minReadySeconds"] = min_ready
    if history_limit is not None:
        ds_spec["revisionHistoryLimit"] = history_limit
    meta: dict[str, Any] = {"name": "d", "namespace": "default", "uid": "ds-uid", "generation": 3}
    if generation is not None:
        meta["annotations"] = {TEMPLATE_GENERATION_ANNOTATION: str(generation)}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": ds_spec}


def pod(
    name: str,
    node_name: str | None,
    hash_: str = "new",
    *,
    phase: str = "Running",
    ready_at: str | None = LONG_AGO,
    created: str = LONG_AGO,
    deleting: bool = False,
    bound: bool = True,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "labels": {"app": "d", REVISION_HASH_LABEL: hash_},
        "creationTimestamp": created,
        "resourceVersion": "1",
    }
    if deleting:
        meta["deletionTimestamp"] = JUST_NOW
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node_name is not None:
        spec = with_node_affinity(spec, node_name)
        if bound:
            spec["nodeName"] = node_name
    conditions = []
    if ready_at is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": ready_at})
    return {"metadata": meta, "spec": spec, "status": {"phase": phase, "conditions": conditions}}


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


# -- which nodes --------------------------------------------------------------------------------


def taint(key: str, effect: str, value: str = "") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tolerate(key: str, effect: str = "") -> dict[str, str]:
    out = {"key": key, "operator": "Exists"}
    if effect:
        out["effect"] = effect
    return out


def containers(**extra: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "busybox"}], **extra}


def required(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]
            }
        }
    }


@pytest.mark.parametrize(
    ("spec", "the_node", "expected"),
    [
        pytest.param(containers(), node("n1"), (True, True), id="any node"),
        pytest.param(
            containers(nodeSelector={"disk": "ssd"}),
            node("n1", {"disk": "ssd"}),
            (True, True),
            id="nodeSelector matches",
        ),
        pytest.param(
            containers(nodeSelector={"disk": "ssd"}),
            node("n1", {"disk": "hdd"}),
            (False, False),
            id="nodeSelector does not match",
        ),
        pytest.param(
            containers(affinity=required({"key": "zone", "operator": "In", "values": ["a"]})),
            node("n1", {"zone": "a"}),
            (True, True),
            id="required affinity matches",
        ),
        pytest.param(
            containers(affinity=required({"key": "zone", "operator": "In", "values": ["a"]})),
            node("n1", {"zone": "b"}),
            (False, False),
            id="required affinity does not match",
        ),
        pytest.param(containers(nodeName="n2"), node("n1"), (False, False), id="nodeName other"),
        pytest.param(containers(nodeName="n1"), node("n1"), (True, True), id="nodeName this"),
        pytest.param(
            containers(),
            node("n1", taints=[taint("dedicated", "NoSchedule", "x")]),
            (False, True),
            id="NoSchedule untolerated: no new pod, a running one stays",
        ),
        pytest.param(
            containers(tolerations=[tolerate("dedicated", "NoSchedule")]),
            node("n1", taints=[taint("dedicated", "NoSchedule", "x")]),
            (True, True),
            id="NoSchedule tolerated",
        ),
        pytest.param(
            containers(),
            node("n1", taints=[taint("dedicated", "NoExecute", "x")]),
            (False, False),
            id="NoExecute untolerated: the running pod goes too",
        ),
        pytest.param(
            containers(tolerations=[tolerate("dedicated")]),
            node("n1", taints=[taint("dedicated", "NoExecute", "x")]),
            (True, True),
            id="NoExecute tolerated",
        ),
        pytest.param(
            containers(),
            node("n1", taints=[taint("dedicated", "PreferNoSchedule", "x")]),
            (True, True),
            id="PreferNoSchedule is no bar",
        ),
        pytest.param(
            containers(),
            node("n1", taints=[taint("node.kubernetes.io/not-ready", "NoExecute")]),
            (True, True),
            id="not-ready tolerated by every daemon pod",
        ),
        pytest.param(
            containers(),
            node("n1", taints=[taint("node.kubernetes.io/unreachable", "NoExecute")]),
            (True, True),
            id="unreachable tolerated",
        ),
        pytest.param(
            containers(),
            node(
                "n1",
                taints=[
                    taint("node.kubernetes.io/disk-pressure", "NoSchedule"),
                    taint("node.kubernetes.io/memory-pressure", "NoSchedule"),
                    taint("node.kubernetes.io/pid-pressure", "NoSchedule"),
                ],
            ),
            (True, True),
            id="pressure taints tolerated",
        ),
        pytest.param(
            containers(),
            node(
                "n1",
                taints=[taint("node.kubernetes.io/unschedulable", "NoSchedule")],
                unschedulable=True,
            ),
            (True, True),
            id="an unschedulable (cordoned) node still runs daemon pods",
        ),
        pytest.param(
            containers(),
            node("n1", taints=[taint("node.kubernetes.io/network-unavailable", "NoSchedule")]),
            (False, True),
            id="network-unavailable keeps out pod-network pods",
        ),
        pytest.param(
            containers(hostNetwork=True),
            node("n1", taints=[taint("node.kubernetes.io/network-unavailable", "NoSchedule")]),
            (True, True),
            id="network-unavailable tolerated by hostNetwork pods",
        ),
    ],
)
def test_node_should_run(
    spec: dict[str, Any], the_node: dict[str, Any], expected: tuple[bool, bool]
) -> None:
    assert node_should_run(the_node, daemon_set(spec)) == expected


def test_daemon_tolerations_replace_a_same_toleration_and_keep_the_others() -> None:
    spec = containers(
        tolerations=[
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            tolerate("dedicated", "NoSchedule"),
        ]
    )
    tolerations = with_daemon_tolerations(spec)["tolerations"]
    assert tolerations[0] == {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
    }
    assert tolerations[1] == tolerate("dedicated", "NoSchedule")
    assert [t["key"] for t in tolerations[2:]] == [
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    ]
    assert spec["tolerations"][0]["tolerationSeconds"] == 300  # the input is left alone


def test_pod_template_carries_the_revision_labels_and_tolerations() -> None:
    template = daemon_pod_template(daemon_set(), "h1")
    assert template["metadata"]["labels"] == {
        "app": "d",
        REVISION_HASH_LABEL: "h1",
        TEMPLATE_GENERATION_LABEL: "2",
    }
    assert len(template["spec"]["tolerations"]) == 6
    no_generation = daemon_pod_template(daemon_set(generation=None), "h1")
    assert TEMPLATE_GENERATION_LABEL not in no_generation["metadata"]["labels"]


def test_node_affinity_replaces_required_terms_and_keeps_the_rest() -> None:
    preferred = [{"weight": 1, "preference": {"matchExpressions": []}}]
    spec = containers(
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["x"]}
                            ]
                        }
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": preferred,
            },
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
        }
    )
    out = with_node_affinity(spec, "n2")
    node_affinity = out["affinity"]["nodeAffinity"]
    assert node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
        ]
    }
    assert node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] == preferred
    assert "podAntiAffinity" in out["affinity"]
    assert target_node({"spec": out}) == "n2"
    assert target_node({"spec": {**out, "nodeName": "n3"}}) == "n3"
    assert target_node({"spec": containers()}) is None


def test_is_pod_updated_by_hash_or_generation() -> None:
    p = pod("p", "n1", "old")
    assert not is_pod_updated(p, "new", 2)
    assert is_pod_updated(p, "old", 2)
    p["metadata"]["labels"][TEMPLATE_GENERATION_LABEL] = "2"
    assert is_pod_updated(p, "new", 2)
    assert not is_pod_updated(p, "new", None)


def test_pods_by_node_skips_finished_pods_being_deleted_and_pods_without_a_node() -> None:
    pods = [
        pod("a", "n1"),
        pod("b", "n1", phase="Failed", deleting=True),
        pod("c", "n2", bound=False),
        pod("d", None),
    ]
    assert {k: names(v) for k, v in pods_by_node(pods).items()} == {"n1": ["a"], "n2": ["c"]}
    with_all = pods_by_node(pods, include_deleted_terminal=True)
    assert names(with_all["n1"]) == ["a", "b"]


# -- manage -------------------------------------------------------------------------------------


def test_manage_creates_on_eligible_nodes_without_a_pod_and_deletes_misscheduled() -> None:
    ds = daemon_set(containers(nodeSelector={"role": "x"}))
    nodes = [
        node("n1", {"role": "x"}),
        node("n2", {"role": "x"}),
        node("n3"),  # not selected
    ]
    by_node = pods_by_node([pod("p1", "n1"), pod("p3", "n3")])
    plan = manage(ds, nodes, by_node, "new", NOW)
    assert plan.create_on == ["n2"]
    assert names(plan.delete) == ["p3"]


def test_manage_tainted_node_keeps_its_pod_unless_no_execute() -> None:
    ds = daemon_set()
    nodes = [
        node("n1", taints=[taint("dedicated", "NoSchedule", "x")]),
        node("n2", taints=[taint("dedicated", "NoSchedule", "x")]),
        node("n3", taints=[taint("dedicated", "NoExecute", "x")]),
    ]
    by_node = pods_by_node([pod("p1", "n1"), pod("p3", "n3")])
    plan = manage(ds, nodes, by_node, "new", NOW)
    assert plan.create_on == []  # n2 gets no new pod
    assert names(plan.delete) == ["p3"]  # p1 keeps running


def test_manage_trims_duplicates_keeping_the_oldest() -> None:
    by_node = pods_by_node(
        [
            pod("young", "n1", created="2026-01-01T00:00:03Z"),
            pod("old", "n1", created="2026-01-01T00:00:01Z"),
            pod("unbound", "n1", created="2025-01-01T00:00:00Z", bound=False),
        ]
    )
    plan = manage(daemon_set(), [node("n1")], by_node, "new", NOW)
    assert names(plan.delete) == ["young", "unbound"]
    assert plan.create_on == []


def test_manage_failed_succeeded_and_deleting_pods() -> None:
    by_node = pods_by_node(
        [
            pod("failed", "n1", phase="Failed"),
            pod("done", "n2", phase="Succeeded"),
            pod("going", "n3", deleting=True),
        ]
    )
    nodes = [node("n1"), node("n2"), node("n3")]
    plan = manage(daemon_set(), nodes, by_node, "new", NOW)
    assert [(p["metadata"]["name"], n) for p, n in plan.failed] == [("failed", "n1")]
    assert [(p["metadata"]["name"], n) for p, n in plan.succeeded] == [("done", "n2")]
    # A node's replacement is made once the failed or deleted pod is gone.
    assert plan.create_on == []
    assert plan.delete == []


def test_manage_deletes_pending_pods_for_a_node_that_is_gone() -> None:
    by_node = pods_by_node([pod("waiting", "gone", bound=False), pod("bound", "gone2")])
    plan = manage(daemon_set(), [node("n1")], by_node, "new", NOW)
    assert plan.create_on == ["n1"]
    assert names(plan.delete) == ["waiting"]  # a bound one is the pod GC's


SURGE = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}


@pytest.mark.parametrize(
    ("pods", "create", "delete"),
    [
        pytest.param([], ["n1"], [], id="no pod: create"),
        pytest.param([pod("o", "n1", "old")], [], [], id="one old pod: rolling update decides"),
        pytest.param(
            [pod("o", "n1", "old"), pod("n", "n1", "new", ready_at=None, created=JUST_NOW)],
            [],
            [],
            id="new not ready yet: both stay",
        ),
        pytest.param(
            [pod("o", "n1", "old"), pod("n", "n1", "new", created=JUST_NOW)],
            [],
            ["o"],
            id="new available: old goes",
        ),
        pytest.param(
            [pod("o", "n1", "old", ready_at=None), pod("n", "n1", "new", ready_at=None)],
            [],
            ["o"],
            id="old not ready: old goes",
        ),
        pytest.param(
            [
                pod("o", "n1", "old"),
                pod("o2", "n1", "old", created=JUST_NOW),
                pod("n", "n1", "new", ready_at=None),
                pod("n2", "n1", "new", ready_at=None, created=JUST_NOW),
            ],
            [],
            ["o2", "n2"],
            id="extra old and new pods go",
        ),
        pytest.param([pod("g", "n1", "new", deleting=True)], ["n1"], [], id="deleting: create"),
    ],
)
def test_manage_with_surge(
    pods: list[dict[str, Any]], create: list[str], delete: list[str]
) -> None:
    plan = manage(daemon_set(strategy=SURGE), [node("n1")], pods_by_node(pods), "new", NOW)
    assert plan.create_on == create
    assert sorted(names(plan.delete)) == sorted(delete)


# -- rolling update -------------------------------------------------------------------------------


def rolling(max_unavailable: Any = 1, max_surge: Any = 0) -> dict[str, Any]:
    return {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": max_unavailable, "maxSurge": max_surge},
    }


FOUR = [node(f"n{i}") for i in range(1, 5)]


@pytest.mark.parametrize(
    ("strategy", "pods", "min_ready", "delete"),
    [
        pytest.param(
            rolling(1),
            [pod(f"p{i}", f"n{i}", "old") for i in range(1, 5)],
            0,
            ["p1"],
            id="maxUnavailable 1: one old pod at a time",
        ),
        pytest.param(
            rolling(2),
            [pod(f"p{i}", f"n{i}", "old") for i in range(1, 5)],
            0,
            ["p1", "p2"],
            id="maxUnavailable 2",
        ),
        pytest.param(
            rolling("50%"),
            [pod(f"p{i}", f"n{i}", "old") for i in range(1, 5)],
            0,
            ["p1", "p2"],
            id="maxUnavailable 50% of 4",
        ),
        pytest.param(
            rolling("10%"),
            [pod(f"p{i}", f"n{i}", "old") for i in range(1, 5)],
            0,
            ["p1"],
            id="maxUnavailable 10% rounds up",
        ),
        pytest.param(
            rolling(1),
            [pod("p1", "n1", "new", ready_at=None)]
            + [pod(f"p{i}", f"n{i}", "old") for i in range(2, 5)],
            0,
            [],
            id="a new pod not ready holds the budget",
        ),
        pytest.param(
            rolling(1),
            [pod("p1", "n1", "new", ready_at=JUST_NOW)]
            + [pod(f"p{i}", f"n{i}", "old") for i in range(2, 5)],
            30,
            [],
            id="minReadySeconds: ready but not yet available holds the budget",
        ),
        pytest.param(
            rolling(1),
            [pod("p1", "n1", "new", ready_at=LONG_AGO)]
            + [pod(f"p{i}", f"n{i}", "old") for i in range(2, 5)],
            30,
            ["p2"],
            id="minReadySeconds passed: the next one",
        ),
        pytest.param(
            rolling(1),
            [pod(f"p{i}", f"n{i}", "old") for i in range(1, 4)],
            0,
            [],
            id="a node without a pod counts as unavailable",
        ),
        pytest.param(
            rolling(1),
            [pod("p1", "n1", "old", ready_at=None), pod("p2", "n2", "old", ready_at=None)]
            + [pod(f"p{i}", f"n{i}", "old") for i in range(3, 5)],
            0,
            ["p1", "p2"],
            id="old pods not available are replaced beyond the budget",
        ),
        pytest.param(
            rolling(0, 0),
            [pod(f"p{i}", f"n{i}", "old") for i in range(1, 5)],
            0,
            ["p1"],
            id="neither surge nor unavailability: one at a time",
        ),
    ],
)
def test_rolling_update_without_surge(
    strategy: dict[str, Any], pods: list[dict[str, Any]], min_ready: int, delete: list[str]
) -> None:
    ds = daemon_set(strategy=strategy, min_ready=min_ready)
    plan = rolling_update(ds, FOUR, pods_by_node(pods), "new", NOW)
    assert names(plan.delete) == delete
    assert plan.create_on == []


@pytest.mark.parametrize(
    ("max_surge", "pods", "create", "delete"),
    [
        pytest.param(
            1,
            [pod(f"p{i}", f"n{i}", "old") for i in range(1, 5)],
            ["n1"],
            [],
            id="maxSurge 1: one new pod beside its old one",
        ),
        pytest.param(
            "50%",
            [pod(f"p{i}", f"n{i}", "old") for i in range(1, 5)],
            ["n1", "n2"],
            [],
            id="maxSurge 50%",
        ),
        pytest.param(
            1,
            [pod("p1", "n1", "old"), pod("q1", "n1", "new", ready_at=None)]
            + [pod(f"p{i}", f"n{i}", "old") for i in range(2, 5)],
            [],
            [],
            id="a surge pod not available yet holds the budget",
        ),
        pytest.param(
            1,
            [pod("p1", "n1", "old"), pod("q1", "n1", "new")]
            + [pod(f"p{i}", f"n{i}", "old") for i in range(2, 5)],
            ["n2"],
            ["p1"],
            id="surge pod available: its old pod goes, the next node surges",
        ),
        pytest.param(
            1,
            [pod("p1", "n1", "old", ready_at=None), pod("p2", "n2", "old", ready_at=None)]
            + [pod(f"p{i}", f"n{i}", "old") for i in range(3, 5)],
            ["n1", "n2", "n3"],
            [],
            id="unavailable old pods are surged beyond the budget",
        ),
    ],
)
def test_rolling_update_with_surge(
    max_surge: Any, pods: list[dict[str, Any]], create: list[str], delete: list[str]
) -> None:
    ds = daemon_set(strategy=rolling(0, max_surge))
    plan = rolling_update(ds, FOUR, pods_by_node(pods), "new", NOW)
    assert plan.create_on == create
    assert names(plan.delete) == delete


def test_surge_keeps_a_pod_on_a_node_the_daemon_set_left_until_enough_are_available() -> None:
    ds = daemon_set(containers(nodeSelector={"role": "x"}), strategy=rolling(0, 1))
    nodes = [node("n1", {"role": "x"}), node("n2")]  # n2 no longer selected
    pods = [pod("p1", "n1", "new", ready_at=None), pod("p2", "n2", "old")]
    assert rolling_update(ds, nodes, pods_by_node(pods), "new", NOW).delete == []
    pods[0] = pod("p1", "n1", "new")
    assert names(rolling_update(ds, nodes, pods_by_node(pods), "new", NOW).delete) == ["p2"]


def test_desired_counts_and_on_delete() -> None:
    assert desired_counts(daemon_set(strategy=rolling("25%", 0)), FOUR)[:3] == (0, 1, 4)
    on_delete = daemon_set(strategy={"type": "OnDelete"})
    # OnDelete has no budget of its own; only the one-at-a-time floor.
    assert desired_counts(on_delete, FOUR)[:3] == (0, 1, 4)


# -- the in-place rule ---------------------------------------------------------------------------


def resources(cpu: str, memory: str = "64Mi", *, limits: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        out["limits"] = {"cpu": cpu, "memory": memory}
    return out


def template(cpu: str, image: str = "busybox", *, limits: bool = False) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "d"}},
        "spec": {
            "containers": [
                {"name": "c", "image": image, "resources": resources(cpu, limits=limits)}
            ]
        },
    }


def revision(ds: dict[str, Any], tmpl: dict[str, Any], number: int, hash_: str) -> dict[str, Any]:
    return new_revision(ds, tmpl, number, hash_=hash_)


@pytest.mark.parametrize(
    ("new_template", "moved"),
    [
        pytest.param(template("200m"), True, id="cpu request only: moved in place"),
        pytest.param(template("100m", image="nginx"), False, id="image: replaced"),
        pytest.param(template("200m", limits=True), False, id="QoS class changes: replaced"),
    ],
)
def test_in_place_adoption_or_replacement(new_template: dict[str, Any], moved: bool) -> None:
    ds = daemon_set()
    old_rev = revision(ds, template("100m"), 1, "old")
    new_rev = revision(ds, new_template, 2, "new")
    pods = [pod("p1", "n1", "old"), pod("p2", "n2", "new"), pod("p3", "n3", "old", deleting=True)]
    adoptions = in_place_adoptions(pods_by_node(pods), [old_rev, new_rev], new_rev, "new", 2)
    if moved:
        assert [(p["metadata"]["name"], labels) for p, labels in adoptions] == [
            ("p1", {REVISION_HASH_LABEL: "new", TEMPLATE_GENERATION_LABEL: "2"})
        ]
    else:
        assert adoptions == []


def test_a_pod_of_an_unknown_revision_is_replaced() -> None:
    ds = daemon_set()
    new_rev = revision(ds, template("200m"), 2, "new")
    pods = [pod("p1", "n1", "pruned")]
    assert in_place_adoptions(pods_by_node(pods), [new_rev], new_rev, "new", 2) == []


# -- status ---------------------------------------------------------------------------------------


def test_status_counts() -> None:
    ds = daemon_set(containers(nodeSelector={"role": "x"}), min_ready=30)
    nodes = [
        node("n1", {"role": "x"}),
        node("n2", {"role": "x"}),
        node("n3", {"role": "x"}),
        node("n4", {"role": "x"}),
        node("n5"),
    ]
    pods = [
        pod("p1", "n1", "new"),  # available, updated
        pod("p2", "n2", "old", ready_at=JUST_NOW),  # ready, not available yet
        pod("p3", "n3", "new", ready_at=None),  # not ready
        pod("p5", "n5", "new"),  # misscheduled
    ]
    counts = daemon_set_status(ds, nodes, pods_by_node(pods), "new", NOW)
    assert counts == {
        "desiredNumberScheduled": 4,
        "currentNumberScheduled": 3,
        "numberMisscheduled": 1,
        "numberReady": 2,
        "updatedNumberScheduled": 2,
        "numberAvailable": 1,
        "numberUnavailable": 3,
    }
    ds["status"] = {**counts, "observedGeneration": 2}
    assert not status_unchanged(ds, counts)  # generation 3 not observed yet
    ds["status"]["observedGeneration"] = 3
    assert status_unchanged(ds, counts)


def test_status_judges_a_node_by_its_oldest_pod() -> None:
    pods = [
        pod("young", "n1", "new", created="2026-01-01T00:00:02Z"),
        pod("old", "n1", "old", ready_at=None, created="2026-01-01T00:00:01Z"),
    ]
    counts = daemon_set_status(daemon_set(), [node("n1")], pods_by_node(pods), "new", NOW)
    assert counts["numberReady"] == 0
    assert counts["updatedNumberScheduled"] == 0


# -- history --------------------------------------------------------------------------------------


def test_split_history_matches_semantically() -> None:
    ds = daemon_set()
    current = revision(ds, ds["spec"]["template"], 3, "c")
    written_differently = revision(
        ds,
        {
            **ds["spec"]["template"],
            "metadata": {**ds["spec"]["template"]["metadata"], "annotations": {}},
        },
        4,
        "d",
    )
    other = revision(ds, template("1"), 1, "o")
    cur, old = split_history(ds, [other, current, written_differently])
    assert [r["revision"] for r in cur] == [3, 4]
    assert [r["revision"] for r in old] == [1]


@pytest.mark.parametrize(
    ("limit", "live", "deleted"),
    [
        pytest.param(10, set(), [], id="within the limit"),
        pytest.param(2, set(), [1, 2], id="oldest go first"),
        pytest.param(2, {"h1"}, [2, 3], id="a revision a pod carries stays and counts"),
        pytest.param(0, {"h4"}, [1, 2, 3], id="limit 0: all but the live ones"),
    ],
)
def test_history_to_clean(limit: int, live: set[str], deleted: list[int]) -> None:
    ds = daemon_set(history_limit=limit)
    old = [revision(ds, template(f"{i}"), i, f"h{i}") for i in (4, 2, 1, 3)]
    pods = [pod(f"p-{h}", "n1", h) for h in live]
    assert [r["revision"] for r in history_to_clean(ds, old, pods)] == deleted
