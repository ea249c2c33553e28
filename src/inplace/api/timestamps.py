"""The API's time stamps and durations: the one place every component formats and parses them.

Kubernetes writes ``metav1.Time`` with second precision (``2026-12-03T07:00:00Z``) and
``metav1.MicroTime`` (leases, events' ``eventTime``) with microseconds; durations (flags,
annotations) are written as Go writes them (``90s``, ``1m30s``, ``1.5h``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from fractions import Fraction
from typing import Final

__all__ = ["parse_go_duration", "parse_rfc3339", "rfc3339", "rfc3339_micro"]


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


_DURATION_UNITS: Final = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "\u00b5s": Fraction(1, 10**6),
    "\u03bcs": Fraction(1, 10**6),
    "ms": Fraction(1, 1000),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}
_DURATION_PART: Final = re.compile(r"(\d*(?:\.\d*)?)([^\d.]*)")


def parse_go_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` in seconds: a signed sequence of decimal numbers, each
    with an optional fraction and a unit (``ns``, ``us``/``µs``, ``ms``, ``s``, ``m``,
    ``h``), such as ``300ms``, ``-1.5h`` or ``2h45m``; ``0`` alone needs no unit. Raises
    ValueError with Go's message for anything else."""
    quoted = '"' + text + '"'
    rest = text
    sign = 1
    if rest[:1] in ("-", "+"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise ValueError(f"time: invalid duration {quoted}")
    total = Fraction(0)
    while rest:
        match = _DURATION_PART.match(rest)
        assert match is not None  # every group is optional: the pattern always matches
        number, unit = match.group(1), match.group(2)
        if not number or number == ".":
            raise ValueError(f"time: invalid duration {quoted}")
        if not unit:
            raise ValueError(f"time: missing unit in duration {quoted}")
        if unit not in _DURATION_UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration {quoted}')
        total += Fraction(number) * _DURATION_UNITS[unit]
        rest = rest[match.end() :]
    return float(sign * total)
