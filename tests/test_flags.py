"""The shared flag types (``inplace.flags``)."""

from __future__ import annotations

import argparse

import pytest

from inplace.flags import duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("40s", 40.0), ("1m30s", 90.0), ("500ms", 0.5), ("12", 12.0), ("2h", 7200.0), (" 5s ", 5.0)],
)
def test_a_duration_is_go_or_plain_seconds(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["", "s", "10x", "1m30", "-5s", "-1"])
def test_a_bad_duration_is_an_argument_error(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)
