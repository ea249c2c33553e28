"""Bounded polling for tests: the one helper every test waits with.

A timeout here is a hang guard, never a timing assertion: it fails the test only when the
condition is not reached at all in a generous time, because these machines are shared and
noisy.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

import pytest


def wait_until(
    predicate: Callable[[], Any],
    *,
    timeout: float = 60.0,
    interval: float = 0.05,
    what: str = "",
) -> Any:
    """Call ``predicate`` until it returns a truthy value, and return that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not reached within {timeout}s: {what or predicate}")
        time.sleep(interval)


async def await_until(
    predicate: Callable[[], Any],
    *,
    timeout: float = 20.0,
    interval: float = 0.02,
    what: str = "",
) -> Any:
    """:func:`wait_until` for async tests: ``predicate`` may be sync or return an awaitable,
    and the event loop keeps running while it waits."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not reached within {timeout}s: {what or predicate}")
        await asyncio.sleep(interval)
