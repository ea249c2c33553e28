"""The process runtime: exit codes, stop escalation, logs, re-adoption, PID-reuse safety.

Runs on any machine with the ``none`` driver (the runtime's behaviour does not depend on the
driver, except OOM detection, which ``test_cgroups_v1.py`` covers with real cgroups).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest

from inplace.node import shim as shim_program
from inplace.node.cgroups import CgroupResources, NoneDriver
from inplace.node.runtime import (
    EXIT_SUFFIX,
    STATE_SUFFIX,
    ProcessRuntime,
    ProcessSpec,
    ProcessStartError,
    RunningProcess,
    format_cri_log,
)
from tests.poll import await_until

from .conftest import python_cmd, workload_env


@pytest.fixture
def driver() -> NoneDriver:
    d = NoneDriver()
    d.create("pod/c", CgroupResources(None, None))
    return d


@pytest.fixture(params=["native", "python"])
def waiter(request: pytest.FixtureRequest) -> str | None:
    """Who waits for the workload once it runs: the shim's native half (``inplace-shim``, as
    an installed package runs) or the Python shim itself (a package built without a C
    compiler, and every shim before the native half)."""
    if request.param == "python":
        return None
    assert shim_program.native_program(), "pip install -e . builds the shim's native half"
    return shim_program.NATIVE_PROGRAM


@pytest.fixture
async def runtime(driver: NoneDriver, waiter: str | None) -> AsyncIterator[ProcessRuntime]:
    rt = ProcessRuntime(driver, waiter=waiter)
    started: list[RunningProcess] = []
    original = rt.start

    async def tracking_start(spec: ProcessSpec) -> RunningProcess:
        proc = await original(spec)
        started.append(proc)
        return proc

    rt.start = tracking_start  # type: ignore[method-assign]
    yield rt
    for proc in started:  # never leave a workload behind, even when a test failed
        if rt.is_alive(proc):
            await rt.stop(proc, grace_period=0)


def make_spec(tmp_path: Path, command: list[str], name: str = "c", **kw: object) -> ProcessSpec:
    return ProcessSpec(
        command=command,
        env=kw.get("env", workload_env()),  # type: ignore[arg-type]
        working_dir=kw.get("working_dir", str(tmp_path)),  # type: ignore[arg-type]
        log_path=str(tmp_path / "logs" / f"{name}.log"),
        cgroup_path="pod/c",
    )


@pytest.mark.parametrize("code", [0, 1, 3, 255])
async def test_exit_codes(runtime: ProcessRuntime, tmp_path: Path, code: int) -> None:
    proc = await runtime.start(make_spec(tmp_path, python_cmd(f"raise SystemExit({code})")))
    status = await runtime.wait(proc)
    assert (status.exit_code, status.signal, status.oom_killed, status.unknown) == (
        code,
        None,
        False,
        False,
    )
    assert status.finished_at.tzinfo is not None
    assert not runtime.is_alive(proc)
    assert await runtime.wait(proc) == status  # stable


async def test_killed_by_signal(runtime: ProcessRuntime, tmp_path: Path) -> None:
    proc = await runtime.start(
        make_spec(tmp_path, python_cmd("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"))
    )
    status = await runtime.wait(proc)
    assert status.signal == signal.SIGSEGV
    assert status.exit_code == 128 + signal.SIGSEGV
    assert not status.oom_killed


async def test_log_env_and_working_dir(runtime: ProcessRuntime, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    code = (
        "import os, sys\n"
        "print('hello', os.environ['GREETING'], os.getcwd())\n"
        "print('oops', file=sys.stderr)\n"
        "print('stdin', repr(sys.stdin.read()))\n"
        "print('session leader', os.getsid(0) == os.getpid(),\n"
        "      'group', os.getpgid(0) == os.getpid())"
    )
    env = {**workload_env(), "GREETING": "world"}
    spec = make_spec(tmp_path, python_cmd(code), env=env, working_dir=str(workdir))
    Path(spec.log_path).parent.mkdir(parents=True)
    Path(spec.log_path).write_text("previous run\n")
    proc = await runtime.start(spec)
    assert (await runtime.wait(proc)).exit_code == 0
    lines = Path(proc.log_path).read_text().splitlines()
    assert lines[0] == "previous run"  # appended, not truncated
    assert f"hello world {workdir}" in lines
    assert "oops" in lines
    assert "stdin ''" in lines
    # the workload leads its own process group inside the shim's session (not the agent's)
    assert "session leader False group True" in lines
    with open(proc.log_path, "rb") as fh:
        framed = format_cri_log(fh.read(), timestamp=datetime(2024, 1, 2, 3, 4, 5, 6, UTC))
    assert b"2024-01-02T03:04:05.000006000Z stdout F oops\n" in framed


async def test_not_in_the_agents_session(runtime: ProcessRuntime, tmp_path: Path) -> None:
    proc = await runtime.start(make_spec(tmp_path, ["sleep", "600"]))
    assert os.getsid(proc.pid) != os.getsid(0)
    assert os.getpgid(proc.pid) == proc.pid
    assert runtime.is_alive(proc)


async def test_stop_graceful(runtime: ProcessRuntime, tmp_path: Path) -> None:
    proc = await runtime.start(make_spec(tmp_path, ["sleep", "600"]))
    status = await runtime.stop(proc, grace_period=30)
    assert status.signal == signal.SIGTERM
    assert status.exit_code == 128 + signal.SIGTERM


async def test_stop_escalates_to_sigkill(runtime: ProcessRuntime, tmp_path: Path) -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: print('ignoring TERM', flush=True))\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
        "time.sleep(600)\n"
    )
    proc = await runtime.start(make_spec(tmp_path, python_cmd(code)))
    await await_until(lambda: "ready" in Path(proc.log_path).read_text())
    status = await runtime.stop(proc, grace_period=0.3)
    assert status.signal in (signal.SIGTERM, signal.SIGKILL) and not status.unknown
    assert status.exit_code == 137
    assert not status.oom_killed
    assert "ignoring TERM" in Path(proc.log_path).read_text()


async def test_stop_kills_the_whole_process_group(runtime: ProcessRuntime, tmp_path: Path) -> None:
    code = (
        "import subprocess, time\n"
        "child = subprocess.Popen(['sleep', '600'])\n"
        "print('child', child.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = await runtime.start(make_spec(tmp_path, python_cmd(code)))
    await await_until(lambda: "child" in Path(proc.log_path).read_text())
    child_pid = int(Path(proc.log_path).read_text().split()[-1])
    child = psutil.Process(child_pid)
    await runtime.stop(proc, grace_period=5)
    await await_until(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE)


async def test_leftovers_die_with_the_main_process(runtime: ProcessRuntime, tmp_path: Path) -> None:
    code = (
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '600'])\n"
        "print('child', child.pid, flush=True)\n"
    )
    proc = await runtime.start(make_spec(tmp_path, python_cmd(code)))
    assert (await runtime.wait(proc)).exit_code == 0
    child = psutil.Process(int(Path(proc.log_path).read_text().split()[-1]))
    await await_until(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE)


async def test_start_errors(runtime: ProcessRuntime, tmp_path: Path) -> None:
    with pytest.raises(ProcessStartError) as info:
        await runtime.start(make_spec(tmp_path, ["/nonexistent/binary"]))
    assert info.value.exit_code == 127
    assert "/nonexistent/binary" in str(info.value)
    with pytest.raises(ProcessStartError):
        await runtime.start(make_spec(tmp_path, ["true"], working_dir=str(tmp_path / "missing")))
    with pytest.raises(ProcessStartError):
        await runtime.start(make_spec(tmp_path, []))
    unknown = ProcessSpec(["true"], workload_env(), None, str(tmp_path / "x.log"), "no/such/cg")
    with pytest.raises(ProcessStartError, match="cgroup"):
        await runtime.start(unknown)


async def test_is_alive_checks_start_time(runtime: ProcessRuntime, tmp_path: Path) -> None:
    proc = await runtime.start(make_spec(tmp_path, ["sleep", "600"]))
    assert proc.start_time == psutil.Process(proc.pid).create_time()
    assert runtime.is_alive(proc)
    impostor = RunningProcess(proc.pid, proc.start_time + 1.0, proc.log_path)
    assert not runtime.is_alive(impostor)
    assert runtime.adopt(proc.pid, proc.start_time + 1.0, str(tmp_path / "other.log")) is None
    await runtime.stop(proc, grace_period=0)
    assert not runtime.is_alive(proc)


async def test_readoption_after_agent_restart(driver: NoneDriver, tmp_path: Path) -> None:
    """A fresh runtime (no children, no memory) adopts the workload and gets its exit code."""
    first = ProcessRuntime(driver)
    gate = tmp_path / "gate"
    code = (
        "import os, time\n"
        f"while not os.path.exists({str(gate)!r}):\n"
        "    time.sleep(0.01)\n"
        "raise SystemExit(42)\n"
    )
    proc = await first.start(make_spec(tmp_path, python_cmd(code)))
    try:
        state = json.loads(Path(proc.log_path + STATE_SUFFIX).read_text())
        assert state["pid"] == proc.pid

        second = ProcessRuntime(driver)  # the agent restarted
        adopted = second.adopt(proc.pid, proc.start_time, proc.log_path)
        assert adopted == proc
        assert second.is_alive(adopted)
        waiter = asyncio.ensure_future(second.wait(adopted))
        await asyncio.sleep(0)
        assert not waiter.done()
        await asyncio.to_thread(gate.write_text, "")
        status = await asyncio.wait_for(waiter, 60)
        assert (status.exit_code, status.signal, status.unknown) == (42, None, False)
    finally:
        if first.is_alive(proc):
            await first.stop(proc, grace_period=0)
        await first.wait(proc)  # reap the shim, our child


async def test_a_workload_started_under_the_python_shim_is_adopted_by_an_agent_with_the_native(
    driver: NoneDriver, tmp_path: Path
) -> None:
    """An upgrade: workloads started by an agent whose shims wait in Python keep running
    under those shims, and the new agent (whose shims exec the native half) adopts them
    and gets their exit codes, from the same records."""
    assert shim_program.native_program(), "pip install -e . builds the shim's native half"
    before = ProcessRuntime(driver, waiter=None)
    gate = tmp_path / "gate"
    os.mkfifo(gate)  # the workload waits on it until the test writes to it
    code = f"open({str(gate)!r}).read()\nraise SystemExit(5)"
    proc = await before.start(make_spec(tmp_path, python_cmd(code)))
    try:
        state = json.loads(Path(proc.log_path + STATE_SUFFIX).read_text())
        assert os.readlink(f"/proc/{state['shim_pid']}/exe") != shim_program.NATIVE_PROGRAM
        after = ProcessRuntime(driver)
        adopted = after.adopt(proc.pid, proc.start_time, proc.log_path)
        assert adopted == proc and after.is_alive(adopted)
        fresh = await after.start(
            make_spec(tmp_path, python_cmd("raise SystemExit(6)"), name="new")
        )
        assert (await asyncio.wait_for(after.wait(fresh), 60)).exit_code == 6
        await asyncio.to_thread(gate.write_text, "")
        status = await asyncio.wait_for(after.wait(adopted), 60)
        assert (status.exit_code, status.signal, status.unknown) == (5, None, False)
    finally:
        if before.is_alive(proc):
            await before.stop(proc, grace_period=0)
        await before.wait(proc)


async def test_the_shim_waits_as_its_native_half_under_the_same_pid(
    driver: NoneDriver, tmp_path: Path
) -> None:
    """Once the workload runs, its shim is the native program (a few dozen KiB of its own
    instead of an interpreter's pages), the pid the agent recorded unchanged."""
    runtime = ProcessRuntime(driver)
    proc = await runtime.start(make_spec(tmp_path, python_cmd("import time; time.sleep(60)")))
    try:
        state = json.loads(Path(proc.log_path + STATE_SUFFIX).read_text())
        shim = psutil.Process(state["shim_pid"])
        exe = f"/proc/{shim.pid}/exe"  # psutil caches a process's exe
        await await_until(lambda: os.readlink(exe) == shim_program.NATIVE_PROGRAM, timeout=30)
        assert shim.create_time() == state["shim_start_time"]
        assert shim.name() == "inplace-shim"
        assert proc.pid in [child.pid for child in shim.children()]
    finally:
        status = await runtime.stop(proc, grace_period=0)
    assert status.signal in (signal.SIGTERM, signal.SIGKILL) and not status.unknown


def test_the_native_half_refuses_a_command_line_it_cannot_read() -> None:
    assert shim_program.native_program(), "pip install -e . builds the shim's native half"
    out = subprocess.run(
        [shim_program.NATIVE_PROGRAM, "wait", "not-a-pid", "/nonexistent"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 2
    assert out.stderr.startswith("usage: inplace-shim wait PID EXIT_PATH")


async def test_readoption_of_a_workload_that_ended_meanwhile(
    driver: NoneDriver, tmp_path: Path
) -> None:
    first = ProcessRuntime(driver)
    proc = await first.start(make_spec(tmp_path, python_cmd("raise SystemExit(7)")))
    await first.wait(proc)
    third = ProcessRuntime(driver)
    adopted = third.adopt(proc.pid, proc.start_time, proc.log_path)
    assert adopted is not None
    assert not third.is_alive(adopted)
    status = await third.wait(adopted)
    assert status.exit_code == 7
    exit_record = json.loads(Path(proc.log_path + EXIT_SUFFIX).read_text())
    assert status.finished_at == datetime.fromtimestamp(exit_record["finished_at"], UTC)


async def test_adopt_unknown_process(runtime: ProcessRuntime, tmp_path: Path) -> None:
    assert runtime.adopt(2**22 + 12345, 1.0, str(tmp_path / "none.log")) is None


async def test_shim_killed_gives_unknown_status(runtime: ProcessRuntime, tmp_path: Path) -> None:
    proc = await runtime.start(make_spec(tmp_path, ["sleep", "600"]))
    state = json.loads(Path(proc.log_path + STATE_SUFFIX).read_text())
    os.kill(state["shim_pid"], signal.SIGKILL)
    os.kill(proc.pid, signal.SIGKILL)
    status = await asyncio.wait_for(runtime.wait(proc), 60)
    assert status.unknown
    assert status.exit_code == 137


async def test_restart_in_same_log_does_not_reuse_old_status(
    runtime: ProcessRuntime, tmp_path: Path
) -> None:
    first = await runtime.start(make_spec(tmp_path, python_cmd("raise SystemExit(3)")))
    assert (await runtime.wait(first)).exit_code == 3
    second = await runtime.start(make_spec(tmp_path, python_cmd("raise SystemExit(4)")))
    assert (await runtime.wait(second)).exit_code == 4


def test_format_cri_log_partial_line() -> None:
    ts = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    assert format_cri_log(b"a\nb", timestamp=ts, stream="stderr") == (
        b"2024-05-06T07:08:09.000000000Z stderr F a\n2024-05-06T07:08:09.000000000Z stderr P b\n"
    )
    assert format_cri_log(b"", timestamp=ts) == b""


AGENT = """
import asyncio, json, sys
sys.path.insert(0, {src!r})
from inplace.node.cgroups import CgroupResources, NoneDriver
from inplace.node.runtime import ProcessRuntime, ProcessSpec

async def main():
    driver = NoneDriver()
    driver.create("pod/c", CgroupResources(None, None))
    runtime = ProcessRuntime(driver)
    proc = await runtime.start(ProcessSpec({command!r}, {env!r}, None, {log!r}, "pod/c"))
    print(json.dumps([proc.pid, proc.start_time]), flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_workload_survives_sigkill_of_the_agent(driver: NoneDriver, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    workload = python_cmd(
        "import os, time\n"
        f"while not os.path.exists({str(gate)!r}):\n"
        "    time.sleep(0.01)\n"
        "print('finished', flush=True)\n"
        "raise SystemExit(42)\n"
    )
    log = str(tmp_path / "c.log")
    src = str(Path(__file__).resolve().parents[2] / "src")
    script = AGENT.format(src=src, command=workload, env=workload_env(), log=log)
    agent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE
    )
    pid: int | None = None
    try:
        assert agent.stdout is not None
        pid, start_time = json.loads(await asyncio.wait_for(agent.stdout.readline(), 60))
        agent.kill()
        await agent.wait()

        runtime = ProcessRuntime(driver)  # the agent came back
        proc = runtime.adopt(pid, start_time, log)
        assert proc is not None
        assert runtime.is_alive(proc)  # the SIGKILL of the agent did not reach the workload
        await asyncio.to_thread(gate.write_text, "")
        status = await asyncio.wait_for(runtime.wait(proc), 60)
        assert (status.exit_code, status.unknown) == (42, False)
        assert "finished" in Path(log).read_text()
    finally:
        if agent.returncode is None:
            agent.kill()
            await agent.wait()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
