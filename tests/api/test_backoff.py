"""The back-off rule, as a table."""

from __future__ import annotations

import pytest

from inplace.api.backoff import RESIZE_RETRY, Backoff


@pytest.mark.parametrize(
    ("previous", "expected"),
    [(None, 1.0), (0.0, 1.0), (1.0, 2.0), (2.0, 4.0), (200.0, 300.0), (300.0, 300.0)],
)
def test_next(previous: float | None, expected: float) -> None:
    assert RESIZE_RETRY.next(previous) == expected


@pytest.mark.parametrize(
    ("attempts", "expected"), [(-1, 0.5), (0, 0.5), (1, 1.5), (2, 4.5), (3, 10.0), (10_000, 10.0)]
)
def test_after(attempts: int, expected: float) -> None:
    assert Backoff(0.5, 10.0, factor=3.0).after(attempts) == expected
