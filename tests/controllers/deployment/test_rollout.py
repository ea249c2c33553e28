"""The rolling-update math, tabled against upstream's own cases (``deployment_util_test.go``,
``rolling_test.go``, ``sync_test.go``, ``progress_test.go``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.controllers.deployment import rollout as r


def deployment(
    replicas: int = 3,
    *,
    surge: int | str | None = "25%",
    unavailable: int | str | None = "25%",
    strategy: str = "RollingUpdate",
    generation: int = 1,
    status: dict[str, Any] | None = None,
    history: int | None = 10,
    deadline: int | None = 600,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "strategy": {"type": strategy}}
    if strategy == "RollingUpdate":
        spec["strategy"]["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    if history is not None:
        spec["revisionHistoryLimit"] = history
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    return {
        "metadata": {"name": "web", "generation": generation, "annotations": annotations or {}},
        "spec": spec,
        "status": status or {},
    }


def rs(
    name: str,
    replicas: int,
    *,
    available: int = 0,
    ready: int | None = None,
    actual: int | None = None,
    created: str = "2026-01-01T00:00:00Z",
    revision: int | None = None,
    annotations: dict[str, str] | None = None,
    generation: int = 1,
    observed: int = 1,
) -> dict[str, Any]:
    notes = dict(annotations or {})
    if revision is not None:
        notes[r.REVISION] = str(revision)
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": created,
            "annotations": notes,
            "generation": generation,
        },
        "spec": {"replicas": replicas},
        "status": {
            "replicas": replicas if actual is None else actual,
            "availableReplicas": available,
            "readyReplicas": available if ready is None else ready,
            "observedGeneration": observed,
        },
    }


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        # upstream TestResolveFenceposts
        ("0%", "0%", 0, (0, 1)),
        ("39%", "39%", 10, (4, 3)),
        ("oops", "39%", 10, None),
        ("55%", "urg", 10, None),
        ("39%", "39%", 0, (0, 1)),
        (0, "25%", 4, (0, 1)),
        (1, 0, 3, (1, 0)),
        ("25%", "25%", 10, (3, 2)),
        ("50%", "50%", 1, (1, 0)),
        (None, None, 5, (0, 1)),
    ],
)
def test_fenceposts_round_surge_up_and_unavailability_down(
    surge: Any, unavailable: Any, desired: int, expected: tuple[int, int] | None
) -> None:
    if expected is None:
        with pytest.raises(ValueError):
            r.resolve_fenceposts(surge, unavailable, desired)
        return
    assert r.resolve_fenceposts(surge, unavailable, desired) == expected


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "max_surge", "max_unavailable"),
    [
        (10, "25%", "25%", 3, 2),
        (3, "25%", "25%", 1, 0),
        (0, "25%", "25%", 0, 0),  # nothing may be unavailable of nothing
        (2, 0, 5, 0, 2),  # never more than the replicas
        (4, 1, 0, 1, 0),
    ],
)
def test_max_surge_and_max_unavailable(
    replicas: int, surge: Any, unavailable: Any, max_surge: int, max_unavailable: int
) -> None:
    d = deployment(replicas, surge=surge, unavailable=unavailable)
    assert r.max_surge(d) == max_surge
    assert r.max_unavailable(d) == max_unavailable


def test_recreate_has_no_surge_and_no_unavailability() -> None:
    d = deployment(5, strategy="Recreate")
    assert (r.max_surge(d), r.max_unavailable(d)) == (0, 0)


@pytest.mark.parametrize(
    ("replicas", "surge", "old", "new", "expected"),
    [
        # upstream TestNewRSNewReplicas: 10 replicas, surge 1
        (10, 1, 5, 0, 6),
        (10, 1, 10, 0, 1),
        (10, 1, 11, 0, 0),  # already at replicas + surge: no room
        (10, 1, 0, 9, 10),  # never above replicas
        (3, "25%", 3, 0, 1),
        (3, "100%", 3, 0, 3),
    ],
)
def test_new_replica_set_grows_by_the_surge(
    replicas: int, surge: Any, old: int, new: int, expected: int
) -> None:
    d = deployment(replicas, surge=surge, unavailable=0)
    old_rs, new_rs = rs("old", old), rs("new", new)
    assert r.new_rs_new_replicas(d, [old_rs, new_rs], new_rs) == expected


def test_recreate_scales_the_new_replica_set_to_all_at_once() -> None:
    d = deployment(4, strategy="Recreate")
    assert r.new_rs_new_replicas(d, [rs("old", 0), rs("new", 0)], rs("new", 0)) == 4


@pytest.mark.parametrize(
    ("replicas", "unavailable", "old", "old_available", "new", "new_available", "expected"),
    [
        # upstream TestReconcileOldReplicaSets-style cases
        (10, 0, 10, 10, 0, 0, {}),  # surge first: the new one is not up yet
        (10, 0, 10, 10, 2, 2, {"old": 8}),  # 2 new available → 2 old can go
        (10, 2, 10, 10, 0, 0, {"old": 8}),  # maxUnavailable allows 2 at once
        (10, 2, 10, 7, 0, 0, {"old": 8}),  # unhealthy old pods go first, 2 at most
        (10, 2, 8, 8, 2, 0, {}),  # new pods not available eat the budget
        (10, 2, 10, 10, 3, 0, {"old": 8}),
        (3, 1, 2, 2, 2, 2, {"old": 0}),
        (3, 0, 0, 0, 3, 3, {}),  # nothing old left
    ],
)
def test_old_replica_sets_shrink_while_max_unavailable_holds(
    replicas: int,
    unavailable: int,
    old: int,
    old_available: int,
    new: int,
    new_available: int,
    expected: dict[str, int],
) -> None:
    d = deployment(replicas, surge=2, unavailable=unavailable)
    old_rs = rs("old", old, available=old_available)
    new_rs = rs("new", new, available=new_available)
    assert r.old_replica_sets_scale_down(d, [old_rs, new_rs], [old_rs], new_rs) == expected


def test_oldest_replica_sets_are_scaled_down_first() -> None:
    d = deployment(4, surge=0, unavailable=2)
    older = rs("older", 2, available=2, created="2026-01-01T00:00:00Z")
    newer = rs("newer", 2, available=2, created="2026-01-02T00:00:00Z")
    new = rs("new", 0)
    assert r.old_replica_sets_scale_down(d, [older, newer, new], [newer, older], new) == {
        "older": 0
    }


@given(
    replicas=st.integers(1, 30),
    surge=st.integers(0, 5),
    unavailable=st.integers(0, 5),
)
def test_a_simulated_rollout_never_breaks_surge_or_availability(
    replicas: int, surge: int, unavailable: int
) -> None:
    """Drive a whole rollout with pods that become available at once: at every step the total
    stays within replicas + maxSurge and availability within replicas - maxUnavailable."""
    if surge == 0 and unavailable == 0:
        unavailable = 1
    d = deployment(replicas, surge=surge, unavailable=unavailable)
    old = rs("old", replicas, available=replicas, created="2026-01-01T00:00:00Z")
    new = rs("new", 0, created="2026-01-02T00:00:00Z")
    max_surge, max_unavailable = r.max_surge(d), r.max_unavailable(d)
    for _ in range(4 * replicas + 10):
        if r.replicas(new) == replicas and r.replicas(old) == 0:
            break
        target = r.new_rs_new_replicas(d, [old, new], new)
        if target != r.replicas(new):
            new = rs("new", target, available=target, created="2026-01-02T00:00:00Z")
        else:
            sizes = r.old_replica_sets_scale_down(d, [old, new], [old], new)
            assert sizes, "the rollout is stuck"
            size = sizes["old"]
            old = rs("old", size, available=size, created="2026-01-01T00:00:00Z")
        total = r.replicas(old) + r.replicas(new)
        assert total <= replicas + max_surge
        assert total >= replicas - max_unavailable
    assert (r.replicas(new), r.replicas(old)) == (replicas, 0)


@pytest.mark.parametrize(
    ("replicas", "sizes", "max_replicas", "expected"),
    [
        # one active replica set takes everything
        (5, {"new": 3, "old": 0}, None, {"new": 5, "old": 0}),
        # proportional: 10 → 15 with two sets of 5 (surge 0): +3 to the newer, +2 to the older
        # (the leftover goes to the first, largest-then-newest)
        (15, {"new": 5, "old": 5}, 10, {"new": 8, "old": 7}),
        # scaling down: the older loses more
        (5, {"new": 5, "old": 5}, 10, {"new": 3, "old": 2}),
        # to zero
        (0, {"new": 3, "old": 2}, 5, {"new": 0, "old": 0}),
    ],
)
def test_proportional_scaling_spreads_a_replica_change(
    replicas: int, sizes: dict[str, int], max_replicas: int | None, expected: dict[str, int]
) -> None:
    d = deployment(replicas, surge=0, unavailable=1, status={"replicas": sum(sizes.values())})
    notes = {r.MAX_REPLICAS: str(max_replicas)} if max_replicas is not None else {}
    new = rs("new", sizes["new"], created="2026-01-02T00:00:00Z", annotations=notes)
    old = rs("old", sizes["old"], created="2026-01-01T00:00:00Z", annotations=notes)
    result = r.proportional_scale(d, new, [old])
    after = {**sizes, **result}
    assert after == expected
    assert sum(after.values()) == replicas


def test_a_saturated_new_replica_set_scales_the_old_ones_to_zero() -> None:
    d = deployment(3)
    new = rs("new", 3, available=3, annotations={r.DESIRED_REPLICAS: "3"})
    old = rs("old", 1, available=1)
    assert r.proportional_scale(d, new, [old]) == {"old": 0}


def test_new_replica_set_annotations_copy_the_deployment_and_set_the_revision() -> None:
    d = deployment(
        4,
        surge=1,
        annotations={
            "team": "genomics",
            r.REVISION: "7",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
        },
    )
    created = r.new_rs_annotations(d, rs("new", 0), 3, exists=False)
    assert created == {
        "team": "genomics",
        r.REVISION: "3",
        r.DESIRED_REPLICAS: "4",
        r.MAX_REPLICAS: "5",
    }
    # A rollback reuses an old replica set: its old revision goes to the history.
    reused = r.new_rs_annotations(d, rs("old", 0, revision=1), 5, exists=True)
    assert reused[r.REVISION] == "5" and reused[r.REVISION_HISTORY] == "1"
    # A newer revision is never lowered.
    kept = r.new_rs_annotations(d, rs("cur", 0, revision=9), 5, exists=True)
    assert kept[r.REVISION] == "9" and r.REVISION_HISTORY not in kept


def test_cleanup_removes_only_empty_settled_old_revisions_beyond_the_limit() -> None:
    d = deployment(2, history=1)
    old = [
        rs("r1", 0, revision=1),
        rs("r2", 0, revision=2, generation=3, observed=2),  # not settled
        rs("r3", 1, revision=3, available=1),  # not empty
        rs("r4", 0, revision=4),
    ]
    assert [v["metadata"]["name"] for v in r.cleanup_victims(d, old)] == ["r1"]
    assert r.cleanup_victims(deployment(2, history=None), old) == []


NOW = "2026-01-01T00:10:00Z"


def test_status_sums_the_replica_sets_and_sets_available() -> None:
    d = deployment(3, surge=1, unavailable=0, generation=4)
    new = rs("new", 2, available=2, ready=2)
    old = rs("old", 2, available=1, ready=2)
    status = r.calculate_status(d, [old, new], new, NOW)
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 4,
        "replicas": 4,
        "updatedReplicas": 2,
        "readyReplicas": 4,
        "availableReplicas": 3,
        "unavailableReplicas": 1,
    }
    available = r.condition_of(status, r.AVAILABLE)
    assert available is not None and available["status"] == "True"
    short = r.calculate_status(d, [rs("only", 3, available=1)], None, NOW)
    available = r.condition_of(short, r.AVAILABLE)
    assert available is not None and available["reason"] == r.MIN_UNAVAILABLE_REASON


def progressing(reason: str, updated: str, status: str = "True") -> dict[str, Any]:
    return {
        "type": r.PROGRESSING,
        "status": status,
        "reason": reason,
        "message": "",
        "lastUpdateTime": updated,
        "lastTransitionTime": updated,
    }


def test_progress_complete_and_timed_out() -> None:
    t0 = r._stamp("2026-01-01T00:00:00Z")
    new = rs("web-1", 3, available=3)
    d = deployment(
        3,
        status={"conditions": [progressing(r.RS_UPDATED_REASON, "2026-01-01T00:00:00Z")]},
    )
    done = r.rollout_status(d, [new], new, t0 + 5, NOW)
    cond = r.condition_of(done, r.PROGRESSING)
    assert cond is not None and cond["reason"] == r.NEW_RS_AVAILABLE_REASON
    assert cond["message"] == 'ReplicaSet "web-1" has successfully progressed.'
    stuck_rs = rs("web-1", 3, available=1)
    d_stuck = deployment(
        3,
        deadline=60,
        status={
            "replicas": 3,
            "updatedReplicas": 3,
            "availableReplicas": 1,
            "readyReplicas": 1,
            "observedGeneration": 1,
            "conditions": [progressing(r.RS_UPDATED_REASON, "2026-01-01T00:00:00Z")],
        },
    )
    assert r.requeue_after(d_stuck, d_stuck["status"], t0 + 30) == pytest.approx(31.0)
    timed_out = r.rollout_status(d_stuck, [stuck_rs], stuck_rs, t0 + 61, NOW)
    cond = r.condition_of(timed_out, r.PROGRESSING)
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", r.TIMED_OUT_REASON)
    still = r.rollout_status(d_stuck, [stuck_rs], stuck_rs, t0 + 59, NOW)
    cond = r.condition_of(still, r.PROGRESSING)
    assert cond is not None and cond["reason"] == r.RS_UPDATED_REASON


def test_progress_refreshes_the_update_time_but_keeps_the_transition() -> None:
    d = deployment(
        3,
        status={
            "replicas": 3,
            "updatedReplicas": 1,
            "conditions": [progressing(r.RS_UPDATED_REASON, "2026-01-01T00:00:00Z")],
        },
    )
    new, old = rs("new", 2, available=2), rs("old", 1, available=1)
    status = r.rollout_status(d, [old, new], new, r._stamp(NOW), NOW)
    cond = r.condition_of(status, r.PROGRESSING)
    assert cond is not None
    assert (cond["lastUpdateTime"], cond["lastTransitionTime"]) == (NOW, "2026-01-01T00:00:00Z")


def test_set_condition_changes_nothing_for_the_same_status_and_reason() -> None:
    status: dict[str, Any] = {"conditions": [progressing("A", "2026-01-01T00:00:00Z")]}
    r.set_condition(status, progressing("A", NOW))
    assert status["conditions"][0]["lastUpdateTime"] == "2026-01-01T00:00:00Z"
    r.set_condition(status, progressing("B", NOW))
    assert status["conditions"][0]["reason"] == "B"
    assert status["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_pod_template_hash_is_stable_and_sensitive_to_the_template_and_collisions() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a"}]}}
    again = {"spec": {"containers": [{"name": "a"}]}, "metadata": {"labels": {"app": "web"}}}
    first = r.pod_template_hash(template)
    assert first == r.pod_template_hash(again)
    assert set(first) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert r.pod_template_hash(template, 1) != first
    changed = {**template, "spec": {"containers": [{"name": "b"}]}}
    assert r.pod_template_hash(changed) != first


def test_equal_ignoring_hash() -> None:
    base = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a"}]}}
    hashed = {
        "metadata": {"labels": {"app": "web", r.POD_TEMPLATE_HASH: "abc"}},
        "spec": {"containers": [{"name": "a"}]},
    }
    assert r.equal_ignoring_hash(base, hashed)
    other = {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "a"}]}}
    assert not r.equal_ignoring_hash(base, other)


def test_templates_compare_semantically_as_kubectl_rollout_undo_writes_them() -> None:
    """kubectl's undo sends the old template back with ``creationTimestamp: null``; the
    replica set it came from must still be found (and hash the same)."""
    stored = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a"}]}}
    undone = {
        "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "0.5"}}}]},
    }
    stored["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    assert r.equal_ignoring_hash(stored, undone)
    assert r.pod_template_hash(stored) == r.pod_template_hash(undone)
