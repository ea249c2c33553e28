"""CronJob schedules, as upstream reads them: robfig/cron v3's ``ParseStandard``.

Upstream's CronJob validation (``pkg/apis/batch/validation``, through
``pkg/util/parsers.ParseCronScheduleWithPanicRecovery``) and its controller
(``pkg/controller/cronjob``) both use ``github.com/robfig/cron/v3`` (v3.0.1). This module is
that parser and its ``Next``, transcribed, so a schedule means here what it means there, to
the second and through DST changes, and a bad one is refused with the same words:

- five fields (minute, hour, day of month, month, day of week) with ``*``, ``?``, ranges,
  steps (``N/step`` means ``N-max/step``), lists, month and weekday names (any case);
  when both day fields are restricted (neither starts with ``*`` or ``?``), a day matches
  either; ``@yearly``, ``@annually``, ``@monthly``, ``@weekly``, ``@daily``, ``@midnight``,
  ``@hourly`` and ``@every <Go duration>``; a ``TZ=<zone>`` or ``CRON_TZ=<zone>`` prefix
  (which upstream's validation refuses on new objects, but the parser reads);
- ``next_after(t)`` walks month, day, hour, minute, second as robfig does, in the
  schedule's zone (the prefix's) or else in ``t``'s own zone (robfig's ``time.Local``
  schedules are "local to the time provided"), with Go's rule for a wall time a DST change
  skips or repeats (``go_date``): a time in the hour skipped in spring does not run that
  day, a time in the hour repeated in autumn runs twice (daily schedules too). One
  deliberate difference: where a zone skips a whole day (Pacific/Apia on 2011-12-30),
  robfig's day walk never advances and ``Next`` never returns; here it returns None.

``croniter`` is the well-kept Python library for cron expressions, but it does not follow
robfig's semantics (its day-of-month/day-of-week rule, ``L``/``#``/seconds extensions,
DST handling) nor its messages, which API clients see in a 422, hence this transcription.
"""

from __future__ import annotations

import abc
import os
import unicodedata
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from inplace.api.timestamps import parse_go_duration_ns

__all__ = [
    "ConstantDelaySchedule",
    "Schedule",
    "ScheduleError",
    "SpecSchedule",
    "go_quote",
    "load_location",
    "parse_duration",
    "parse_schedule",
]


class ScheduleError(ValueError):
    """A schedule robfig/cron refuses; ``str()`` is its error text."""


# Bit 63 marks a field written as ``*`` or ``?`` (robfig's starBit): it decides the
# day-of-month/day-of-week rule.
STAR_BIT = 1 << 63

# How far ``next_after`` looks before giving up (robfig returns Go's zero time).
YEARS_SEARCHED = 5


@dataclass(frozen=True)
class Bounds:
    low: int
    high: int
    names: dict[str, int] | None = None


SECONDS = Bounds(0, 59)
MINUTES = Bounds(0, 59)
HOURS = Bounds(0, 23)
DAYS_OF_MONTH = Bounds(1, 31)
MONTHS = Bounds(
    1,
    12,
    {
        name: number
        for number, name in enumerate(
            ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
            start=1,
        )
    },
)
DAYS_OF_WEEK = Bounds(
    0,
    6,
    {name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))},
)


class Schedule(abc.ABC):
    """A parsed schedule: ``next_after`` is robfig's ``Schedule.Next``."""

    @abc.abstractmethod
    def next_after(self, t: datetime) -> datetime | None:
        """The first activation strictly after ``t`` (timezone-aware), in ``t``'s zone.

        None where robfig returns Go's zero time: no activation within five years.
        """


@dataclass(frozen=True)
class SpecSchedule(Schedule):
    """A five-field (or descriptor) schedule as robfig's bit sets.

    ``location`` None is robfig's ``time.Local``: the schedule runs in the zone of the time
    it is asked about.
    """

    second: int
    minute: int
    hour: int
    day_of_month: int
    month: int
    day_of_week: int
    location: tzinfo | None = None

    def next_after(self, t: datetime) -> datetime | None:
        if t.tzinfo is None:
            raise ValueError("next_after needs a timezone-aware time")
        original_zone = t.tzinfo
        zone = self.location if self.location is not None else original_zone
        t = t.astimezone(zone)
        if not self._can_match():
            return None
        # The earliest possible time: the next whole second.
        t = _add(t, timedelta(seconds=1, microseconds=-t.microsecond))
        added = False
        year_limit = t.year + YEARS_SEARCHED
        while True:  # robfig's WRAP label
            if t.year > year_limit:
                return None
            wrapped = False
            while not (1 << t.month) & self.month:
                if not added:
                    added = True
                    t = go_date(t.year, t.month, 1, 0, 0, 0, zone)
                before = t
                t = go_date(t.year, t.month + 1, t.day, t.hour, t.minute, t.second, zone)
                if t <= before:
                    return None  # a day the zone skipped entirely: robfig loops for ever
                if t.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self._day_matches(t):
                if not added:
                    added = True
                    t = go_date(t.year, t.month, t.day, 0, 0, 0, zone)
                before = t
                t = go_date(t.year, t.month, t.day + 1, t.hour, t.minute, t.second, zone)
                # Midnight a DST change skipped lands on 23:00 or 01:00: back to midnight.
                if t.hour != 0:
                    if t.hour > 12:
                        t = _add(t, timedelta(hours=24 - t.hour))
                    else:
                        t = _add(t, timedelta(hours=-t.hour))
                if t <= before:
                    return None  # a day the zone skipped entirely: robfig loops for ever
                if t.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << t.hour) & self.hour:
                if not added:
                    added = True
                    t = go_date(t.year, t.month, t.day, t.hour, 0, 0, zone)
                t = _add(t, timedelta(hours=1))
                if t.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << t.minute) & self.minute:
                if not added:
                    added = True
                    t = _truncate(t, 60)
                t = _add(t, timedelta(minutes=1))
                if t.minute == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not (1 << t.second) & self.second:
                if not added:
                    added = True
                    t = _truncate(t, 1)
                t = _add(t, timedelta(seconds=1))
                if t.second == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            return t.astimezone(original_zone)

    def _day_matches(self, t: datetime) -> bool:
        """robfig's ``dayMatches``: both day fields restricted means either may match."""
        dom_match = bool((1 << t.day) & self.day_of_month)
        dow_match = bool((1 << _go_weekday(t)) & self.day_of_week)
        if self.day_of_month & STAR_BIT or self.day_of_week & STAR_BIT:
            return dom_match and dow_match
        return dom_match or dow_match

    def _can_match(self) -> bool:
        """False for a field with no value at all (``,``): robfig would walk five years."""
        return all(
            bits & ~STAR_BIT for bits in (self.second, self.minute, self.hour, self.month)
        ) and bool((self.day_of_month | self.day_of_week) & ~STAR_BIT)


@dataclass(frozen=True)
class ConstantDelaySchedule(Schedule):
    """``@every <duration>``: robfig's ``ConstantDelaySchedule``, on whole seconds."""

    delay: timedelta

    def next_after(self, t: datetime) -> datetime | None:
        if t.tzinfo is None:
            raise ValueError("next_after needs a timezone-aware time")
        return _add(t, self.delay - timedelta(microseconds=t.microsecond))


def parse_schedule(text: str) -> Schedule:
    """robfig/cron v3 ``ParseStandard(text)``, with its error messages.

    A ``TZ=`` prefix without a following space panics in robfig (a slice out of range);
    upstream's validation recovers it as ``invalid schedule format: …``, the text given here.
    """
    if not text:
        raise ScheduleError("empty spec string")
    location: tzinfo | None = None
    spec = text
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        equals = spec.find("=")
        if space < 0:
            raise ScheduleError(
                f"invalid schedule format: runtime error: slice bounds out of range [:{space}]"
            )
        name = spec[equals + 1 : space]
        try:
            location = load_location(name)
        except ScheduleError as err:
            raise ScheduleError(f"provided bad location {name}: {err}") from None
        spec = _go_trim_space(spec[space:])
    if spec.startswith("@"):
        return _parse_descriptor(spec, location)
    fields = _go_fields(spec)
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    minute, hour, day_of_month, month, day_of_week = (
        _parse_field(field, bounds)
        for field, bounds in zip(
            fields, (MINUTES, HOURS, DAYS_OF_MONTH, MONTHS, DAYS_OF_WEEK), strict=True
        )
    )
    return SpecSchedule(
        second=1 << SECONDS.low,
        minute=minute,
        hour=hour,
        day_of_month=day_of_month,
        month=month,
        day_of_week=day_of_week,
        location=location,
    )


def load_location(name: str) -> tzinfo | None:
    """Go's ``time.LoadLocation``: None for ``Local``, UTC for ``""`` and ``UTC``.

    Raises ``ScheduleError`` with Go's message.
    """
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        return None
    if ".." in name or name[0] in "/\\":
        raise ScheduleError("time: invalid location name")
    try:
        return ZoneInfo(name)
    except IsADirectoryError:
        raise ScheduleError("is a directory") from None
    except ValueError:
        # Not a TZif file (zone.tab), or a name Python refuses outright.
        raise ScheduleError("malformed time zone information") from None
    except (KeyError, OSError):
        # ZoneInfoNotFoundError is a KeyError.
        if _names_a_file_as_directory(name):
            raise ScheduleError("not a directory") from None
        raise ScheduleError(f"unknown time zone {name}") from None


def _names_a_file_as_directory(name: str) -> bool:
    """Whether a parent of ``name`` is a file in a zoneinfo directory (Go: ENOTDIR)."""
    parts = name.split("/")
    for root in zoneinfo.TZPATH:
        for depth in range(1, len(parts)):
            if os.path.isfile(os.path.join(root, *parts[:depth])):
                return True
    return False


def _parse_descriptor(descriptor: str, location: tzinfo | None) -> Schedule:
    every_hour = _all_bits(HOURS)
    every_day = _all_bits(DAYS_OF_MONTH)
    every_month = _all_bits(MONTHS)
    every_weekday = _all_bits(DAYS_OF_WEEK)
    first = 1  # second 0, minute 0, hour 0: bit 0
    shapes = {
        "@yearly": (first, 1 << 1, 1 << 1, every_weekday),
        "@annually": (first, 1 << 1, 1 << 1, every_weekday),
        "@monthly": (first, 1 << 1, every_month, every_weekday),
        "@weekly": (first, every_day, every_month, 1 << 0),
        "@daily": (first, every_day, every_month, every_weekday),
        "@midnight": (first, every_day, every_month, every_weekday),
        "@hourly": (every_hour, every_day, every_month, every_weekday),
    }
    if descriptor in shapes:
        hour, day_of_month, month, day_of_week = shapes[descriptor]
        return SpecSchedule(first, first, hour, day_of_month, month, day_of_week, location)
    every = "@every "
    if descriptor.startswith(every):
        try:
            nanoseconds = parse_duration(descriptor[len(every) :])
        except ScheduleError as err:
            raise ScheduleError(f"failed to parse duration {descriptor}: {err}") from None
        # robfig's Every: at least a second, fractions of a second dropped (Go's % truncates).
        nanoseconds = max(nanoseconds, 1_000_000_000)
        whole_seconds = nanoseconds // 1_000_000_000
        return ConstantDelaySchedule(timedelta(seconds=whole_seconds))
    raise ScheduleError(f"unrecognized descriptor: {descriptor}")


def _parse_field(field: str, bounds: Bounds) -> int:
    """robfig's ``getField``: a comma-separated list of ranges (empty items skipped)."""
    bits = 0
    for expression in field.split(","):
        if expression:
            bits |= _parse_range(expression, bounds)
    return bits


def _parse_range(expression: str, bounds: Bounds) -> int:
    """robfig's ``getRange``: ``number | number "-" number [ "/" number ]``, ``*``, ``?``."""
    range_and_step = expression.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
        extra = STAR_BIT
    else:
        start = _parse_int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _parse_int_or_name(low_and_high[1], bounds.names)
        else:
            raise ScheduleError(f"too many hyphens: {expression}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _parse_non_negative_int(range_and_step[1])
        if single:  # "N/step" means "N-max/step"
            end = bounds.high
        if step > 1:
            extra = 0
    else:
        raise ScheduleError(f"too many slashes: {expression}")
    if start < bounds.low:
        raise ScheduleError(
            f"beginning of range ({start}) below minimum ({bounds.low}): {expression}"
        )
    if end > bounds.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({bounds.high}): {expression}")
    if start > end:
        raise ScheduleError(
            f"beginning of range ({start}) beyond end of range ({end}): {expression}"
        )
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expression}")
    bits = 0
    for value in range(start, end + 1, step):
        bits |= 1 << value
    return bits | extra


def _parse_int_or_name(expression: str, names: dict[str, int] | None) -> int:
    if names is not None:
        # Go's strings.ToLower, for the names' ASCII letters.
        named = names.get(expression.lower())
        if named is not None:
            return named
    return _parse_non_negative_int(expression)


def _parse_non_negative_int(expression: str) -> int:
    """robfig's ``mustParseInt``: Go's ``strconv.Atoi``, then no negatives."""
    digits = expression[1:] if expression[:1] in ("+", "-") else expression
    atoi = f"strconv.Atoi: parsing {go_quote(expression)}"
    if not digits or not all("0" <= c <= "9" for c in digits):
        raise ScheduleError(f"failed to parse int from {expression}: {atoi}: invalid syntax")
    number = int(expression)
    if not -(1 << 63) <= number < 1 << 63:
        raise ScheduleError(f"failed to parse int from {expression}: {atoi}: value out of range")
    if number < 0:
        raise ScheduleError(f"negative number ({number}) not allowed: {expression}")
    return number


def _all_bits(bounds: Bounds) -> int:
    bits = 0
    for value in range(bounds.low, bounds.high + 1):
        bits |= 1 << value
    return bits | STAR_BIT


def parse_duration(text: str) -> int:
    """Go's ``time.ParseDuration``, in nanoseconds, with its error messages (``@every``)."""
    try:
        return parse_go_duration_ns(text)
    except ValueError as exc:
        raise ScheduleError(str(exc)) from None


def go_date(
    year: int, month: int, day: int, hour: int, minute: int, second: int, zone: tzinfo
) -> datetime:
    """Go's ``time.Date``: out-of-range fields carry over; a wall time a DST change skips
    or repeats takes the offset Go picks (the zone's offset at ``wall - offset(wall as UTC)``).
    """
    month_index = month - 1
    year += month_index // 12
    month = month_index % 12 + 1
    wall = datetime(year, month, 1, tzinfo=UTC) + timedelta(
        days=day - 1, hours=hour, minutes=minute, seconds=second
    )
    first_guess = _offset_at(wall, zone)
    offset = _offset_at(wall - first_guess, zone)
    return (wall - offset).astimezone(zone)


def _offset_at(instant: datetime, zone: tzinfo) -> timedelta:
    offset = instant.astimezone(zone).utcoffset()
    return offset if offset is not None else timedelta(0)


def _add(t: datetime, delta: timedelta) -> datetime:
    """Go's ``Time.Add``: elapsed time, not wall-clock arithmetic."""
    zone = t.tzinfo
    assert zone is not None
    return (t.astimezone(UTC) + delta).astimezone(zone)


def _truncate(t: datetime, seconds: int) -> datetime:
    """Go's ``Time.Truncate`` to a whole number of seconds dividing a minute (absolute time)."""
    zone = t.tzinfo
    assert zone is not None
    utc = t.astimezone(UTC)
    utc = utc.replace(second=utc.second - utc.second % seconds, microsecond=0)
    return utc.astimezone(zone)


def _go_weekday(t: datetime) -> int:
    """Go's ``Weekday``: Sunday is 0."""
    return (t.weekday() + 1) % 7


def _go_is_space(c: str) -> bool:
    """Go's ``unicode.IsSpace`` (Python's ``isspace`` also counts U+001C to U+001F)."""
    if c in "\t\n\v\f\r \x85\xa0":
        return True
    return ord(c) > 0xFF and unicodedata.category(c) in ("Zs", "Zl", "Zp")


def _go_fields(text: str) -> list[str]:
    """Go's ``strings.Fields``."""
    fields: list[str] = []
    current: list[str] = []
    for c in text:
        if _go_is_space(c):
            if current:
                fields.append("".join(current))
                current = []
        else:
            current.append(c)
    if current:
        fields.append("".join(current))
    return fields


def _go_trim_space(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _go_is_space(text[start]):
        start += 1
    while end > start and _go_is_space(text[end - 1]):
        end -= 1
    return text[start:end]


_STRCONV_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` (``%q``): printable runes kept, others escaped."""
    out = ['"']
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif c in _STRCONV_ESCAPES:
            out.append(_STRCONV_ESCAPES[c])
        elif c == " " or (c.isprintable() and not _go_is_space(c)):
            out.append(c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    out.append('"')
    return "".join(out)
