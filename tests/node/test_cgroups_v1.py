"""The v1 driver against this machine's kernel (skipped without root + writable v1 memory)."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import select
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from inplace.node.cgroups import (
    CgroupNotFound,
    CgroupResources,
    CgroupWriteError,
    V1Driver,
)
from inplace.node.runtime import STATE_SUFFIX, ProcessRuntime, ProcessSpec
from tests.poll import await_until

from .conftest import needs_v1, python_cmd, workload_env

Mi = 1024 * 1024

pytestmark = needs_v1

UNLIMITED = CgroupResources(cpu_shares=None, cpu_quota_us=None)


def kernel(driver: V1Driver, controller: str, path: str, name: str) -> str:
    return Path(driver.controller_dir(controller, path), name).read_text().strip()


def allocate_then_sleep(mib: int) -> list[str]:
    """Allocates (and touches) ``mib`` MiB, says so, then sleeps."""
    return python_cmd(
        f"import sys, time\nb = b'x' * ({mib} << 20)\nprint('ready', flush=True)\ntime.sleep(600)"
    )


def allocate_in_steps(total_mib: int) -> list[str]:
    """Allocates ``total_mib`` MiB in 5 MiB steps, then exits 0."""
    return python_cmd(
        "chunks = []\n"
        f"for _ in range({total_mib} // 5):\n"
        "    chunks.append(b'x' * (5 << 20))\n"
        "print('done', flush=True)\n"
    )


def spec(tmp_path: Path, command: list[str], cgroup: str, name: str = "c") -> ProcessSpec:
    return ProcessSpec(
        command=command,
        env=workload_env(),
        working_dir=str(tmp_path),
        log_path=str(tmp_path / f"{name}.log"),
        cgroup_path=cgroup,
    )


def test_create_is_idempotent_and_read_back(v1_driver: V1Driver) -> None:
    res = CgroupResources(
        cpu_shares=512, cpu_quota_us=50_000, memory_limit_bytes=64 * Mi, pids_max=100
    )
    v1_driver.create("node/pod-a/c1", res)
    v1_driver.create("node/pod-a/c1", res)
    assert v1_driver.read("node/pod-a/c1") == res
    assert kernel(v1_driver, "cpu", "node/pod-a/c1", "cpu.shares") == "512"
    assert kernel(v1_driver, "cpu", "node/pod-a/c1", "cpu.cfs_quota_us") == "50000"
    assert kernel(v1_driver, "memory", "node/pod-a/c1", "memory.limit_in_bytes") == str(64 * Mi)
    assert kernel(v1_driver, "pids", "node/pod-a/c1", "pids.max") == "100"
    assert os.path.isdir(v1_driver.controller_dir("freezer", "node/pod-a/c1"))
    # parents exist and are unlimited
    assert v1_driver.read("node/pod-a") == v1_driver.normalize(UNLIMITED)


def test_update_and_back_to_unlimited(v1_driver: V1Driver) -> None:
    v1_driver.create("p", UNLIMITED)
    v1_driver.update(
        "p",
        CgroupResources(
            cpu_shares=102,
            cpu_quota_us=25_000,
            cpu_period_us=50_000,
            memory_limit_bytes=100 * Mi + 123,
        ),
    )
    got = v1_driver.read("p")
    assert (got.cpu_shares, got.cpu_quota_us, got.cpu_period_us) == (102, 25_000, 50_000)
    assert got.memory_limit_bytes == 100 * Mi  # page-rounded by the kernel
    v1_driver.update("p", UNLIMITED)
    assert v1_driver.read("p") == CgroupResources(
        cpu_shares=1024, cpu_quota_us=None, memory_limit_bytes=None, pids_max=None
    )
    assert kernel(v1_driver, "cpu", "p", "cpu.cfs_quota_us") == "-1"


def test_kernel_refusal_names_the_file(v1_driver: V1Driver) -> None:
    v1_driver.create("p", UNLIMITED)
    with pytest.raises(CgroupWriteError) as info:
        v1_driver.update("p", CgroupResources(cpu_shares=None, cpu_quota_us=10))  # < 1 ms
    assert info.value.errno == errno.EINVAL
    assert "cpu.cfs_quota_us" in str(info.value)
    assert "Invalid argument" in str(info.value)


def test_missing_cgroup(v1_driver: V1Driver) -> None:
    with pytest.raises(CgroupNotFound):
        v1_driver.read("nope")
    v1_driver.remove("nope")  # tolerated


async def test_process_in_cgroup_and_memory_decrease_below_usage(
    v1_driver: V1Driver, tmp_path: Path
) -> None:
    v1_driver.create("pod/c", CgroupResources(cpu_shares=256, cpu_quota_us=None))
    runtime = ProcessRuntime(v1_driver)
    proc = await runtime.start(spec(tmp_path, allocate_then_sleep(50), "pod/c"))
    try:
        await await_until(lambda: "ready" in Path(proc.log_path).read_text())
        paths = v1_driver.cgroup_paths_of(proc.pid)
        root = "/" + v1_driver.root_name + "/pod/c"
        for controller in ("memory", "cpu", "cpuacct", "freezer", "pids"):
            assert paths[controller] == root
        assert proc.pid in v1_driver.pids("pod/c")
        usage = v1_driver.usage("pod/c")
        assert usage.memory_usage_bytes >= 50 * Mi
        assert 0 < usage.memory_working_set_bytes <= usage.memory_usage_bytes
        assert usage.cpu_usage_ns > 0

        # CPU changes apply live
        v1_driver.update("pod/c", CgroupResources(cpu_shares=2048, cpu_quota_us=150_000))
        assert kernel(v1_driver, "cpu", "pod/c", "cpu.shares") == "2048"
        assert kernel(v1_driver, "cpu", "pod/c", "cpu.cfs_quota_us") == "150000"

        # a limit below usage: the kernel reclaims, fails with EBUSY; nothing is killed
        with pytest.raises(CgroupWriteError) as info:
            v1_driver.update(
                "pod/c",
                CgroupResources(cpu_shares=2048, cpu_quota_us=150_000, memory_limit_bytes=20 * Mi),
            )
        assert info.value.errno == errno.EBUSY
        assert "memory.limit_in_bytes" in str(info.value)
        assert runtime.is_alive(proc)
        assert v1_driver.read("pod/c").memory_limit_bytes is None  # old limit kept

        # a limit above usage is fine
        v1_driver.update(
            "pod/c",
            CgroupResources(cpu_shares=2048, cpu_quota_us=150_000, memory_limit_bytes=200 * Mi),
        )
        assert v1_driver.read("pod/c").memory_limit_bytes == 200 * Mi
        with pytest.raises(CgroupWriteError) as busy:
            v1_driver.remove("pod/c")  # still has tasks
        assert busy.value.errno == errno.EBUSY
    finally:
        await runtime.stop(proc, grace_period=0)


async def test_oom_pause_then_resume(v1_driver: V1Driver, tmp_path: Path) -> None:
    v1_driver.create("pod/c", CgroupResources(None, None, memory_limit_bytes=30 * Mi))
    v1_driver.set_oom_kill_disable("pod/c", True)
    assert "oom_kill_disable 1" in kernel(v1_driver, "memory", "pod/c", "memory.oom_control")
    efd = v1_driver.open_oom_notifier("pod/c")
    runtime = ProcessRuntime(v1_driver)
    try:
        assert not v1_driver.under_oom("pod/c")
        proc = await runtime.start(spec(tmp_path, allocate_in_steps(60), "pod/c"))
        # the eventfd fires when the cgroup goes under OOM (bounded wait, not a timing check)
        readable = await asyncio.to_thread(select.select, [efd], [], [], 30)
        assert readable[0] == [efd]
        assert int.from_bytes(os.read(efd, 8), "little") >= 1
        assert v1_driver.under_oom("pod/c")
        assert runtime.is_alive(proc)
        assert psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE
        assert v1_driver.oom_kill_count("pod/c") == 0

        v1_driver.update("pod/c", CgroupResources(None, None, memory_limit_bytes=200 * Mi))
        status = await asyncio.wait_for(runtime.wait(proc), 60)
        assert (status.exit_code, status.signal, status.oom_killed) == (0, None, False)
        assert "done" in Path(proc.log_path).read_text()
        assert not v1_driver.under_oom("pod/c")
    finally:
        os.close(efd)


async def test_oom_kill_is_detected(v1_driver: V1Driver, tmp_path: Path) -> None:
    v1_driver.create("pod/c", CgroupResources(None, None, memory_limit_bytes=30 * Mi))
    runtime = ProcessRuntime(v1_driver)
    proc = await runtime.start(spec(tmp_path, allocate_in_steps(60), "pod/c"))
    status = await asyncio.wait_for(runtime.wait(proc), 60)
    assert status.signal == signal.SIGKILL
    assert status.exit_code == 128 + signal.SIGKILL
    assert status.oom_killed
    assert v1_driver.oom_kill_count("pod/c") >= 1


async def test_the_shim_stays_out_of_the_container_cgroup(
    v1_driver: V1Driver, tmp_path: Path
) -> None:
    """Only the workload is in the container's cgroup: the shim's memory is not charged to the
    container, and an OOM kill under a limit close to what the workload uses takes the
    workload, never the witness, so it is reported OOMKilled (found by the chaos storm: a
    12Mi container's shim, unprotected where oom_score_adj cannot be lowered, was killed
    first and the exit reported ContainerStatusUnknown)."""
    v1_driver.create("pod/c", CgroupResources(None, None, memory_limit_bytes=12 * Mi))
    runtime = ProcessRuntime(v1_driver)
    proc = await runtime.start(spec(tmp_path, allocate_in_steps(60), "pod/c"))
    state = json.loads(Path(proc.log_path + STATE_SUFFIX).read_text())
    assert state["shim_pid"] not in v1_driver.pids("pod/c")
    status = await asyncio.wait_for(runtime.wait(proc), 60)
    assert (status.signal, status.oom_killed, status.unknown) == (signal.SIGKILL, True, False)


async def test_plain_sigkill_is_not_oom(v1_driver: V1Driver, tmp_path: Path) -> None:
    v1_driver.create("pod/c", CgroupResources(None, None, memory_limit_bytes=64 * Mi))
    runtime = ProcessRuntime(v1_driver)
    proc = await runtime.start(spec(tmp_path, ["sleep", "600"], "pod/c"))
    status = await runtime.stop(proc, grace_period=0)
    assert status.signal in (signal.SIGTERM, signal.SIGKILL)
    assert not status.oom_killed


async def test_freeze_and_thaw(v1_driver: V1Driver, tmp_path: Path) -> None:
    v1_driver.create("pod/c", UNLIMITED)
    runtime = ProcessRuntime(v1_driver)
    proc = await runtime.start(spec(tmp_path, ["sleep", "600"], "pod/c"))
    try:
        v1_driver.freeze("pod/c")
        assert v1_driver.freezer_state("pod/c") == "FROZEN"
        v1_driver.thaw("pod/c")
        assert v1_driver.freezer_state("pod/c") == "THAWED"
        # stop() thaws before signalling: a frozen workload can still be stopped
        v1_driver.freeze("pod/c")
    finally:
        status = await asyncio.wait_for(runtime.stop(proc, grace_period=5), 60)
    assert status.signal == signal.SIGTERM


async def test_workload_is_in_its_cgroup_before_exec(v1_driver: V1Driver, tmp_path: Path) -> None:
    """The first thing the workload does is read its own cgroup: already the container's."""
    v1_driver.create("pod/c", UNLIMITED)
    runtime = ProcessRuntime(v1_driver)
    proc = await runtime.start(spec(tmp_path, ["cat", "/proc/self/cgroup"], "pod/c"))
    status = await runtime.wait(proc)
    assert status.exit_code == 0
    log = Path(proc.log_path).read_text()
    assert f"memory:/{v1_driver.root_name}/pod/c" in log


def test_remove_leaf_first(v1_driver: V1Driver) -> None:
    v1_driver.create("a/b/c", UNLIMITED)
    v1_driver.create("a/b/d", UNLIMITED)
    v1_driver.remove("a")
    for controller in ("memory", "cpu", "cpuacct", "freezer", "pids"):
        assert not os.path.exists(v1_driver.controller_dir(controller, "a"))


def test_oom_notifier_also_fires_when_the_cgroup_goes_away(v1_driver: V1Driver) -> None:
    """Documented in the driver: a wake-up alone does not mean OOM; re-check under_oom."""
    v1_driver.create("gone", UNLIMITED)
    efd = v1_driver.open_oom_notifier("gone")
    try:
        assert select.select([efd], [], [], 0)[0] == []
        v1_driver.remove("gone")
        assert select.select([efd], [], [], 10)[0] == [efd]
    finally:
        os.close(efd)


def test_pids_below_sees_the_whole_subtree(v1_driver: V1Driver) -> None:
    v1_driver.create("pod/c", UNLIMITED)
    v1_driver.create("pod/d", UNLIMITED)
    sleepers = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
    try:
        v1_driver.add_process("pod/c", sleepers[0].pid)
        v1_driver.add_process("pod", sleepers[1].pid)
        assert v1_driver.pids("pod") == [sleepers[1].pid]
        assert v1_driver.pids_below("pod") == sorted(p.pid for p in sleepers)
        assert v1_driver.pids_below("pod/d") == []
        assert v1_driver.pids_below("absent") == []
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
