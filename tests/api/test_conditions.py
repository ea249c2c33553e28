"""The status-writers rule (inplace.api.conditions): tables, no I/O."""

from __future__ import annotations

from typing import Any

import pytest

from inplace.api.conditions import (
    KUBELET,
    SCHEDULER,
    ConditionOwnershipError,
    Decision,
    absent,
    condition_patch,
    present,
    status_update,
)


def cond(ctype: str, status: str = "True", generation: int | None = None, **extra: Any) -> Any:
    out: dict[str, Any] = {"type": ctype, "status": status, "lastTransitionTime": "T0", **extra}
    if generation is not None:
        out["observedGeneration"] = generation
    return out


PENDING_3 = cond("PodResizePending", generation=3, reason="Infeasible", message="too big")


@pytest.mark.parametrize(
    ("current", "writer", "decisions", "types", "guarded"),
    [
        # A decision for an older generation never replaces or removes a newer one.
        ([PENDING_3], KUBELET, {"PodResizePending": absent(2)}, [], False),
        ([PENDING_3], SCHEDULER, {"PodResizePending": present(2, "True", "Deferred")}, [], False),
        # The same or a newer generation may (a shared type: compare-and-swap).
        ([PENDING_3], KUBELET, {"PodResizePending": absent(3)}, ["PodResizePending"], True),
        ([PENDING_3], SCHEDULER, {"PodResizePending": absent(4)}, ["PodResizePending"], True),
        # Removing what is not there sends nothing.
        ([], SCHEDULER, {"PodResizePending": absent(5)}, [], False),
        # A writer's own single-writer types need no precondition.
        ([], SCHEDULER, {"PodResizeScheduled": present(2, "True")}, ["PodResizeScheduled"], False),
        ([], KUBELET, {"Ready": present(1, "True")}, ["Ready"], False),
        # Adding a shared type is guarded too: the other writer may be adding it right now.
        (
            [],
            KUBELET,
            {"PodResizePending": present(2, "True", "Deferred")},
            ["PodResizePending"],
            True,
        ),
        # Conditions without observedGeneration (written before 1.34) count as generation 0.
        ([cond("Ready", "False")], KUBELET, {"Ready": present(1, "True")}, ["Ready"], False),
    ],
)
def test_the_generation_rule(
    current: list[dict[str, Any]],
    writer: str,
    decisions: dict[str, Decision],
    types: list[str],
    guarded: bool,
) -> None:
    patch = condition_patch(current, decisions, writer=writer, now="T1")
    assert list(patch.types) == types
    assert patch.guarded is guarded
    assert [item["type"] for item in patch.status.get("conditions", [])] == types


def test_items_are_complete_so_stale_fields_go_and_deletes_are_directives() -> None:
    current = [cond("PodResizeInProgress", generation=2, reason="Error", message="refused")]
    patch = condition_patch(
        current, {"PodResizeInProgress": present(2, "True")}, writer=KUBELET, now="T1"
    )
    assert patch.status["conditions"] == [
        {
            "type": "PodResizeInProgress",
            "status": "True",
            "reason": None,
            "message": None,
            "observedGeneration": 2,
            "lastProbeTime": None,
            "lastTransitionTime": "T0",  # same status: the transition time stays
        }
    ]
    gone = condition_patch(current, {"PodResizeInProgress": absent(2)}, writer=KUBELET, now="T1")
    assert gone.status["conditions"] == [{"type": "PodResizeInProgress", "$patch": "delete"}]


def test_a_changed_status_moves_the_transition_time_and_an_unchanged_one_sends_nothing() -> None:
    current = [cond("Ready", "True", generation=1)]
    same = condition_patch(current, {"Ready": present(1, "True")}, writer=KUBELET, now="T9")
    assert same.status == {} and same.types == ()
    flipped = condition_patch(
        current, {"Ready": present(1, "False", "ContainersNotReady")}, writer=KUBELET, now="T9"
    )
    assert flipped.status["conditions"][0]["lastTransitionTime"] == "T9"
    restamped = condition_patch(current, {"Ready": present(2, "True")}, writer=KUBELET, now="T9")
    assert restamped.status["conditions"][0]["observedGeneration"] == 2
    assert restamped.status["conditions"][0]["lastTransitionTime"] == "T0"


@pytest.mark.parametrize(
    ("writer", "ctype"),
    [
        (KUBELET, "PodResizeScheduled"),
        (SCHEDULER, "Ready"),
        (SCHEDULER, "PodResizeInProgress"),
        (SCHEDULER, "MemoryPaused"),
    ],
)
def test_a_writer_may_not_decide_anothers_condition(writer: str, ctype: str) -> None:
    with pytest.raises(ConditionOwnershipError, match=ctype):
        condition_patch([], {ctype: present(1, "True")}, writer=writer, now="T")


def test_unlisted_types_are_anyones_and_always_guarded() -> None:
    patch = condition_patch([], {"example.com/Gate": present(1, "True")}, writer=KUBELET, now="T")
    assert patch.guarded and patch.types == ("example.com/Gate",)


def test_status_update_sends_only_fields_that_differ() -> None:
    pod = {"status": {"phase": "Running", "observedGeneration": 1, "conditions": []}}
    assert status_update(pod, writer=KUBELET, now="T", fields={"phase": "Running"}) is None
    update = status_update(
        pod,
        writer=KUBELET,
        now="T",
        fields={"phase": "Running", "observedGeneration": 2},
        decisions={"Ready": present(2, "True")},
    )
    assert update is not None and not update.guarded
    assert update.status["observedGeneration"] == 2 and "phase" not in update.status
    assert [c["type"] for c in update.status["conditions"]] == ["Ready"]


def test_a_probed_decision_is_stamped_as_the_kubelet_stamps_its_resize_conditions() -> None:
    """pkg/kubelet/status/status_manager.go, updatedPodResizeCondition: lastProbeTime is when
    the condition is set, lastTransitionTime moves when the reason changes (the status of a
    resize condition is always True); a rewrite that would change lastProbeTime alone is not
    sent (isPodStatusByKubeletEqual compares status, reason and message)."""
    deferred = present(2, "True", "Deferred", "no room", probed=True)
    first = condition_patch([], {"PodResizePending": deferred}, writer=KUBELET, now="T1")
    (item,) = first.status["conditions"]
    assert (item["lastProbeTime"], item["lastTransitionTime"]) == ("T1", "T1")

    stored = [{k: v for k, v in item.items() if v is not None}]
    again = condition_patch(stored, {"PodResizePending": deferred}, writer=KUBELET, now="T2")
    assert again.status == {}

    moved = present(2, "True", "Deferred", "still no room", probed=True)
    (item,) = condition_patch(stored, {"PodResizePending": moved}, writer=KUBELET, now="T3").status[
        "conditions"
    ]
    assert (item["lastProbeTime"], item["lastTransitionTime"]) == ("T3", "T1")

    infeasible = present(2, "True", "Infeasible", "never", probed=True)
    (item,) = condition_patch(
        stored, {"PodResizePending": infeasible}, writer=KUBELET, now="T4"
    ).status["conditions"]
    assert (item["lastProbeTime"], item["lastTransitionTime"]) == ("T4", "T4")


def test_a_writers_order_is_sent_with_its_conditions_and_leaves_the_others_in_place() -> None:
    """The kubelet sends its whole condition list, so its conditions stand in its order
    (pkg/kubelet/kubelet_pods.go generateAPIPodStatus): a writer with an ``order`` lists its
    items so and sends ``$setElementOrder/conditions`` for its types the pod will have; the
    API server's merge puts them in that order and keeps another writer's."""
    from inplace.registry.kinds import REGISTRY
    from inplace.registry.patch import apply_strategic_merge_patch
    from inplace.registry.patchmeta import schema_for_kind

    kind = REGISTRY.by_kind("", "Pod")
    assert kind is not None
    schema = schema_for_kind(kind)
    assert schema is not None
    order = ("PodResizeInProgress", "Initialized", "Ready", "PodScheduled")
    pod = {
        "status": {
            "conditions": [
                cond("PodScheduled", generation=1),
                cond("Gate", reason="theirs"),
                cond("PodResizeInProgress", generation=1),
            ]
        },
        "metadata": {"generation": 2},
    }
    decisions = {
        "PodScheduled": present(2, "True"),
        "Ready": present(2, "True"),
        "Initialized": present(2, "True"),
        "PodResizeInProgress": absent(2),
    }
    update = status_update(pod, writer=KUBELET, now="T", decisions=decisions, order=order)
    assert update is not None
    items = update.status["conditions"]
    assert [c["type"] for c in items] == [
        "PodResizeInProgress",
        "Initialized",
        "Ready",
        "PodScheduled",
    ]
    assert items[0] == {"type": "PodResizeInProgress", "$patch": "delete"}
    assert update.status["$setElementOrder/conditions"] == [
        {"type": "Initialized"},
        {"type": "Ready"},
        {"type": "PodScheduled"},
    ]
    merged = apply_strategic_merge_patch(pod, {"status": update.status}, schema)
    # the other writer's Gate stays, placed by upstream's normalizeElementOrder (after the
    # new items and after PodScheduled, which was before it on the server)
    assert [c["type"] for c in merged["status"]["conditions"]] == [
        "Initialized",
        "Ready",
        "PodScheduled",
        "Gate",
    ]
    # Nothing to write: no directive alone.
    assert status_update(merged, writer=KUBELET, now="T", decisions=decisions, order=order) is None
