"""A command run inside a container: born in its cgroup, its environment and working
directory, stdin, stdout and stderr apart, a terminal with sizes, exit codes, and an end that
neither waits for stragglers nor leaves the command behind.

Real processes in a real cgroup v1 tree (skipped without one). The "container" is a sleeping
process started by the real runtime with a launch that enters no namespace, so the exec path
is the production one: gate, sandbox entry (:func:`enter_command`), command.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from inplace.api.remotecommand import StreamOptions
from inplace.node.cgroups import V1Driver
from inplace.node.execproc import ExecError, ExecProcess, ExecTarget
from inplace.node.runtime import LAUNCH_SUFFIX
from tests.node.conftest import exited
from tests.poll import await_until

PIPES = StreamOptions(stdin=True, stdout=True, stderr=True, tty=False)
TTY = StreamOptions(stdin=True, stdout=True, stderr=False, tty=True)
GUARD = 30  # seconds; a hang guard, never a timing assertion


@dataclass
class Result:
    code: int
    out: dict[int, bytearray] = field(default_factory=lambda: {1: bytearray(), 2: bytearray()})

    def text(self, channel: int = 1) -> str:
        return self.out[channel].decode()


async def run(
    driver: V1Driver,
    target: ExecTarget,
    command: list[str],
    streams: StreamOptions = PIPES,
    stdin: bytes = b"",
) -> Result:
    async with asyncio.timeout(GUARD):
        process = await ExecProcess.start(driver, target, command, streams)
        result = Result(-1)

        async def collect(channel: int) -> None:
            async def keep(data: bytes) -> None:
                result.out[channel].extend(data)

            await process.pump(channel, keep)

        pumps = asyncio.gather(collect(1), collect(2))
        if stdin:
            await process.write_stdin(stdin)
        process.close_stdin()
        result.code = await process.wait()
        await pumps
        process.close()
        return result


async def test_born_in_the_containers_cgroup_with_its_env_and_working_dir(
    v1_driver: V1Driver, exec_container: ExecTarget
) -> None:
    result = await run(
        v1_driver,
        exec_container,
        ["sh", "-c", "cat /proc/self/cgroup; echo pwd=$(pwd); echo $GREETING"],
    )
    assert result.code == 0, result.out
    lines = result.text().splitlines()
    memory = next(line for line in lines if ":memory:" in line)
    assert memory.split(":", 2)[2] == "/" + v1_driver.root_name + "/pod/c"
    with open(f"/proc/{exec_container.process.pid}/cgroup") as fh:
        main_memory = next(line for line in fh if ":memory:" in line).strip()
    assert memory == main_memory
    assert f"pwd={Path(exec_container.process.log_path).parents[1] / 'wd'}" in lines
    assert "hello from the container" in lines


async def test_stdout_stderr_apart_and_exit_codes(
    v1_driver: V1Driver, exec_container: ExecTarget
) -> None:
    result = await run(v1_driver, exec_container, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.code, result.text(1), result.text(2)) == (3, "out\n", "err\n")
    killed = await run(v1_driver, exec_container, ["sh", "-c", "kill -9 $$"])
    assert killed.code == 128 + 9
    missing = await run(v1_driver, exec_container, ["no-such-command-here"])
    assert missing.code == 127
    assert "no-such-command-here" in missing.text(2)


async def test_stdin_to_eof_and_large_output(
    v1_driver: V1Driver, exec_container: ExecTarget
) -> None:
    data = os.urandom(3 * 2**20)  # far more than a pipe holds: both directions wait
    result = await run(v1_driver, exec_container, ["cat"], stdin=data)
    assert result.code == 0
    assert bytes(result.out[1]) == data


async def test_a_terminal_with_its_size_and_term(
    v1_driver: V1Driver, exec_container: ExecTarget
) -> None:
    async with asyncio.timeout(GUARD):
        process = await ExecProcess.start(
            v1_driver,
            exec_container,
            ["sh", "-c", "read go; tty; stty size; echo TERM=$TERM; test -t 0 && echo stdin-tty"],
            TTY,
        )
        out = bytearray()

        async def keep(data: bytes) -> None:
            out.extend(data)

        pump = asyncio.ensure_future(process.pump(1, keep))
        process.resize(132, 43)
        await process.write_stdin(b"go\n")
        code = await process.wait()
        await pump
        process.close()
    text = out.decode().replace("\r\n", "\n")
    assert code == 0
    assert "/dev/pts/" in text
    assert "43 132" in text
    assert "TERM=xterm" in text
    assert "stdin-tty" in text


async def test_the_end_waits_for_nobody(v1_driver: V1Driver, exec_container: ExecTarget) -> None:
    """A background child that keeps stdout open does not hold the session."""
    result = await run(v1_driver, exec_container, ["sh", "-c", "sleep 60 & echo $!"])
    straggler = int(result.text())
    try:
        assert result.code == 0
        assert psutil.pid_exists(straggler)  # still holding the pipe when the session ended
    finally:
        os.kill(straggler, signal.SIGKILL)


async def test_kill_takes_the_whole_process_group(
    v1_driver: V1Driver, exec_container: ExecTarget
) -> None:
    async with asyncio.timeout(GUARD):
        process = await ExecProcess.start(
            v1_driver, exec_container, ["sh", "-c", "sleep 300 & echo $!; wait"], PIPES
        )
        child = bytearray()

        async def keep(data: bytes) -> None:
            child.extend(data)

        pump = asyncio.ensure_future(process.pump(1, keep))
        while not child.endswith(b"\n"):
            await asyncio.sleep(0.05)
        background = int(child.decode())
        assert psutil.pid_exists(background)
        process.kill()
        assert await process.wait() == 128 + 9
        await pump
        process.close()

    await await_until(
        lambda: exited(background), what="the background child killed with the command"
    )


async def test_start_errors(
    v1_driver: V1Driver, exec_container: ExecTarget, tmp_path: Path
) -> None:
    with pytest.raises(ExecError, match="cmd cannot be empty"):
        await ExecProcess.start(v1_driver, exec_container, [], PIPES)
    with pytest.raises(ExecError, match="cgroup"):
        await ExecProcess.start(
            v1_driver, ExecTarget(exec_container.process, "pod/missing"), ["true"], PIPES
        )
    os.rename(exec_container.process.log_path + LAUNCH_SUFFIX, tmp_path / "launch.json")
    try:
        with pytest.raises(ExecError, match="without a launch record"):
            await ExecProcess.start(v1_driver, exec_container, ["true"], PIPES)
    finally:
        os.rename(tmp_path / "launch.json", exec_container.process.log_path + LAUNCH_SUFFIX)


async def test_nothing_runs_when_the_cgroup_move_fails(
    v1_driver: V1Driver, exec_container: ExecTarget, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(ExecError):
        await ExecProcess.start(
            v1_driver,
            ExecTarget(exec_container.process, "pod/missing"),
            [sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
            PIPES,
        )
    assert not marker.exists()
