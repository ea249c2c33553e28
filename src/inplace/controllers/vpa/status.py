"""A VPA's ``status`` as the recommender writes it: the recommendation and the conditions.

Upstream's ``model/vpa.go`` ``UpdateConditions`` and the cluster feeder's target checks:

* ``ConfigUnsupported`` True (with upstream's message) when the targetRef cannot be read or is
  not a top-most controller; removed once it can;
* ``NoPodsMatched`` True ("No pods match this VPA object") while no live pod is matched;
  removed when one is;
* ``RecommendationProvided`` True once there is a recommendation, else False (with
  NoPodsMatched's reason and message when that is why);
* ``LowConfidence`` (ours, upstream declares the type without setting it): True while the
  history behind the recommendation is shorter than the confidence interval, so its bounds
  are still widened; False after.

A condition keeps its ``lastTransitionTime`` while its status stays the same. The recommender
is the only writer of a VPA's status, so it writes the whole of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "CONFIG_UNSUPPORTED",
    "FETCHING_HISTORY",
    "LOW_CONFIDENCE",
    "NO_PODS_MATCHED",
    "RECOMMENDATION_PROVIDED",
    "same_status",
    "vpa_status",
]

RECOMMENDATION_PROVIDED: Final = "RecommendationProvided"
LOW_CONFIDENCE: Final = "LowConfidence"
NO_PODS_MATCHED: Final = "NoPodsMatched"
FETCHING_HISTORY: Final = "FetchingHistory"
CONFIG_UNSUPPORTED: Final = "ConfigUnsupported"

_ORDER: Final = (
    CONFIG_UNSUPPORTED,
    FETCHING_HISTORY,
    LOW_CONFIDENCE,
    NO_PODS_MATCHED,
    RECOMMENDATION_PROVIDED,
)


def _condition(
    old: Mapping[str, Mapping[str, Any]],
    ctype: str,
    status: bool,
    now: str,
    reason: str = "",
    message: str = "",
) -> dict[str, Any]:
    value = "True" if status else "False"
    previous = old.get(ctype)
    since = now
    if previous is not None and previous.get("status") == value:
        since = str(previous.get("lastTransitionTime") or now)
    out: dict[str, Any] = {"type": ctype, "status": value, "lastTransitionTime": since}
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


def vpa_status(
    current: Mapping[str, Any] | None,
    *,
    unsupported: str | None,
    pods_matched: bool,
    recommendation: Mapping[str, Any] | None,
    low_confidence: bool | None,
    now: str,
) -> dict[str, Any]:
    """The new ``status`` from the current one and what the recommender found.
    ``recommendation`` None keeps the one already there (upstream keeps the last
    recommendation when a pass produces none, e.g. right after a restart without history);
    ``low_confidence`` None leaves that condition out."""
    current = current or {}
    old = {
        str(c.get("type")): c
        for c in current.get("conditions") or ()
        if isinstance(c, Mapping) and c.get("type")
    }
    conditions: list[dict[str, Any]] = []
    if unsupported is not None:
        conditions.append(_condition(old, CONFIG_UNSUPPORTED, True, now, "", unsupported))
    reason = message = ""
    if not pods_matched:
        reason, message = "NoPodsMatched", "No pods match this VPA object"
        conditions.append(_condition(old, NO_PODS_MATCHED, True, now, reason, message))
    kept = recommendation if recommendation is not None else current.get("recommendation")
    has = isinstance(kept, Mapping) and bool(kept.get("containerRecommendations"))
    conditions.append(
        _condition(old, RECOMMENDATION_PROVIDED, has, now, "" if has else reason, message)
    )
    if low_confidence is not None and has:
        text = (
            "the usage history is shorter than the confidence interval: the bounds are widened"
            if low_confidence
            else ""
        )
        conditions.append(_condition(old, LOW_CONFIDENCE, low_confidence, now, "", text))
    conditions.sort(key=lambda c: _ORDER.index(c["type"]))
    out: dict[str, Any] = {"conditions": conditions}
    if has:
        out["recommendation"] = dict(kept) if isinstance(kept, Mapping) else kept
    return out


def same_status(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Equal but for nothing (a write would change nothing)."""
    return _normal(a) == _normal(b)


def _normal(status: Mapping[str, Any] | None) -> tuple[Any, Sequence[Any]]:
    status = status or {}
    conditions = [
        tuple(sorted((k, str(v)) for k, v in c.items()))
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping)
    ]
    return status.get("recommendation"), conditions
