"""The Job controller's bookkeeping, tabled (upstream ``job_controller_test.go`` cases)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.controllers.job import model as m


@pytest.mark.parametrize(
    ("text", "limit", "indexes"),
    [
        ("", 5, []),
        ("1,3-5", 10, [1, 3, 4, 5]),
        ("0-2,7", 5, [0, 1, 2]),  # beyond the completions: dropped
        ("2,x,3", 5, [2, 3]),
    ],
)
def test_parse_indexes(text: str, limit: int, indexes: list[int]) -> None:
    assert m.parse_indexes(text, limit) == indexes


@given(st.sets(st.integers(0, 200)))
def test_format_then_parse_is_identity(indexes: set[int]) -> None:
    assert m.parse_indexes(m.format_indexes(indexes), 201) == sorted(indexes)


def test_format_indexes_uses_intervals() -> None:
    assert m.format_indexes([5, 1, 3, 4]) == "1,3-5"
    assert m.format_indexes([]) == ""


def test_first_pending_indexes_skip_succeeded_and_running() -> None:
    assert m.first_pending_indexes([0, 2], [1], 2, 6) == [3, 4]
    assert m.first_pending_indexes([0, 1, 2], [], 5, 3) == []


def pod(
    phase: str = "Running",
    *,
    exit_code: int | None = None,
    container: str = "main",
    deleting: bool = False,
    conditions: list[dict[str, Any]] | None = None,
    restarts: int = 0,
    index: str | None = None,
) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "finishedAt": "2026-01-01T00:00:10Z"}}
    meta: dict[str, Any] = {"name": "p", "namespace": "ns"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if index is not None:
        meta["annotations"] = {m.COMPLETION_INDEX: index}
    return {
        "metadata": meta,
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": container, "state": state, "restartCount": restarts}],
            "conditions": conditions or [],
        },
    }


def job(**spec: Any) -> dict[str, Any]:
    return {"spec": {"parallelism": 1, "backoffLimit": 6, **spec}}


@pytest.mark.parametrize(
    ("the_pod", "the_job", "failed"),
    [
        (pod("Failed"), job(), True),
        (pod("Running", deleting=True), job(), True),  # deleted pods count as failed
        (pod("Running", deleting=True), job(podReplacementPolicy="Failed"), False),
        (pod("Succeeded", deleting=True), job(), False),
        (pod("Running"), job(), False),
    ],
)
def test_is_pod_failed(the_pod: dict[str, Any], the_job: dict[str, Any], failed: bool) -> None:
    assert m.is_pod_failed(the_pod, the_job) is failed


POLICY = {
    "rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {
            "action": "FailJob",
            "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]},
        },
        {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
    ]
}


@pytest.mark.parametrize(
    ("the_pod", "expected"),
    [
        (
            pod("Failed", exit_code=42),
            (
                "Container main for pod ns/p failed with exit code 42 matching FailJob rule at "
                "index 1",
                True,
                "FailJob",
            ),
        ),
        (
            pod("Failed", exit_code=3, conditions=[{"type": "DisruptionTarget", "status": "True"}]),
            (None, False, "Ignore"),
        ),
        (pod("Failed", exit_code=7), (None, True, "Count")),
        (pod("Failed", exit_code=1), (None, True, None)),  # no rule matched: counted
        (pod("Failed", exit_code=42, container="side"), (None, True, "Count")),
    ],
)
def test_pod_failure_policy(the_pod: dict[str, Any], expected: tuple[Any, ...]) -> None:
    assert m.match_pod_failure_policy(POLICY, the_pod) == expected
    assert m.match_pod_failure_policy(None, the_pod) == (None, True, None)


@pytest.mark.parametrize(
    ("limit", "restarts", "past"),
    [(0, 0, False), (0, 1, True), (3, 2, False), (3, 3, True)],
)
def test_on_failure_restarts_count_towards_the_backoff_limit(
    limit: int, restarts: int, past: bool
) -> None:
    the_job = job(backoffLimit=limit, template={"spec": {"restartPolicy": "OnFailure"}})
    assert m.past_backoff_limit_on_failure(the_job, [pod(restarts=restarts)]) is past
    never = job(backoffLimit=limit, template={"spec": {"restartPolicy": "Never"}})
    assert not m.past_backoff_limit_on_failure(never, [pod(restarts=restarts)])


@pytest.mark.parametrize(
    ("spec", "active", "succeeded", "want"),
    [
        ({"parallelism": 2, "completions": 5}, 0, 0, 2),
        ({"parallelism": 2, "completions": 5}, 2, 4, 1),
        ({"parallelism": 2, "completions": 5}, 0, 5, 0),
        ({"parallelism": 3}, 0, 0, 3),  # no completions: parallelism until one succeeds
        ({"parallelism": 3}, 2, 1, 2),  # then leave what runs alone
    ],
)
def test_want_active(spec: dict[str, Any], active: int, succeeded: int, want: int) -> None:
    assert m.want_active({"spec": spec}, active, succeeded) == want


def finished(at: str, *, failed: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Failed" if failed else "Succeeded",
            "containerStatuses": [{"name": "main", "state": {"terminated": {"finishedAt": at}}}],
        },
    }


def test_backoff_counts_failures_since_the_last_success() -> None:
    record = m.new_backoff_record(m.BackoffRecord(), [], [finished("2026-01-01T00:00:10Z")])
    assert record.failures_after_last_success == 1
    record = m.new_backoff_record(record, [], [finished("2026-01-01T00:00:20Z")])
    assert record.failures_after_last_success == 2
    t20 = record.last_failure_time
    assert t20 is not None
    assert m.remaining_backoff(record, t20) == 20.0  # 10 s doubled once
    assert m.remaining_backoff(record, t20 + 25) == 0.0
    success = m.new_backoff_record(
        record, [finished("2026-01-01T00:00:30Z", failed=False)], [finished("2026-01-01T00:00:40Z")]
    )
    assert success.failures_after_last_success == 1  # only the failure after the success
    clean = m.new_backoff_record(record, [finished("2026-01-01T00:00:30Z", failed=False)], [])
    assert clean == m.BackoffRecord()


def test_backoff_is_capped_at_six_minutes() -> None:
    record = m.BackoffRecord(20, 1000.0)
    assert m.remaining_backoff(record, 1000.0) == m.MAX_BACKOFF


def test_ensure_condition_never_adds_a_false_one_and_updates_in_place() -> None:
    conditions, changed = m.ensure_condition([], "Suspended", "False", "JobResumed", "r", "T")
    assert (conditions, changed) == ([], False)
    conditions, changed = m.ensure_condition([], "Suspended", "True", "JobSuspended", "s", "T")
    assert changed and conditions[0]["status"] == "True"
    again, changed = m.ensure_condition(conditions, "Suspended", "True", "JobSuspended", "s", "U")
    assert not changed and again[0]["lastTransitionTime"] == "T"
    resumed, changed = m.ensure_condition(conditions, "Suspended", "False", "JobResumed", "r", "U")
    assert changed and resumed[0]["status"] == "False" and resumed[0]["lastTransitionTime"] == "U"


def test_completion_index_and_finish() -> None:
    assert m.completion_index(pod(index="3")) == 3
    assert m.completion_index(pod(index="x")) is None
    assert m.completion_index(pod()) is None
    done = {
        "status": {
            "conditions": [
                {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]
        }
    }
    assert m.is_finished(done) and m.finish_time(done) is not None
    assert not m.is_finished({"status": {}})
