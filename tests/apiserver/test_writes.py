"""What the write paths share: the retry loop's clock and resourceVersion preconditions."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from inplace.apiserver.errors import StatusError
from inplace.apiserver.writes import RETRY_SECONDS, WriteResult, parse_resource_version, until


def test_until_yields_at_least_once_however_short() -> None:
    assert list(until(0)) == [None]
    assert list(until(-1)) == [None]


def test_until_keeps_yielding_before_its_deadline() -> None:
    assert len(list(itertools.islice(until(RETRY_SECONDS), 5))) == 5


@pytest.mark.parametrize(("value", "revision"), [("42", 42), (42, 42), ("0", 0)])
def test_parse_resource_version(value: Any, revision: int) -> None:
    assert parse_resource_version(value) == revision


@pytest.mark.parametrize("value", ["abc", "", None, "1.5", [1]])
def test_a_malformed_resource_version_is_a_bad_request(value: Any) -> None:
    with pytest.raises(StatusError) as info:
        parse_resource_version(value)
    assert (info.value.code, info.value.message) == (400, f'invalid resourceVersion "{value}"')


def test_a_write_result_is_an_update_without_warnings_by_default() -> None:
    result = WriteResult({"metadata": {"name": "g"}})
    assert (result.created, result.warnings) == (False, ())
