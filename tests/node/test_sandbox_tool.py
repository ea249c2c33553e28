"""The shim's sandbox tools (mounts, pins) are never left half-run by a cancellation."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from inplace.node import sandbox
from inplace.node.spares import Spares


class SlowTool(Spares):
    """Runs a script that makes its mark after a while, in place of the shim's mode."""

    def __init__(self, script: Path) -> None:
        super().__init__(keep=0)
        self.script = script

    def run(
        self, argv: Sequence[str], *, stdout: int, stderr: int, **_: Any
    ) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, str(self.script), *argv], stdout=stdout, stderr=stderr
        )


async def test_a_cancelled_tool_finishes_before_the_cancellation_goes_on(tmp_path: Path) -> None:
    """Found by the chaos storm: a pod stopped while its sandbox was being made cancelled the
    `sandbox` tool's await but not the tool, which pinned the namespace after the teardown
    had looked: the mount was left behind. Here the "tool" makes its mark after a while."""
    mark = tmp_path / "pinned"
    tool = tmp_path / "tool.py"
    tool.write_text("import sys, time\ntime.sleep(0.5)\nopen(sys.argv[2], 'w').write('pin')\n")
    task = asyncio.create_task(sandbox.run_shim_tool(SlowTool(tool), "sandbox", str(mark)))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert mark.exists()  # what the tool made is there for the teardown that follows


async def test_a_tool_answers_through_a_spare(tmp_path: Path) -> None:
    """A real spare runs the mode: its stdout is the answer, a failure its stderr."""
    spares = Spares()
    try:
        with pytest.raises(sandbox.SandboxError, match="usage: shim"):
            await sandbox.run_shim_tool(spares, "no-such-mode")
        await sandbox.run_shim_tool(spares, "release", str(tmp_path))  # not a mount: nothing
    finally:
        spares.close()
