"""The shim's sandbox tools (mounts, pins) are never left half-run by a cancellation."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from inplace.node import sandbox


async def test_a_cancelled_tool_finishes_before_the_cancellation_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the chaos storm: a pod stopped while its sandbox was being made cancelled the
    `sandbox` tool's await but not the tool, which pinned the namespace after the teardown
    had looked: the mount was left behind. Here the "tool" makes its mark after a while."""
    mark = tmp_path / "pinned"
    tool = tmp_path / "tool.py"
    tool.write_text("import sys, time\ntime.sleep(0.5)\nopen(sys.argv[2], 'w').write('pin')\n")
    monkeypatch.setattr(sandbox.shim, "command", lambda *args: [sys.executable, str(tool), *args])
    task = asyncio.create_task(sandbox.run_shim_tool("sandbox", str(mark)))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert mark.exists()  # what the tool made is there for the teardown that follows
