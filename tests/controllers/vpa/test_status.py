"""A VPA's status as the recommender writes it (upstream's UpdateConditions and target checks)."""

from __future__ import annotations

from typing import Any

from inplace.controllers.vpa.status import same_status, vpa_status

REC = {"containerRecommendations": [{"containerName": "app", "target": {"cpu": "25m"}}]}
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c.get("reason", ""), c.get("message", ""))
        for c in status["conditions"]
    }


def test_a_recommendation_for_matched_pods() -> None:
    status = vpa_status(
        None,
        unsupported=None,
        pods_matched=True,
        recommendation=REC,
        low_confidence=True,
        now=T0,
    )
    assert status["recommendation"] == REC
    assert conditions(status) == {
        "LowConfidence": (
            "True",
            "",
            "the usage history is shorter than the confidence interval: the bounds are widened",
        ),
        "RecommendationProvided": ("True", "", ""),
    }


def test_no_pods_and_no_recommendation() -> None:
    status = vpa_status(
        {}, unsupported=None, pods_matched=False, recommendation=None, low_confidence=None, now=T0
    )
    assert "recommendation" not in status
    assert conditions(status) == {
        "NoPodsMatched": ("True", "NoPodsMatched", "No pods match this VPA object"),
        "RecommendationProvided": ("False", "NoPodsMatched", "No pods match this VPA object"),
    }


def test_config_unsupported_comes_first_and_goes_when_fixed() -> None:
    status = vpa_status(
        None,
        unsupported="Cannot read targetRef",
        pods_matched=False,
        recommendation=None,
        low_confidence=None,
        now=T0,
    )
    assert status["conditions"][0] == {
        "type": "ConfigUnsupported",
        "status": "True",
        "lastTransitionTime": T0,
        "message": "Cannot read targetRef",
    }
    fixed = vpa_status(
        status,
        unsupported=None,
        pods_matched=True,
        recommendation=REC,
        low_confidence=False,
        now=T1,
    )
    assert "ConfigUnsupported" not in conditions(fixed)


def test_the_last_recommendation_is_kept_when_a_pass_has_none() -> None:
    """As upstream: a restarted recommender without history leaves the status' recommendation."""
    first = vpa_status(
        None, unsupported=None, pods_matched=True, recommendation=REC, low_confidence=False, now=T0
    )
    again = vpa_status(
        first, unsupported=None, pods_matched=True, recommendation=None, low_confidence=None, now=T1
    )
    assert again["recommendation"] == REC
    assert conditions(again)["RecommendationProvided"] == ("True", "", "")


def test_transition_times_move_only_with_the_status() -> None:
    first = vpa_status(
        None, unsupported=None, pods_matched=True, recommendation=REC, low_confidence=True, now=T0
    )
    same = vpa_status(
        first, unsupported=None, pods_matched=True, recommendation=REC, low_confidence=True, now=T1
    )
    assert same == first and same_status(same, first)
    flipped = vpa_status(
        first, unsupported=None, pods_matched=True, recommendation=REC, low_confidence=False, now=T1
    )
    times = {c["type"]: c["lastTransitionTime"] for c in flipped["conditions"]}
    assert times == {"LowConfidence": T1, "RecommendationProvided": T0}
    assert not same_status(flipped, first)
