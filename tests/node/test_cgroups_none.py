"""The none driver: recorded resources, usage from a real process tree via psutil."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from inplace.node.cgroups import CgroupNotFound, CgroupResources, CgroupUnsupported, NoneDriver
from tests.poll import wait_until

Mi = 1024 * 1024


def test_records_resources() -> None:
    driver = NoneDriver()
    assert not driver.enforces_limits
    res = CgroupResources(cpu_shares=512, cpu_quota_us=20_000, memory_limit_bytes=Mi)
    driver.create("node/pod/c", res)
    assert driver.read("node/pod/c") == res
    driver.update("node/pod/c", CgroupResources(None, None))
    assert driver.read("node/pod/c") == CgroupResources(None, None)
    driver.set_oom_kill_disable("node/pod/c", True)
    assert not driver.under_oom("node/pod/c")
    assert driver.oom_kill_count("node/pod/c") == 0
    driver.record_oom_kill("node/pod/c")  # the userspace pause's kill, counted as the kernel's
    assert driver.oom_kill_count("node/pod/c") == 1
    with pytest.raises(CgroupUnsupported):
        driver.open_oom_notifier("node/pod/c")
    driver.remove("node/pod")
    with pytest.raises(CgroupNotFound):
        driver.read("node/pod/c")
    driver.create("node/pod/c", res)
    assert driver.oom_kill_count("node/pod/c") == 0  # a new cgroup counts from zero


def test_usage_of_a_real_process_tree() -> None:
    driver = NoneDriver()
    driver.create("pod/c", CgroupResources(None, None))
    # a parent that allocates 30 MiB and spawns a child that burns a little CPU
    code = (
        "import subprocess, sys, time\n"
        "b = b'x' * (30 << 20)\n"
        "subprocess.Popen([sys.executable, '-c', 'import time\\nt=time.time()\\n"
        "while time.time()-t < 0.3: pass\\ntime.sleep(60)'])\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        driver.add_process("pod/c", proc.pid)
        wait_until(lambda: len(driver.pids("pod/c")) == 2)
        wait_until(lambda: driver.usage("pod/c").cpu_usage_ns > 0)
        usage = driver.usage("pod/c")
        assert usage.memory_usage_bytes >= 30 * Mi
        assert usage.memory_working_set_bytes == usage.memory_usage_bytes
        # usage of a parent path includes its children
        assert driver.usage("pod").memory_usage_bytes >= 30 * Mi

        driver.freeze("pod/c")
        wait_until(lambda: psutil.Process(proc.pid).status() == psutil.STATUS_STOPPED)
        driver.thaw("pod/c")
        wait_until(lambda: psutil.Process(proc.pid).status() != psutil.STATUS_STOPPED)
    finally:
        for p in psutil.Process(proc.pid).children(recursive=True):
            p.kill()
        proc.kill()
        proc.wait()
        time.sleep(0)
    wait_until(lambda: driver.pids("pod/c") == [])


def test_pids_below_sees_the_whole_subtree() -> None:
    driver = NoneDriver()
    driver.create("pod/c", CgroupResources(None, None))
    driver.create("pod/d", CgroupResources(None, None))
    sleepers = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
    try:
        driver.add_process("pod/c", sleepers[0].pid)
        driver.add_process("pod", sleepers[1].pid)
        assert driver.pids_below("pod") == sorted(p.pid for p in sleepers)
        assert driver.pids_below("pod/d") == []
        assert driver.pids_below("absent") == []
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
