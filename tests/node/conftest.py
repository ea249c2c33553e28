"""Fixtures for node tests: a real cgroup v1 driver under a throw-away root, and workloads.

Every cgroup a test creates lives under ``inplace-test-<random>``; the fixture's finalizer
thaws it, SIGKILLs whatever still runs in it and removes it, even when the test failed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest

try:  # the suite normally runs against an installed (editable) package
    import inplace  # noqa: F401
except ImportError:  # pragma: no cover - running from a bare checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from inplace.node.cgroups import CgroupError, CgroupResources, V1Driver, detect_driver
from inplace.node.execproc import ExecTarget
from inplace.node.runtime import ProcessRuntime, ProcessSpec

V1_SKIP_REASON = "needs root and a writable cgroup v1 memory hierarchy"


def v1_available() -> bool:
    if os.geteuid() != 0:
        return False
    try:
        return detect_driver("inplace-probe").name == "v1"
    except (OSError, CgroupError):
        return False


needs_v1 = pytest.mark.skipif(not v1_available(), reason=V1_SKIP_REASON)


def python_cmd(code: str) -> list[str]:
    """A workload: this interpreter running ``code`` (isolated, quick to start)."""
    return [sys.executable, "-I", "-S", "-c", code]


def exited(pid: int) -> bool:
    """The process is gone, or a zombie nobody reaped yet (for polling in tests)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def workload_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def _kill_everything(driver: V1Driver) -> None:
    """Thaw and SIGKILL every task under the driver root, then wait until they are gone."""
    for controller in ("freezer", "memory"):
        with contextlib.suppress(CgroupError):
            base = driver.controller_dir(controller, "")
            for dirpath, _, _ in os.walk(base):
                if controller == "freezer" and dirpath != base:
                    with contextlib.suppress(OSError):
                        Path(dirpath, "freezer.state").write_text("THAWED")
                if controller == "memory":
                    with contextlib.suppress(OSError):
                        Path(dirpath, "memory.oom_control").write_text("0")
                        Path(dirpath, "memory.limit_in_bytes").write_text("-1")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids: list[int] = []
        base = driver.controller_dir("memory", "")
        for dirpath, _, _ in os.walk(base):
            with contextlib.suppress(OSError):
                pids += [int(x) for x in Path(dirpath, "cgroup.procs").read_text().split()]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


@pytest.fixture
def v1_driver() -> Iterator[V1Driver]:
    if not v1_available():
        pytest.skip(V1_SKIP_REASON)
    driver = V1Driver(f"inplace-test-{uuid.uuid4().hex[:10]}")
    try:
        yield driver
    finally:
        _kill_everything(driver)
        driver.remove("")


@pytest.fixture
async def exec_container(v1_driver: V1Driver, tmp_path: Path) -> AsyncIterator[ExecTarget]:
    """A container to run commands in (``kubectl exec``): a sleeping process started by the
    real runtime in the real cgroup ``pod/c``, with a launch that enters no namespace."""
    v1_driver.create("pod/c", CgroupResources(None, None, memory_limit_bytes=256 * 2**20))
    workdir = tmp_path / "wd"
    workdir.mkdir()
    launch = {
        "mount_namespace": None,
        "working_dir": str(workdir),
        "user": None,
        "capabilities": None,
        "no_new_privs": False,
        "seccomp": None,
        "env": {**workload_env(), "GREETING": "hello from the container"},
    }
    runtime = ProcessRuntime(v1_driver)
    main = await runtime.start(
        ProcessSpec(
            command=["sleep", "3600"],
            env=workload_env(),
            working_dir=str(workdir),
            log_path=str(tmp_path / "logs" / "0.log"),
            cgroup_path="pod/c",
            launch=launch,
        )
    )
    try:
        yield ExecTarget(main, "pod/c")
    finally:
        await runtime.stop(main, grace_period=0)
