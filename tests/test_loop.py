"""loop.run_until_signal: a process's work runs until it ends or a signal stops it."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from inplace.loop import run_until_signal


async def test_the_works_result_when_it_ends_first() -> None:
    async def work() -> int:
        return 7

    assert await run_until_signal(work()) == 7


async def test_its_exception_propagates() -> None:
    async def work() -> None:
        raise RuntimeError("broken")

    with pytest.raises(RuntimeError, match="broken"):
        await run_until_signal(work())


async def test_sigterm_cancels_the_work_and_returns_none() -> None:
    cancelled = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    asyncio.get_running_loop().call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)
    try:
        assert await run_until_signal(work()) is None
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().remove_signal_handler(signum)
    assert cancelled.is_set()
