"""The responder's decision for a paused pod: how much, capped how, when to wait or give up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.api.memorypause import paused_message
from inplace.api.resources import qos_class
from inplace.controllers.memorypause.decision import decide

Mi = 2**20
PAUSED_AT = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
NOW = PAUSED_AT + timedelta(seconds=5)


def paused_pod(
    *,
    annotations: dict[str, str] | None = None,
    requests: str | None = "100Mi",
    limits: str | None = "100Mi",
    actual: str | None = None,
    paused: tuple[str, ...] = ("main",),
    conditions: tuple[dict[str, Any], ...] = (),
    opted_in: bool = True,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = {"cpu": "100m", "memory": requests}
    if limits is not None:
        resources["limits"] = {"cpu": "100m", "memory": limits}
    held = dict(resources)
    if actual is not None:
        held = {"requests": {"memory": actual}, "limits": {"memory": actual}}
    meta_annotations = {"inplace.dev/memory-on-pause": "x1.5", **(annotations or {})}
    if opted_in:
        meta_annotations["inplace.dev/oom-kill-disable"] = "true"
    conds = list(conditions)
    if paused:
        conds.append(
            {
                "type": "MemoryPaused",
                "status": "True",
                "reason": "MemoryLimitReached",
                "lastTransitionTime": PAUSED_AT.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "message": paused_message(list(paused), "cgroup v1 memory.oom_control"),
            }
        )
    return {
        "metadata": {"name": "p", "namespace": "default", "annotations": meta_annotations},
        "spec": {"containers": [{"name": "main", "image": "x", "resources": resources}]},
        "status": {
            "conditions": conds,
            "containerStatuses": [{"name": "main", "resources": held}],
        },
    }


def no_bump(pod: dict[str, Any]) -> dict[str, Any]:
    del pod["metadata"]["annotations"]["inplace.dev/memory-on-pause"]
    return pod


PENDING = {
    "type": "PodResizePending",
    "status": "True",
    "reason": "Deferred",
    "message": "Node didn't have enough resource: memory",
}


@pytest.mark.parametrize(
    ("name", "pod", "action", "reason", "body"),
    [
        ("not paused", paused_pod(paused=()), "none", "NotPaused", None),
        ("not opted in", paused_pod(opted_in=False), "none", "NotOptedIn", None),
        ("no bump annotation", no_bump(paused_pod()), "none", "NoBumpAnnotation", None),
        (
            "x1.5 of a guaranteed pod: request follows",
            paused_pod(),
            "resize",
            "MemoryBumped",
            {"requests": {"memory": "150Mi"}, "limits": {"memory": "150Mi"}},
        ),
        (
            "+512Mi",
            paused_pod(annotations={"inplace.dev/memory-on-pause": "+512Mi"}),
            "resize",
            "MemoryBumped",
            {"requests": {"memory": "612Mi"}, "limits": {"memory": "612Mi"}},
        ),
        (
            "burstable: the request keeps its ratio",
            paused_pod(requests="50Mi", limits="200Mi"),
            "resize",
            "MemoryBumped",
            {"requests": {"memory": "75Mi"}, "limits": {"memory": "300Mi"}},
        ),
        (
            "no request: only the limit",
            paused_pod(requests=None),
            "resize",
            "MemoryBumped",
            {"limits": {"memory": "150Mi"}},
        ),
        (
            "rounded up to a whole MiB",
            paused_pod(requests="1000M", limits="1000M"),
            "resize",
            "MemoryBumped",
            {"requests": {"memory": "1431Mi"}, "limits": {"memory": "1431Mi"}},
        ),
        (
            "capped by memory-max",
            paused_pod(annotations={"inplace.dev/memory-max": "120Mi"}),
            "resize",
            "MemoryBumped",
            {"requests": {"memory": "120Mi"}, "limits": {"memory": "120Mi"}},
        ),
        (
            "at memory-max: stays paused",
            paused_pod(annotations={"inplace.dev/memory-max": "100Mi"}),
            "capped",
            "MemoryMaxReached",
            None,
        ),
        (
            "from the size it was paused at, not the spec's",
            paused_pod(limits="150Mi", requests="150Mi", actual="150Mi"),
            "resize",
            "MemoryBumped",
            {"requests": {"memory": "225Mi"}, "limits": {"memory": "225Mi"}},
        ),
        (
            "a raise already asked for",
            paused_pod(limits="150Mi", requests="150Mi", actual="100Mi"),
            "wait",
            "ResizeInFlight",
            None,
        ),
        (
            "a resize deferred for room",
            paused_pod(limits="150Mi", requests="150Mi", actual="100Mi", conditions=(PENDING,)),
            "wait",
            "ResizeInFlight",
            None,
        ),
        (
            "within the timeout",
            paused_pod(annotations={"inplace.dev/pause-timeout": "10s"}),
            "resize",
            "MemoryBumped",
            {"requests": {"memory": "150Mi"}, "limits": {"memory": "150Mi"}},
        ),
        (
            "past the timeout: give up",
            paused_pod(annotations={"inplace.dev/pause-timeout": "5s"}),
            "give-up",
            "PauseTimedOut",
            None,
        ),
        (
            "a bad annotation is no bump",
            paused_pod(annotations={"inplace.dev/memory-on-pause": "lots"}),
            "none",
            "InvalidAnnotation",
            None,
        ),
        ("no limit", paused_pod(limits=None, requests=None), "none", "NoLimit", None),
    ],
)
def test_decide(
    name: str, pod: dict[str, Any], action: str, reason: str, body: dict[str, Any] | None
) -> None:
    decision = decide(pod, now=NOW)
    assert (decision.action, decision.reason) == (action, reason), decision.message
    if body is None:
        assert not decision.bumps
    else:
        assert decision.resize_body() == {
            "spec": {"containers": [{"name": "main", "resources": body}]}
        }


def test_covered_by_a_vpa_is_left_to_it() -> None:
    decision = decide(paused_pod(), now=NOW, covered_by="web-vpa")
    assert (decision.action, decision.reason) == ("none", "CoveredByVPA")
    assert "web-vpa" in decision.message


def test_message_says_what_was_asked() -> None:
    decision = decide(paused_pod(annotations={"inplace.dev/memory-max": "120Mi"}), now=NOW)
    assert decision.message == (
        "memory limit raised for the pause: main 100Mi -> 120Mi "
        "(inplace.dev/memory-on-pause x1.5) (capped at inplace.dev/memory-max 120Mi)"
    )


@given(
    request_mi=st.integers(1, 4096),
    extra_mi=st.integers(0, 4096),
    step=st.sampled_from(["x1.1", "x1.5", "x2", "+1Mi", "+512Mi", "+3G"]),
    cap_mi=st.one_of(st.none(), st.integers(1, 16384)),
)
def test_a_bump_grows_the_limit_keeps_the_qos_class_and_respects_the_cap(
    request_mi: int, extra_mi: int, step: str, cap_mi: int | None
) -> None:
    annotations = {"inplace.dev/memory-on-pause": step}
    if cap_mi is not None:
        annotations["inplace.dev/memory-max"] = f"{cap_mi}Mi"
    limit_mi = request_mi + extra_mi
    pod = paused_pod(annotations=annotations, requests=f"{request_mi}Mi", limits=f"{limit_mi}Mi")
    decision = decide(pod, now=NOW)
    if cap_mi is not None and cap_mi <= limit_mi:
        assert decision.action == "capped"
        return
    assert decision.action == "resize"
    (bump,) = decision.bumps
    assert bump.new_limit > bump.limit == limit_mi * Mi
    assert cap_mi is None or bump.new_limit <= cap_mi * Mi
    assert bump.new_request is not None and bump.new_request <= bump.new_limit
    resized = paused_pod(requests=str(bump.new_request), limits=str(bump.new_limit))
    resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "100m"
    assert qos_class(resized) == qos_class(pod)
