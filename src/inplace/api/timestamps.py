"""The API's time stamps: the one place every component formats and parses them.

Kubernetes writes ``metav1.Time`` with second precision (``2026-12-03T07:00:00Z``) and
``metav1.MicroTime`` (leases, events' ``eventTime``) with microseconds.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["parse_rfc3339", "rfc3339", "rfc3339_micro"]


def rfc3339(moment: datetime | float | None = None) -> str:
    """``metav1.Time``: now, or ``moment`` (a datetime or a Unix time), to the second."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(moment: datetime | float | None = None) -> str:
    """``metav1.MicroTime``: as :func:`rfc3339` with microseconds."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(value: str) -> datetime:
    """Either form back to an aware datetime (raises ValueError for anything else)."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def _utc(moment: datetime | float | None) -> datetime:
    if moment is None:
        return datetime.now(UTC)
    if isinstance(moment, int | float):
        return datetime.fromtimestamp(moment, UTC)
    return moment.astimezone(UTC)
