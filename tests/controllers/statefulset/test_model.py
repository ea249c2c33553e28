"""The StatefulSet controller's decisions, table by table: ordered and parallel creation, the
readiness and availability waits, scale-down order, failed pods, the rolling update
(partition, maxUnavailable), OnDelete, claims and their retention, the in-place rule, status."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from inplace.controllers.history import find_equal, new_revision, sort_revisions
from inplace.controllers.statefulset.claims import (
    claim_owners_up_to_date,
    claims_for_ordinal,
    updated_claim_owners,
)
from inplace.controllers.statefulset.model import (
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    Action,
    AdoptRevision,
    CreateClaims,
    CreatePod,
    DeletePod,
    Fail,
    MendIdentity,
    Plan,
    SetClaimOwners,
    choose_update_revision,
    is_member,
    new_pod,
    ordinal_of,
    parent_and_ordinal,
    plan,
    settle_status,
    status_differs,
)

T0 = 1767225600.0  # 2026-01-01T00:00:00Z
LONG_AGO = "2025-12-31T23:00:00Z"
JUST_NOW = "2026-01-01T00:00:00Z"
SET_UID = "set-uid"

Obj = dict[str, Any]


def template(image: str = "busybox", memory: str = "64Mi") -> Obj:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "command": ["sleep", "3600"],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "32Mi"},
                        "limits": {"memory": memory},
                    },
                }
            ]
        },
    }


def statefulset(replicas: int = 3, **spec: Any) -> Obj:
    body: Obj = {
        "replicas": replicas,
        "serviceName": "nginx",
        "selector": {"matchLabels": {"app": "web"}},
        "template": template(),
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "revisionHistoryLimit": 10,
    }
    body.update(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default", "uid": SET_UID, "generation": 1},
        "spec": body,
        "status": {},
    }


def revision(sts: Obj, tmpl: Obj, number: int) -> Obj:
    rev = new_revision(sts, tmpl, number, 0)
    rev["metadata"]["uid"] = f"rev-{number}"
    return rev


REV1 = revision(statefulset(), template(), 1)
REV2_RESOURCES = revision(statefulset(), template(memory="128Mi"), 2)
REV2_IMAGE = revision(statefulset(), template(image="busybox:2"), 2)
R1, R2 = REV1["metadata"]["name"], REV2_RESOURCES["metadata"]["name"]
R2_IMAGE = REV2_IMAGE["metadata"]["name"]


def pod(
    ordinal: int,
    phase: str = "Running",
    *,
    ready: str | None = LONG_AGO,
    rev: Obj = REV1,
    terminating: bool = False,
    sts: Obj | None = None,
) -> Obj:
    made = new_pod(sts or statefulset(), _template_of(rev), ordinal, rev["metadata"]["name"])
    made["metadata"]["uid"] = f"pod-{ordinal}"
    if terminating:
        made["metadata"]["deletionTimestamp"] = JUST_NOW
    conditions = []
    if ready is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": ready})
    made["status"] = {"phase": phase, "conditions": conditions}
    return made


def _template_of(rev: Obj) -> Obj:
    tmpl = copy.deepcopy(rev["data"]["spec"]["template"])
    tmpl.pop("$patch", None)
    return dict(tmpl)


def run(
    sts: Obj,
    pods: list[Obj],
    *,
    current: Obj = REV1,
    update: Obj = REV1,
    claims: dict[str, Obj] | None = None,
    now: float = T0,
) -> Plan:
    revisions = [current] if current is update else [current, update]
    return plan(sts, pods, revisions, current, update, claims or {}, collision_count=0, now=now)


def actions(result: Plan) -> list[tuple[str, str]]:
    """Each action as (its kind, the name of the pod or claim it is about), in plan order."""
    out: list[tuple[str, str]] = []
    for phase in result.phases:
        for step in phase.steps:
            out.extend(describe(a) for a in step)
    return out


def describe(action: Action) -> tuple[str, str]:
    if isinstance(action, SetClaimOwners):
        return ("owners", action.claim["metadata"]["name"])
    kind = {
        CreatePod: "create",
        DeletePod: "delete",
        CreateClaims: "claims",
        MendIdentity: "mend",
        AdoptRevision: "adopt",
        Fail: "fail",
    }[type(action)]
    return (kind, action.pod["metadata"]["name"])


# -- identity --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "parent", "ordinal"),
    [
        ("web-0", "web", 0),
        ("web-12", "web", 12),
        ("my-web-3", "my-web", 3),
        ("web", "", -1),
        ("web-x", "", -1),
        ("web-99999999999", "web", -1),
    ],
)
def test_parent_and_ordinal(name: str, parent: str, ordinal: int) -> None:
    assert parent_and_ordinal(name) == (parent, ordinal)


def test_membership_is_by_name() -> None:
    sts = statefulset()
    assert is_member(sts, {"metadata": {"name": "web-4"}})
    assert not is_member(sts, {"metadata": {"name": "webby-4"}})
    assert not is_member(sts, {"metadata": {"name": "web"}})


def test_a_new_pod_has_its_identity_and_its_claims() -> None:
    sts = statefulset(
        volumeClaimTemplates=[{"metadata": {"name": "www"}, "spec": {"accessModes": ["RWO"]}}]
    )
    made = new_pod(sts, template(), 2, R1)
    meta, spec = made["metadata"], made["spec"]
    assert meta["name"] == "web-2" and "generateName" not in meta
    assert meta["labels"] == {
        "app": "web",
        POD_NAME_LABEL: "web-2",
        POD_INDEX_LABEL: "2",
        "controller-revision-hash": R1,
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "name": "web",
            "uid": SET_UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert spec["hostname"] == "web-2" and spec["subdomain"] == "nginx"
    assert spec["volumes"] == [{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-2"}}]


# -- creation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([], [("create", "web-0")]),
        ([pod(0)], [("create", "web-1")]),
        ([pod(0), pod(1)], [("create", "web-2")]),
        ([pod(0), pod(1), pod(2)], []),
        # waiting: Pending, Running but not Ready, Ready but terminating
        ([pod(0, "Pending", ready=None)], []),
        ([pod(0, ready=None)], []),
        ([pod(0, terminating=True)], []),
        # a gap is filled before anything above it
        ([pod(0), pod(2)], [("create", "web-1")]),
    ],
)
def test_ordered_ready_creates_one_pod_at_a_time_in_order(
    pods: list[Obj], expected: list[tuple[str, str]]
) -> None:
    assert actions(run(statefulset(), pods)) == expected


def test_ordered_ready_waits_for_min_ready_seconds() -> None:
    sts = statefulset(minReadySeconds=10)
    young = [pod(0, ready=JUST_NOW)]
    assert actions(run(sts, young, now=T0 + 5)) == []
    assert actions(run(sts, young, now=T0 + 10)) == [("create", "web-1")]


def test_parallel_creates_every_missing_pod_at_once() -> None:
    sts = statefulset(podManagementPolicy="Parallel")
    result = run(sts, [pod(1, "Pending", ready=None)])
    assert actions(result) == [("create", "web-0"), ("create", "web-2")]
    assert [p.parallel for p in result.phases] == [True]


def test_ordinals_start_names_the_pods() -> None:
    sts = statefulset(2, ordinals={"start": 5})
    assert actions(run(sts, [])) == [("create", "web-5")]
    running = [pod(5, sts=sts), pod(6, sts=sts), pod(0, sts=sts)]
    assert actions(run(sts, running)) == [("delete", "web-0")]


# -- scale down ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([pod(0), pod(1), pod(2)], [("delete", "web-2")]),
        ([pod(0), pod(1)], [("delete", "web-1")]),
        # the highest is still terminating: wait for it
        ([pod(0), pod(1), pod(2, terminating=True)], []),
        # a not ready pod above blocks, unless it is the first unavailable one
        ([pod(0), pod(1, ready=None), pod(2)], [("delete", "web-2")]),
        ([pod(0), pod(1), pod(2, ready=None)], [("delete", "web-2")]),
        # nothing is deleted while a remaining replica is not ready
        ([pod(0, ready=None), pod(1), pod(2)], []),
    ],
)
def test_ordered_ready_scales_down_from_the_highest_ordinal_one_at_a_time(
    pods: list[Obj], expected: list[tuple[str, str]]
) -> None:
    assert actions(run(statefulset(1), pods)) == expected


def test_ordered_ready_waits_for_a_not_ready_condemned_pod_above_the_first_unavailable() -> None:
    pods = [pod(0), pod(1), pod(2, ready=None), pod(3, ready=None)]
    # web-3 is not ready and web-2 (lower) is the first unavailable: web-3 waits
    assert actions(run(statefulset(1), pods)) == []


def test_parallel_scales_down_every_condemned_pod() -> None:
    sts = statefulset(1, podManagementPolicy="Parallel")
    pods = [pod(0), pod(1, ready=None), pod(2), pod(3, terminating=True)]
    assert actions(run(sts, pods)) == [("delete", "web-2"), ("delete", "web-1")]


# -- failed pods -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([pod(0), pod(1, "Failed", ready=None), pod(2)], [("delete", "web-1")]),
        ([pod(0, "Succeeded", ready=None)], [("delete", "web-0")]),
        # already being deleted: wait, then it is made again (a missing slot)
        ([pod(0), pod(1, "Failed", ready=None, terminating=True)], []),
        ([pod(0)], [("create", "web-1")]),
    ],
)
def test_a_failed_pod_is_deleted_then_made_again(
    pods: list[Obj], expected: list[tuple[str, str]]
) -> None:
    assert actions(run(statefulset(), pods)) == expected


def test_parallel_deletes_failed_pods_and_goes_on() -> None:
    sts = statefulset(podManagementPolicy="Parallel")
    pods = [pod(0, "Failed", ready=None), pod(2)]
    assert actions(run(sts, pods)) == [("delete", "web-0"), ("create", "web-1")]


# -- rolling update --------------------------------------------------------------------------


def image_update(**strategy: Any) -> tuple[Obj, list[Obj]]:
    sts = statefulset(template=template(image="busybox:2"))
    if strategy:
        sts["spec"]["updateStrategy"]["rollingUpdate"] = strategy
    return sts, [pod(0), pod(1), pod(2)]


@pytest.mark.parametrize(
    ("at_update", "expected"),
    [
        ((), [("delete", "web-2")]),
        ((2,), [("delete", "web-1")]),
        ((1, 2), [("delete", "web-0")]),
        ((0, 1, 2), []),
    ],
)
def test_rolling_update_replaces_pods_in_reverse_ordinal_order(
    at_update: tuple[int, ...], expected: list[tuple[str, str]]
) -> None:
    sts, pods = image_update()
    pods = [pod(i, rev=REV2_IMAGE) if i in at_update else p for i, p in enumerate(pods)]
    assert actions(run(sts, pods, update=REV2_IMAGE)) == expected


def test_rolling_update_waits_for_the_replaced_pod() -> None:
    sts, _ = image_update()
    pods = [pod(0), pod(1), pod(2, "Pending", ready=None, rev=REV2_IMAGE)]
    assert actions(run(sts, pods, update=REV2_IMAGE)) == []
    # Parallel: past the ordered waits, the budget (one unavailable) still holds it
    sts["spec"]["podManagementPolicy"] = "Parallel"
    assert actions(run(sts, pods, update=REV2_IMAGE)) == []


def test_a_replaced_pod_is_made_at_the_update_revision() -> None:
    sts, _ = image_update()
    result = run(sts, [pod(0), pod(1)], update=REV2_IMAGE)
    (step,) = result.phases[0].steps
    (create,) = step
    assert isinstance(create, CreatePod)
    labels = create.pod["metadata"]["labels"]
    assert labels["controller-revision-hash"] == R2_IMAGE
    assert create.pod["spec"]["containers"][0]["image"] == "busybox:2"


@pytest.mark.parametrize(
    ("partition", "at_update", "expected"),
    [
        (2, (), [("delete", "web-2")]),
        (2, (2,), []),
        (1, (2,), [("delete", "web-1")]),
        (3, (), []),
    ],
)
def test_partition_holds_the_pods_below_it(
    partition: int, at_update: tuple[int, ...], expected: list[tuple[str, str]]
) -> None:
    sts, pods = image_update(partition=partition)
    pods = [pod(i, rev=REV2_IMAGE) if i in at_update else p for i, p in enumerate(pods)]
    assert actions(run(sts, pods, update=REV2_IMAGE)) == expected


def test_a_pod_below_the_partition_is_made_again_at_the_current_revision() -> None:
    sts, _ = image_update(partition=2)
    result = run(sts, [pod(1), pod(2, rev=REV2_IMAGE)], update=REV2_IMAGE)
    (step,) = result.phases[0].steps
    assert isinstance(step[0], CreatePod)
    assert step[0].pod["metadata"]["labels"]["controller-revision-hash"] == R1


@pytest.mark.parametrize(
    ("max_unavailable", "replicas", "unready", "expected"),
    [
        (2, 3, (), [("delete", "web-2"), ("delete", "web-1")]),
        (3, 3, (), [("delete", "web-2"), ("delete", "web-1"), ("delete", "web-0")]),
        ("50%", 4, (), [("delete", "web-3"), ("delete", "web-2")]),
        ("10%", 3, (), [("delete", "web-2")]),  # rounded down to 0, never below 1
        (2, 3, (1,), [("delete", "web-2")]),  # one unavailable already
        (2, 3, (1, 2), []),
    ],
)
def test_max_unavailable_replaces_several_pods_at_once(
    max_unavailable: int | str, replicas: int, unready: tuple[int, ...], expected: Any
) -> None:
    sts = statefulset(replicas, template=template(image="busybox:2"))
    sts["spec"]["podManagementPolicy"] = "Parallel"  # unready pods do not stop the sync
    sts["spec"]["updateStrategy"]["rollingUpdate"] = {"maxUnavailable": max_unavailable}
    pods = [pod(i, ready=None if i in unready else LONG_AGO) for i in range(replicas)]
    assert actions(run(sts, pods, update=REV2_IMAGE)) == expected


def test_on_delete_replaces_nothing_and_makes_missing_pods_at_the_update_revision() -> None:
    sts = statefulset(template=template(image="busybox:2"), updateStrategy={"type": "OnDelete"})
    assert actions(run(sts, [pod(0), pod(1), pod(2)], update=REV2_IMAGE)) == []
    result = run(sts, [pod(0), pod(2)], update=REV2_IMAGE)
    assert actions(result) == [("create", "web-1")]
    create = result.phases[0].steps[0][0]
    assert isinstance(create, CreatePod)
    assert create.pod["metadata"]["labels"]["controller-revision-hash"] == R2_IMAGE


# -- the in-place rule -----------------------------------------------------------------------


def resources_update(**spec: Any) -> Obj:
    sts = statefulset(template=template(memory="128Mi"), **spec)
    return sts


def test_a_resources_only_change_adopts_every_pod_instead_of_replacing_it() -> None:
    sts = resources_update()
    pods = [pod(0), pod(1, ready=None), pod(2)]  # readiness does not hold adoption back
    result = run(sts, pods, update=REV2_RESOURCES)
    assert actions(result) == [("adopt", "web-0"), ("adopt", "web-1"), ("adopt", "web-2")]
    adopt = result.phases[0].steps[0][0]
    assert isinstance(adopt, AdoptRevision)
    assert adopt.labels == {"controller-revision-hash": R2}
    assert result.phases[0].parallel


def test_adoption_respects_the_partition() -> None:
    sts = resources_update()
    sts["spec"]["updateStrategy"]["rollingUpdate"] = {"partition": 2}
    result = run(sts, [pod(0), pod(1), pod(2)], update=REV2_RESOURCES)
    assert actions(result) == [("adopt", "web-2")]


def test_adoption_applies_under_on_delete_too() -> None:
    sts = resources_update(updateStrategy={"type": "OnDelete"})
    result = run(sts, [pod(0), pod(1)], update=REV2_RESOURCES)
    assert actions(result) == [("adopt", "web-0"), ("adopt", "web-1"), ("create", "web-2")]


def test_adoption_skips_terminating_failed_and_updated_pods() -> None:
    sts = resources_update(podManagementPolicy="Parallel")
    pods = [pod(0, terminating=True), pod(1, "Failed", ready=None), pod(2, rev=REV2_RESOURCES)]
    assert ("adopt", "web-0") not in actions(run(sts, pods, update=REV2_RESOURCES))
    assert actions(run(sts, pods, update=REV2_RESOURCES)) == [("delete", "web-1")]


def test_a_change_beyond_resources_replaces_the_pods() -> None:
    sts, pods = image_update()
    assert actions(run(sts, pods, update=REV2_IMAGE)) == [("delete", "web-2")]


def test_a_qos_changing_resources_change_replaces_the_pods() -> None:
    guaranteed = template()
    limits = guaranteed["spec"]["containers"][0]["resources"]
    limits["limits"] = {"cpu": "100m", "memory": "32Mi"}
    rev = revision(statefulset(), guaranteed, 2)
    sts = statefulset(template=guaranteed)
    result = run(sts, [pod(0), pod(1), pod(2)], update=rev)
    assert actions(result) == [("delete", "web-2")]


def test_an_adopted_pod_counts_as_updated_and_completes_the_rollout() -> None:
    sts = resources_update()
    pods = [pod(0), pod(1), pod(2)]
    result = run(sts, pods, update=REV2_RESOURCES)
    assert result.status["currentReplicas"] == 3 and result.status["updatedReplicas"] == 0
    done = [a for phase in result.phases for step in phase.steps for a in step]
    settled = settle_status(sts, result.status, done)
    assert settled["updatedReplicas"] == 3
    assert settled["currentReplicas"] == 3
    assert settled["currentRevision"] == settled["updateRevision"] == R2


# -- claims ----------------------------------------------------------------------------------

CLAIM_TEMPLATE = {
    "metadata": {"name": "www", "labels": {"tier": "data"}},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


def with_claims(replicas: int = 3, **policy: str) -> Obj:
    sts = statefulset(replicas, volumeClaimTemplates=[CLAIM_TEMPLATE])
    if policy:
        sts["spec"]["persistentVolumeClaimRetentionPolicy"] = policy
    return sts


def claim(name: str, *refs: Obj, deleting: bool = False) -> Obj:
    meta: Obj = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if refs:
        meta["ownerReferences"] = list(refs)
    if deleting:
        meta["deletionTimestamp"] = JUST_NOW
    return {"metadata": meta, "spec": {}}


def set_ref(uid: str = SET_UID) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "web",
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_ref(ordinal: int, uid: str | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": f"web-{ordinal}",
        "uid": uid or f"pod-{ordinal}",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def test_claims_are_named_per_ordinal_and_labelled_with_the_selector() -> None:
    (body,) = claims_for_ordinal(with_claims(), 1)
    assert body["metadata"] == {
        "name": "www-web-1",
        "namespace": "default",
        "labels": {"tier": "data", "app": "web"},
    }
    assert body["spec"] == CLAIM_TEMPLATE["spec"]


@pytest.mark.parametrize(
    ("policy", "refs"),
    [
        ({}, None),
        ({"whenDeleted": "Retain", "whenScaled": "Delete"}, None),
        ({"whenDeleted": "Delete", "whenScaled": "Retain"}, [set_ref()]),
        ({"whenDeleted": "Delete", "whenScaled": "Delete"}, [set_ref()]),
    ],
)
def test_a_pod_is_created_after_its_claims_owned_as_the_policy_says(
    policy: dict[str, str], refs: list[Obj] | None
) -> None:
    result = run(with_claims(**policy), [])
    (step,) = result.phases[0].steps
    (create,) = step
    assert isinstance(create, CreatePod)
    (body,) = create.claims
    assert body["metadata"]["name"] == "www-web-0"
    assert body["metadata"].get("ownerReferences") == refs


def test_an_existing_claim_is_reused() -> None:
    result = run(with_claims(), [], claims={"www-web-0": claim("www-web-0")})
    create = result.phases[0].steps[0][0]
    assert isinstance(create, CreatePod) and create.claims == ()


def test_a_claim_being_deleted_fails_the_pod_creation() -> None:
    result = run(with_claims(), [], claims={"www-web-0": claim("www-web-0", deleting=True)})
    (step,) = result.phases[0].steps
    assert step == (Fail(step[0].pod, "create", "pvc www-web-0 is being deleted"),)


def test_a_pending_pod_gets_its_missing_claims() -> None:
    sts = with_claims()
    result = run(sts, [pod(0, "Pending", ready=None, sts=sts)])
    assert actions(result) == [("claims", "web-0")]


def test_a_claim_still_owned_by_the_previous_pod_holds_the_new_one() -> None:
    sts = with_claims(whenScaled="Delete", whenDeleted="Retain")
    stale = claim("www-web-0", pod_ref(0, "old-pod-uid"))
    assert actions(run(sts, [], claims={"www-web-0": stale})) == []


def test_scaling_down_hands_a_claim_to_its_pod_under_when_scaled_delete() -> None:
    sts = with_claims(1, whenScaled="Delete", whenDeleted="Delete")
    pods = [pod(0, sts=sts), pod(1, sts=sts)]
    claims = {
        "www-web-0": claim("www-web-0", set_ref()),
        "www-web-1": claim("www-web-1", set_ref()),
    }
    result = run(sts, pods, claims=claims)
    assert actions(result) == [("owners", "www-web-1"), ("delete", "web-1")]
    fix = result.phases[0].steps[0][0]
    assert isinstance(fix, SetClaimOwners)
    assert list(fix.owner_references) == [pod_ref(1)]


def test_scaling_down_keeps_claims_under_retain() -> None:
    sts = with_claims(1)
    pods = [pod(0, sts=sts), pod(1, sts=sts)]
    claims = {"www-web-0": claim("www-web-0"), "www-web-1": claim("www-web-1")}
    assert actions(run(sts, pods, claims=claims)) == [("delete", "web-1")]


def test_a_policy_change_rewrites_the_claims_of_running_pods() -> None:
    sts = with_claims(1, whenDeleted="Delete")
    claims = {"www-web-0": claim("www-web-0")}
    result = run(sts, [pod(0, sts=sts)], claims=claims)
    assert actions(result) == [("owners", "www-web-0")]


@pytest.mark.parametrize(
    ("policy", "scaled_down", "refs", "up_to_date", "wanted"),
    [
        (("Retain", "Retain"), False, [], True, []),
        (("Retain", "Retain"), False, [set_ref()], False, []),
        (("Delete", "Retain"), False, [], False, [set_ref()]),
        (("Delete", "Retain"), True, [set_ref()], True, [set_ref()]),
        (("Retain", "Delete"), False, [], True, []),
        (("Retain", "Delete"), True, [], False, [pod_ref(1)]),
        (("Delete", "Delete"), False, [set_ref()], True, [set_ref()]),
        (("Delete", "Delete"), True, [set_ref()], False, [pod_ref(1)]),
        # a reference to an older set of the same name: left to the garbage collector
        (("Delete", "Delete"), False, [set_ref("old-uid")], True, []),
        # another controller: our references are removed, never added
        (
            ("Delete", "Delete"),
            False,
            [{**set_ref("x"), "kind": "Other", "name": "o"}],
            True,
            [{**set_ref("x"), "kind": "Other", "name": "o"}],
        ),
        # a non-controller reference to the set is made a controller one
        (("Delete", "Retain"), False, [{**set_ref(), "controller": False}], False, [set_ref()]),
    ],
)
def test_claim_owners_follow_the_retention_policy(
    policy: tuple[str, str],
    scaled_down: bool,
    refs: list[Obj],
    up_to_date: bool,
    wanted: list[Obj],
) -> None:
    sts = with_claims(1, whenDeleted=policy[0], whenScaled=policy[1])
    body = claim("www-web-1", *refs)
    target = pod(1, sts=sts)
    assert claim_owners_up_to_date(body, sts, target, scaled_down) is up_to_date
    assert updated_claim_owners(body, sts, target, scaled_down) == wanted


# -- identity mending ------------------------------------------------------------------------


def test_a_pod_that_lost_its_identity_labels_gets_them_back() -> None:
    bare = pod(0)
    del bare["metadata"]["labels"][POD_NAME_LABEL]
    result = run(statefulset(1), [bare])
    (step,) = result.phases[0].steps
    assert step == (MendIdentity(bare, {POD_NAME_LABEL: "web-0", POD_INDEX_LABEL: "0"}),)


# -- status ----------------------------------------------------------------------------------


def test_status_counts_pods_by_state_and_revision() -> None:
    sts = statefulset(4, minReadySeconds=10, template=template(image="busybox:2"))
    sts["metadata"]["generation"] = 7
    sts["status"] = {"conditions": [{"type": "PodsResized", "status": "True"}]}
    pods = [
        pod(0),  # ready, available, current
        pod(1, ready=JUST_NOW),  # ready, not yet available
        pod(2, "Pending", ready=None, rev=REV2_IMAGE),  # updated
        pod(3, terminating=True, rev=REV2_IMAGE),  # counted, not as updated
    ]
    result = run(sts, pods, update=REV2_IMAGE, now=T0 + 1)
    assert result.status == {
        "replicas": 4,
        "readyReplicas": 3,
        "availableReplicas": 2,
        "currentReplicas": 2,
        "updatedReplicas": 1,
        "observedGeneration": 7,
        "currentRevision": R1,
        "updateRevision": R2_IMAGE,
        "collisionCount": 0,
        "conditions": [{"type": "PodsResized", "status": "True"}],
    }


def test_a_deleted_set_only_gets_its_status() -> None:
    sts = statefulset()
    sts["metadata"]["deletionTimestamp"] = JUST_NOW
    result = run(sts, [pod(0)])
    assert result.phases == [] and result.status["replicas"] == 1


def test_a_replacement_counts_one_pod_fewer_at_the_current_revision() -> None:
    sts, pods = image_update()
    result = run(sts, pods, update=REV2_IMAGE)
    done = [a for phase in result.phases for step in phase.steps for a in step]
    assert settle_status(sts, result.status, done)["currentReplicas"] == 2


@pytest.mark.parametrize(
    ("strategy", "completes"), [({"type": "RollingUpdate"}, True), ({"type": "OnDelete"}, False)]
)
def test_the_rollout_completes_when_every_pod_is_updated_and_ready(
    strategy: Obj, completes: bool
) -> None:
    sts = statefulset(template=template(image="busybox:2"), updateStrategy=strategy)
    pods = [pod(i, rev=REV2_IMAGE) for i in range(3)]
    result = run(sts, pods, update=REV2_IMAGE)
    settled = settle_status(sts, result.status, [])
    assert (settled["currentRevision"] == R2_IMAGE) is completes
    assert (settled["currentReplicas"] == 3) is completes


def test_status_differs_only_on_what_upstream_compares() -> None:
    sts = statefulset()
    result = run(sts, [pod(0), pod(1), pod(2)])
    assert status_differs(sts, result.status)
    sts["status"] = dict(result.status)
    assert not status_differs(sts, result.status)
    assert status_differs(sts, {**result.status, "readyReplicas": 2})


# -- revisions -------------------------------------------------------------------------------


def test_the_update_revision_is_found_renumbered_or_created() -> None:
    sts = statefulset()
    revisions = sort_revisions([REV1, REV2_IMAGE])
    same = revision(sts, template(image="busybox:2"), 3)
    choice = choose_update_revision(revisions, same, find_equal(revisions, same))
    assert (choice.how, choice.revision["metadata"]["name"]) == ("existing", R2_IMAGE)
    back = revision(sts, template(), 3)
    choice = choose_update_revision(revisions, back, find_equal(revisions, back))
    assert (choice.how, choice.revision["metadata"]["name"], choice.number) == ("renumber", R1, 3)
    fresh = revision(sts, template(image="busybox:3"), 3)
    choice = choose_update_revision(revisions, fresh, find_equal(revisions, fresh))
    assert (choice.how, choice.number) == ("create", 3)
    first = choose_update_revision([], REV1, [])
    assert first.how == "create"


def test_ordinal_of_a_placeholder() -> None:
    assert ordinal_of(pod(7)) == 7


def test_replacing_a_pod_at_no_revision_counts_nothing_off() -> None:
    sts, _ = image_update()
    orphan = pod(2)
    del orphan["metadata"]["labels"]["controller-revision-hash"]
    result = run(sts, [pod(0), pod(1), orphan], update=REV2_IMAGE)
    assert actions(result) == [("delete", "web-2")]
    done = [a for phase in result.phases for step in phase.steps for a in step]
    assert settle_status(sts, result.status, done)["currentReplicas"] == 2


def test_a_resources_change_of_a_template_that_mounts_its_claims_adopts_the_pods() -> None:
    def mounting(memory: str) -> Obj:
        tmpl = template(memory=memory)
        tmpl["spec"]["containers"][0]["volumeMounts"] = [{"name": "www", "mountPath": "/data"}]
        return tmpl

    base = with_claims()
    old = revision(base, mounting("64Mi"), 1)
    new = revision(base, mounting("128Mi"), 2)
    sts = {**base, "spec": {**base["spec"], "template": mounting("128Mi")}}
    pods = [pod(i, rev=old, sts=base) for i in range(3)]
    result = run(sts, pods, current=old, update=new)
    assert actions(result) == [("adopt", "web-0"), ("adopt", "web-1"), ("adopt", "web-2")]
