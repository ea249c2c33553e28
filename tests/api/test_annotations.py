"""Our annotations' formats: the pause bump, its cap and its timeout."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inplace.api.annotations import (
    MemoryStep,
    parse_memory_max,
    parse_memory_on_pause,
    parse_pause_timeout,
)

Mi = 2**20


@pytest.mark.parametrize(
    ("text", "step"),
    [
        ("+512Mi", MemoryStep(add=512 * Mi)),
        ("+1G", MemoryStep(add=10**9)),
        ("+1", MemoryStep(add=1)),
        ("x1.5", MemoryStep(factor=Fraction(3, 2))),
        ("x2", MemoryStep(factor=Fraction(2))),
        ("x1.01", MemoryStep(factor=Fraction(101, 100))),
    ],
)
def test_memory_on_pause(text: str, step: MemoryStep) -> None:
    assert parse_memory_on_pause(text) == step


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("512Mi", "must be"),
        ("+0", "greater than 0"),
        ("+-1Mi", "greater than 0"),
        ("+lots", "quantities must match"),
        ("x1", "factor must be greater than 1"),
        ("x0.9", "factor must be greater than 1"),
        ("x", "must be"),
        ("x1.2.3", "must be"),
        ("x-2", "must be"),
        ("*2", "must be"),
        ("", "must be"),
    ],
)
def test_bad_memory_on_pause(text: str, detail: str) -> None:
    with pytest.raises(ValueError, match=detail):
        parse_memory_on_pause(text)


@pytest.mark.parametrize(
    ("step", "limit", "bumped"),
    [
        (MemoryStep(add=512 * Mi), 1024 * Mi, 1536 * Mi),
        (MemoryStep(factor=Fraction(3, 2)), 100 * Mi, 150 * Mi),
        (MemoryStep(factor=Fraction(3, 2)), 3, 5),  # rounded up to a whole byte
    ],
)
def test_memory_step_apply(step: MemoryStep, limit: int, bumped: int) -> None:
    assert step.apply(limit) == bumped


@given(st.integers(1, 2**50), st.fractions(min_value=Fraction(1001, 1000), max_value=10))
def test_a_factor_always_grows_the_limit(limit: int, factor: Fraction) -> None:
    assert MemoryStep(factor=factor).apply(limit) >= limit * factor


def test_memory_max_and_pause_timeout() -> None:
    assert parse_memory_max("4Gi") == 4 * 2**30
    assert parse_pause_timeout("1m30s") == 90.0
    for bad in ("0", "-1Gi", "four"):
        with pytest.raises(ValueError):
            parse_memory_max(bad)
    for bad in ("0", "-5s", "5", "5d", "soon"):
        with pytest.raises(ValueError):
            parse_pause_timeout(bad)
