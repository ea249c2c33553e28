"""robfig/cron v3's ParseStandard and Next: its own test tables (parser_test.go, spec_test.go,
six-field specs with a zero seconds field written as five), and the answers and messages of
robfig v3.0.1 itself for the cases its tables leave out (DST in other zones, Go's error
texts), taken by running it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from inplace.api.cron import (
    STAR_BIT,
    ConstantDelaySchedule,
    ScheduleError,
    SpecSchedule,
    parse_duration,
    parse_schedule,
)


def bits(*values: int) -> int:
    total = 0
    for value in values:
        total |= 1 << value
    return total


def local(text: str) -> datetime:
    """robfig's ``getTime``: its human forms in the test's local zone (UTC here)."""
    for layout in ("%a %b %d %H:%M %Y", "%a %b %d %H:%M:%S %Y"):
        try:
            return datetime.strptime(text, layout).replace(tzinfo=UTC)
        except ValueError:
            pass
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z")


# parser_test.go TestRange, through a field with the same bounds.
@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("5", bits(5)),
        ("0", bits(0)),
        ("5-5", bits(5)),
        ("5-6", bits(5, 6)),
        ("5-7/2", bits(5, 7)),
        ("5-7/1", bits(5, 6, 7)),
        ("5-6/2", bits(5)),
        ("*/2", bits(*range(0, 24, 2))),
        ("*", bits(*range(24)) | STAR_BIT),
        ("*/1", bits(*range(24)) | STAR_BIT),
        ("?", bits(*range(24)) | STAR_BIT),
        # TestField
        ("5,6", bits(5, 6)),
        ("5,6,7", bits(5, 6, 7)),
        ("1,5-7/2,3", bits(1, 5, 7, 3)),
        # robfig skips empty list items, and reads "*-x" as "*".
        ("1,,2", bits(1, 2)),
        (",", 0),
        ("*-5", bits(*range(24)) | STAR_BIT),
        ("3/7", bits(3, 10, 17)),
    ],
)
def test_hour_field(field: str, expected: int) -> None:
    schedule = parse_schedule(f"0 {field} * * *")
    assert isinstance(schedule, SpecSchedule)
    assert schedule.hour == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # parser_test.go TestRange's errors, with robfig's whole text.
        ("5--5 * * * *", "too many hyphens: 5--5"),
        ("* * * jan-x *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("*/-12 * * * *", "negative number (-12) not allowed: -12"),
        ("*//2 * * * *", "too many slashes: *//2"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("5-3 * * * *", "beginning of range (5) beyond end of range (3): 5-3"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("TZ=America/New_York 15/0 * * * *", "step of range should be a positive number: 15/0"),
        # TestParseScheduleErrors and TestErrors, for the standard parser.
        ("* 5 j * *", 'failed to parse int from j: strconv.Atoi: parsing "j": invalid syntax'),
        ("@every Xm", 'failed to parse duration @every Xm: time: invalid duration "Xm"'),
        ("@unrecognized", "unrecognized descriptor: @unrecognized"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("", "empty spec string"),
        ("xyz", "expected exactly 5 fields, found 1: [xyz]"),
        ("0 60 * * *", "end of range (60) above maximum (23): 60"),
        (
            "0 0 * * XYZ",
            'failed to parse int from XYZ: strconv.Atoi: parsing "XYZ": invalid syntax',
        ),
        # robfig v3.0.1's answers to the rest.
        ("0 0 0 * * *", "expected exactly 5 fields, found 6: [0 0 0 * * *]"),
        (" ", "expected exactly 5 fields, found 0: []"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("* 24 * * *", "end of range (24) above maximum (23): 24"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("- * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
        (
            "99999999999999999999 * * * *",
            "failed to parse int from 99999999999999999999: strconv.Atoi: parsing "
            '"99999999999999999999": value out of range',
        ),
        (
            "1_0 * * * *",
            'failed to parse int from 1_0: strconv.Atoi: parsing "1_0": invalid syntax',
        ),
        ("@Daily", "unrecognized descriptor: @Daily"),
        ("@daily ", "unrecognized descriptor: @daily "),
        ("@every", "unrecognized descriptor: @every"),
        ("@every ", 'failed to parse duration @every : time: invalid duration ""'),
        (
            "@every 1y",
            'failed to parse duration @every 1y: time: unknown unit "y" in duration "1y"',
        ),
        ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
        (
            "@every 1\u00e9s",
            'failed to parse duration @every 1\u00e9s: time: unknown unit "\\xc3\\xa9s" '
            'in duration "1\\xc3\\xa9s"',
        ),
        (
            "@every 9999999999h",
            'failed to parse duration @every 9999999999h: time: invalid duration "9999999999h"',
        ),
        (
            "TZ=Nowhere/Zone * * * * *",
            "provided bad location Nowhere/Zone: unknown time zone Nowhere/Zone",
        ),
        ("TZ=../etc * * * * *", "provided bad location ../etc: time: invalid location name"),
        ("TZ=/etc * * * * *", "provided bad location /etc: time: invalid location name"),
        ("TZ=America * * * * *", "provided bad location America: is a directory"),
        (
            "TZ=zone.tab * * * * *",
            "provided bad location zone.tab: malformed time zone information",
        ),
        (
            "TZ=America/New_York/x * * * * *",
            "provided bad location America/New_York/x: not a directory",
        ),
        # robfig panics on a prefix with no space; upstream's validation recovers it so.
        ("TZ=UTC", "invalid schedule format: runtime error: slice bounds out of range [:-1]"),
    ],
)
def test_errors(spec: str, message: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_schedule(spec)
    assert str(caught.value) == message


def test_schedule_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="empty spec string"):
        parse_schedule("")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # parser_test.go TestParseSchedule, standard parser.
        (
            "5 * * * *",
            SpecSchedule(
                1,
                bits(5),
                bits(*range(24)) | STAR_BIT,
                bits(*range(1, 32)) | STAR_BIT,
                bits(*range(1, 13)) | STAR_BIT,
                bits(*range(7)) | STAR_BIT,
            ),
        ),
        (
            "CRON_TZ=UTC  5 * * * *",
            SpecSchedule(
                1,
                bits(5),
                bits(*range(24)) | STAR_BIT,
                bits(*range(1, 32)) | STAR_BIT,
                bits(*range(1, 13)) | STAR_BIT,
                bits(*range(7)) | STAR_BIT,
                UTC,
            ),
        ),
        (
            "TZ=Asia/Tokyo @midnight",
            SpecSchedule(
                1,
                1,
                1,
                bits(*range(1, 32)) | STAR_BIT,
                bits(*range(1, 13)) | STAR_BIT,
                bits(*range(7)) | STAR_BIT,
                ZoneInfo("Asia/Tokyo"),
            ),
        ),
        ("@yearly", SpecSchedule(1, 1, 1, bits(1), bits(1), bits(*range(7)) | STAR_BIT)),
        ("@annually", SpecSchedule(1, 1, 1, bits(1), bits(1), bits(*range(7)) | STAR_BIT)),
        ("@every 5m", ConstantDelaySchedule(timedelta(minutes=5))),
        # Every: less than a second is a second; fractions of a second are dropped.
        ("@every 500ms", ConstantDelaySchedule(timedelta(seconds=1))),
        ("@every 1.7s", ConstantDelaySchedule(timedelta(seconds=1))),
        ("@every 1h30m", ConstantDelaySchedule(timedelta(minutes=90))),
        (
            "TZ=Local 5 * * * *",
            SpecSchedule(
                1,
                bits(5),
                bits(*range(24)) | STAR_BIT,
                bits(*range(1, 32)) | STAR_BIT,
                bits(*range(1, 13)) | STAR_BIT,
                bits(*range(7)) | STAR_BIT,
            ),
        ),
        # Names in any case; "?" is "*".
        (
            "0 0 ? JAN-dec SUN-sat",
            SpecSchedule(
                1, 1, 1, bits(*range(1, 32)) | STAR_BIT, bits(*range(1, 13)), bits(*range(7))
            ),
        ),
    ],
)
def test_parse(spec: str, expected: object) -> None:
    assert parse_schedule(spec) == expected


# spec_test.go TestActivation: whether Next(t - 1s) is t.
@pytest.mark.parametrize(
    ("time", "spec", "expected"),
    [
        ("Mon Jul 9 15:00 2012", "0/15 * * * *", True),
        ("Mon Jul 9 15:45 2012", "0/15 * * * *", True),
        ("Mon Jul 9 15:40 2012", "0/15 * * * *", False),
        ("Mon Jul 9 15:05 2012", "5/15 * * * *", True),
        ("Mon Jul 9 15:20 2012", "5/15 * * * *", True),
        ("Mon Jul 9 15:50 2012", "5/15 * * * *", True),
        ("Sun Jul 15 15:00 2012", "0/15 * * Jul *", True),
        ("Sun Jul 15 15:00 2012", "0/15 * * Jun *", False),
        ("Sun Jul 15 08:30 2012", "30 08 ? Jul Sun", True),
        ("Sun Jul 15 08:30 2012", "30 08 15 Jul ?", True),
        ("Mon Jul 16 08:30 2012", "30 08 ? Jul Sun", False),
        ("Mon Jul 16 08:30 2012", "30 08 15 Jul ?", False),
        ("Mon Jul 9 15:00 2012", "@hourly", True),
        ("Mon Jul 9 15:04 2012", "@hourly", False),
        ("Mon Jul 9 15:00 2012", "@daily", False),
        ("Mon Jul 9 00:00 2012", "@daily", True),
        ("Mon Jul 9 00:00 2012", "@weekly", False),
        ("Sun Jul 8 00:00 2012", "@weekly", True),
        ("Sun Jul 8 01:00 2012", "@weekly", False),
        ("Sun Jul 8 00:00 2012", "@monthly", False),
        ("Sun Jul 1 00:00 2012", "@monthly", True),
        # Both day fields restricted: either matches.
        ("Sun Jul 15 00:00 2012", "* * 1,15 * Sun", True),
        ("Fri Jun 15 00:00 2012", "* * 1,15 * Sun", True),
        ("Wed Aug 1 00:00 2012", "* * 1,15 * Sun", True),
        ("Sun Jul 15 00:00 2012", "* * */10 * Sun", True),
        # One of them a star: both must match.
        ("Sun Jul 15 00:00 2012", "* * * * Mon", False),
        ("Mon Jul 9 00:00 2012", "* * 1,15 * *", False),
        ("Sun Jul 15 00:00 2012", "* * 1,15 * *", True),
        ("Sun Jul 15 00:00 2012", "* * */2 * Sun", True),
    ],
)
def test_activation(time: str, spec: str, expected: bool) -> None:
    at = local(time)
    assert (parse_schedule(spec).next_after(at - timedelta(seconds=1)) == at) is expected


NEW_YORK = "TZ=America/New_York "


# spec_test.go TestNext (its six-field specs with seconds 0, written as five) and
# TestNextWithTz; then robfig v3.0.1's own answers in other zones.
@pytest.mark.parametrize(
    ("time", "spec", "expected"),
    [
        ("Mon Jul 9 14:45 2012", "0/15 * * * *", "Mon Jul 9 15:00 2012"),
        ("Mon Jul 9 14:59 2012", "0/15 * * * *", "Mon Jul 9 15:00 2012"),
        ("Mon Jul 9 14:59:59 2012", "0/15 * * * *", "Mon Jul 9 15:00 2012"),
        ("Mon Jul 9 15:45 2012", "20-35/15 * * * *", "Mon Jul 9 16:20 2012"),
        ("Mon Jul 9 23:46 2012", "*/15 * * * *", "Tue Jul 10 00:00 2012"),
        ("Mon Jul 9 23:45 2012", "20-35/15 * * * *", "Tue Jul 10 00:20 2012"),
        ("Mon Jul 9 23:35 2012", "0 0 9 Apr-Oct ?", "Thu Aug 9 00:00 2012"),
        ("Mon Jul 9 23:35 2012", "0 0 */5 Apr,Aug,Oct Mon", "Tue Aug 1 00:00 2012"),
        ("Mon Jul 9 23:35 2012", "0 0 */5 Oct Mon", "Mon Oct 1 00:00 2012"),
        ("Mon Jul 9 23:35 2012", "0 0 * Feb Mon", "Mon Feb 4 00:00 2013"),
        ("Mon Jul 9 23:35 2012", "0 0 * Feb Mon/2", "Fri Feb 1 00:00 2013"),
        ("Mon Dec 31 23:59:45 2012", "* * * * *", "Tue Jan 1 00:00:00 2013"),
        ("Mon Jul 9 23:35 2012", "0 0 29 Feb ?", "Mon Feb 29 00:00 2016"),
        # DST: 2am EST (-5) -> 3am EDT (-4).
        ("2012-03-11T00:00:00-0500", NEW_YORK + "30 2 11 Mar ?", "2013-03-11T02:30:00-0400"),
        ("2012-03-11T00:00:00-0500", NEW_YORK + "0 * * * ?", "2012-03-11T01:00:00-0500"),
        ("2012-03-11T01:00:00-0500", NEW_YORK + "0 * * * ?", "2012-03-11T03:00:00-0400"),
        ("2012-03-11T03:00:00-0400", NEW_YORK + "0 * * * ?", "2012-03-11T04:00:00-0400"),
        ("2012-03-11T04:00:00-0400", NEW_YORK + "0 * * * ?", "2012-03-11T05:00:00-0400"),
        (
            "2012-03-11T01:00:00-0500",
            "CRON_TZ=America/New_York 0 * * * ?",
            "2012-03-11T03:00:00-0400",
        ),
        ("2012-03-11T00:00:00-0500", NEW_YORK + "0 1 * * ?", "2012-03-11T01:00:00-0500"),
        ("2012-03-11T01:00:00-0500", NEW_YORK + "0 1 * * ?", "2012-03-12T01:00:00-0400"),
        # The 2am nightly job is skipped.
        ("2012-03-11T00:00:00-0500", NEW_YORK + "0 2 * * ?", "2012-03-12T02:00:00-0400"),
        # DST: 2am EDT (-4) -> 1am EST (-5).
        ("2012-11-04T00:00:00-0400", NEW_YORK + "30 2 04 Nov ?", "2012-11-04T02:30:00-0500"),
        ("2012-11-04T01:45:00-0400", NEW_YORK + "30 1 04 Nov ?", "2012-11-04T01:30:00-0500"),
        ("2012-11-04T00:00:00-0400", NEW_YORK + "0 * * * ?", "2012-11-04T01:00:00-0400"),
        ("2012-11-04T01:00:00-0400", NEW_YORK + "0 * * * ?", "2012-11-04T01:00:00-0500"),
        ("2012-11-04T01:00:00-0500", NEW_YORK + "0 * * * ?", "2012-11-04T02:00:00-0500"),
        # The 1am nightly job runs twice.
        ("2012-11-04T00:00:00-0400", NEW_YORK + "0 1 * * ?", "2012-11-04T01:00:00-0400"),
        ("2012-11-04T01:00:00-0400", NEW_YORK + "0 1 * * ?", "2012-11-04T01:00:00-0500"),
        ("2012-11-04T01:00:00-0500", NEW_YORK + "0 1 * * ?", "2012-11-05T01:00:00-0500"),
        ("2012-11-04T00:00:00-0400", NEW_YORK + "0 2 * * ?", "2012-11-04T02:00:00-0500"),
        ("2012-11-04T02:00:00-0500", NEW_YORK + "0 2 * * ?", "2012-11-05T02:00:00-0500"),
        ("2012-11-04T00:00:00-0400", NEW_YORK + "0 3 * * ?", "2012-11-04T03:00:00-0500"),
        ("2012-11-04T03:00:00-0500", NEW_YORK + "0 3 * * ?", "2012-11-05T03:00:00-0500"),
        ("2012-11-04T00:00:00-0400", NEW_YORK + "0 3 3 * ?", "2012-12-03T03:00:00-0500"),
        # Midnight a DST change skips (robfig issue 157).
        ("2018-10-17T05:00:00-0400", "TZ=America/Sao_Paulo 0 9 10 * ?", "2018-11-10T06:00:00-0500"),
        ("2018-02-14T05:00:00-0500", "TZ=America/Sao_Paulo 0 9 22 * ?", "2018-02-22T07:00:00-0500"),
        # TestNextWithTz: a schedule without a zone runs in the time's own zone.
        ("2016-01-03T13:09:03+0530", "14 14 * * *", "2016-01-03T14:14:00+0530"),
        ("2016-01-03T04:09:03+0530", "14 14 * * ?", "2016-01-03T14:14:00+0530"),
        ("2016-01-03T14:09:03+0530", "14 14 * * *", "2016-01-03T14:14:00+0530"),
        ("2016-01-03T14:00:00+0530", "14 14 * * ?", "2016-01-03T14:14:00+0530"),
        # robfig v3.0.1 in Europe/Berlin: 02:30 skipped on 31 March, run twice on 27 October.
        ("2024-03-30T12:00:00+0000", "TZ=Europe/Berlin 30 2 * * *", "2024-04-01T00:30:00+0000"),
        ("2024-10-26T12:00:00+0000", "TZ=Europe/Berlin 30 2 * * *", "2024-10-27T00:30:00+0000"),
        ("2024-10-27T00:30:00+0000", "TZ=Europe/Berlin 30 2 * * *", "2024-10-27T01:30:00+0000"),
        ("2024-10-27T01:30:00+0000", "TZ=Europe/Berlin */30 2 * * *", "2024-10-28T01:00:00+0000"),
        # Chatham's 45-minute offset, its 02:45 skipped.
        ("2023-09-23T00:00:00+0000", "TZ=Pacific/Chatham 45 2 * * *", "2023-09-23T14:00:00+0000"),
        ("2023-09-23T14:00:00+0000", "TZ=Pacific/Chatham 45 2 * * *", "2023-09-24T13:00:00+0000"),
        # @every counts elapsed seconds from the time given, its fraction dropped.
        ("2024-01-01T00:00:00.5+0000", "@every 1h30m", "2024-01-01T01:30:00+0000"),
    ],
)
def test_next(time: str, spec: str, expected: str) -> None:
    start = datetime.fromisoformat(time) if "." in time else local(time)
    found = parse_schedule(spec).next_after(start)
    assert found == local(expected)
    # robfig answers in the zone of the time it was given.
    assert found is not None and found.utcoffset() == start.utcoffset()


def test_next_in_the_zone_of_the_time_given() -> None:
    """A schedule without TZ= runs in the given time's zone: Lord Howe's half-hour DST."""
    howe = ZoneInfo("Australia/Lord_Howe")
    schedule = parse_schedule("0,30 * * * *")
    t = datetime(2023, 4, 1, 14, 0, tzinfo=UTC).astimezone(howe)
    seen = []
    for _ in range(4):
        next_time = schedule.next_after(t)
        assert next_time is not None
        t = next_time
        seen.append(t.isoformat())
    assert seen == [
        "2023-04-02T01:30:00+11:00",
        "2023-04-02T01:30:00+10:30",
        "2023-04-02T02:00:00+10:30",
        "2023-04-02T02:30:00+10:30",
    ]


@pytest.mark.parametrize(
    ("spec", "start"),
    [
        # spec_test.go's unsatisfiable schedules: Go's zero time, None here.
        ("0 0 30 Feb ?", "Mon Jul 9 23:35 2012"),
        ("0 0 31 Apr ?", "Mon Jul 9 23:35 2012"),
        # Five years searched: 29 February 2104 is eight years after 2096.
        ("0 0 29 2 *", "2097-03-01T00:00:00+0000"),
        # A field with no value.
        (", * * * *", "Mon Jul 9 23:35 2012"),
    ],
)
def test_no_next(spec: str, start: str) -> None:
    assert parse_schedule(spec).next_after(local(start)) is None


def test_a_day_the_zone_skipped() -> None:
    """Samoa skipped 30 December 2011. robfig's day walk from the 29th never advances (its
    Next never returns for these); here there is no next time."""
    apia = ZoneInfo("Pacific/Apia")
    on_the_29th = datetime(2011, 12, 29, 12, 0, tzinfo=apia)
    assert parse_schedule("0 0 31 12 *").next_after(on_the_29th) is None
    assert parse_schedule("0 12 1 * *").next_after(on_the_29th) is None
    # A walk that never steps over the 30th is robfig's: midnight of the 31st.
    daily = parse_schedule("0 0 * * *")
    assert daily.next_after(datetime(2011, 12, 29, 0, 0, tzinfo=apia)) == datetime(
        2011, 12, 31, tzinfo=apia
    )


def test_next_needs_an_aware_time() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_schedule("* * * * *").next_after(datetime(2024, 1, 1))


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("0", 0),
        ("-0", 0),
        ("1h30m", 5_400_000_000_000),
        ("1.5h", 5_400_000_000_000),
        (".5m", 30_000_000_000),
        ("1.s", 1_000_000_000),
        ("-1s", -1_000_000_000),
        ("+2us", 2_000),
        ("3\u00b5s", 3_000),
        ("4\u03bcs", 4_000),
        ("9223372036s", 9_223_372_036_000_000_000),
    ],
)
def test_parse_duration(text: str, nanoseconds: int) -> None:
    assert parse_duration(text) == nanoseconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        (".s", 'time: invalid duration ".s"'),
        ("9223372037s", 'time: invalid duration "9223372037s"'),
        ("1h-1m", 'time: unknown unit "h-" in duration "1h-1m"'),
        ("1\ts", 'time: unknown unit "\\x09s" in duration "1\\x09s"'),
    ],
)
def test_parse_duration_errors(text: str, message: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_duration(text)
    assert str(caught.value) == message
