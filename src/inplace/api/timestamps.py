"""The API's time stamps and durations: the one place every component formats and parses them.

Kubernetes writes ``metav1.Time`` with second precision (``2026-12-03T07:00:00Z``) and
``metav1.MicroTime`` (leases, events' ``eventTime``) with microseconds; durations (flags,
annotations) are written as Go writes them (``90s``, ``1m30s``, ``1.5h``).
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = [
    "go_time_quote",
    "parse_go_duration",
    "parse_go_duration_ns",
    "parse_rfc3339",
    "rfc3339",
    "rfc3339_micro",
]


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


_DURATION_NANOS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}


def parse_go_duration_ns(text: str) -> int:
    """Go's ``time.ParseDuration`` exactly: nanoseconds, Go's overflow rules and error
    messages (ValueError), so ``@every`` schedules and flags read as Go reads them."""
    original = text
    negative = False

    def invalid(message: str = "invalid duration") -> ValueError:
        return ValueError(f"time: {message} {go_time_quote(original)}")

    if text[:1] in ("-", "+"):
        negative = text[0] == "-"
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise invalid()
    total = 0
    limit = 1 << 63
    while text:
        if not (text[0] == "." or "0" <= text[0] <= "9"):
            raise invalid()
        index = 0
        whole = 0
        while index < len(text) and "0" <= text[index] <= "9":
            if whole > limit // 10:
                raise invalid()
            whole = whole * 10 + ord(text[index]) - ord("0")
            if whole > limit:
                raise invalid()
            index += 1
        had_whole = index > 0
        text = text[index:]
        fraction, scale, had_fraction = 0, 1.0, False
        if text[:1] == ".":
            text = text[1:]
            index = 0
            overflow = False
            while index < len(text) and "0" <= text[index] <= "9":
                if not overflow:
                    if fraction > (limit - 1) // 10:
                        overflow = True
                    else:
                        candidate = fraction * 10 + ord(text[index]) - ord("0")
                        if candidate > limit:
                            overflow = True
                        else:
                            fraction = candidate
                            scale *= 10
                index += 1
            had_fraction = index > 0
            text = text[index:]
        if not had_whole and not had_fraction:
            raise invalid()
        index = 0
        while index < len(text) and not (text[index] == "." or "0" <= text[index] <= "9"):
            index += 1
        if index == 0:
            raise invalid("missing unit in duration")
        unit_text, text = text[:index], text[index:]
        unit = _DURATION_NANOS.get(unit_text)
        if unit is None:
            raise invalid(f"unknown unit {go_time_quote(unit_text)} in duration")
        if whole > limit // unit:
            raise invalid()
        value = whole * unit
        if fraction > 0:
            value += int(float(fraction) * (float(unit) / scale))
            if value > limit:
                raise invalid()
        total += value
        if total > limit:
            raise invalid()
    if negative:
        return -total
    if total > limit - 1:
        raise invalid()
    return total


def parse_go_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` in seconds: a signed sequence of decimal numbers, each
    with an optional fraction and a unit (``ns``, ``us``/``µs``, ``ms``, ``s``, ``m``,
    ``h``), such as ``300ms``, ``-1.5h`` or ``2h45m``; ``0`` alone needs no unit. Raises
    ValueError with Go's message for anything else."""
    return parse_go_duration_ns(text) / 1_000_000_000


def go_time_quote(text: str) -> str:
    """The time package's ``quote``: non-ASCII and control bytes as ``\\xNN``."""
    out = ['"']
    for c in text:
        if ord(c) >= 0x80 or c < " ":
            out.extend(f"\\x{byte:02x}" for byte in c.encode("utf-8", "surrogatepass"))
        else:
            if c in '"\\':
                out.append("\\")
            out.append(c)
    out.append('"')
    return "".join(out)
