"""The API's time stamp formats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from inplace.api.timestamps import parse_rfc3339, rfc3339, rfc3339_micro

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
