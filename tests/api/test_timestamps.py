"""The API's time stamp formats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.api.timestamps import parse_go_duration, parse_rfc3339, rfc3339, rfc3339_micro

MOMENT = datetime(2026, 12, 3, 7, 8, 9, 123456, tzinfo=UTC)


def test_formats() -> None:
    assert rfc3339(MOMENT) == "2026-12-03T07:08:09Z"
    assert rfc3339_micro(MOMENT) == "2026-12-03T07:08:09.123456Z"
    assert rfc3339(MOMENT.timestamp()) == "2026-12-03T07:08:09Z"
    assert rfc3339(MOMENT.astimezone(timezone(timedelta(hours=2)))) == "2026-12-03T07:08:09Z"


@given(st.datetimes(min_value=datetime(1971, 1, 1), timezones=st.just(UTC)))
def test_micro_round_trip(moment: datetime) -> None:
    assert parse_rfc3339(rfc3339_micro(moment)) == moment
    assert parse_rfc3339(rfc3339(moment)) == moment.replace(microsecond=0)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("2h45m", 9900.0),
        ("300ms", 0.3),
        ("-1.5h", -5400.0),
        ("+5s", 5.0),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("0", 0.0),
        ("1us", 1e-6),
        ("1µs", 1e-6),
        ("1ns", 1e-9),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("5", 'time: missing unit in duration "5"'),
        ("1h1", 'time: missing unit in duration "1h1"'),
        ("5d", 'time: unknown unit "d" in duration "5d"'),
        ("abc", 'time: invalid duration "abc"'),
        (".s", 'time: invalid duration ".s"'),
        ("-", 'time: invalid duration "-"'),
    ],
)
def test_bad_go_durations(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_go_duration(text)
    assert str(info.value) == message
