"""The v2 driver against a plain directory tree standing in for cgroupfs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inplace.node.cgroups import CgroupNotFound, CgroupResources, V2Driver
from inplace.node.cgroups.base import pause_threshold

Mi = 1024 * 1024


@pytest.fixture
def fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    (root / "cgroup.subtree_control").write_text("")
    return root


@pytest.fixture
def driver(fake_root: Path) -> V2Driver:
    return V2Driver(str(fake_root), "inplace", plain_files=True)


def read(root: Path, rel: str, name: str) -> str:
    return (root / "inplace" / rel / name).read_text().strip()


def test_create_writes_kernel_formats(driver: V2Driver, fake_root: Path) -> None:
    res = CgroupResources(
        cpu_shares=1024, cpu_quota_us=50_000, memory_limit_bytes=64 * Mi + 1, pids_max=50
    )
    driver.create("node/pod/c", res)
    assert read(fake_root, "node/pod/c", "cpu.weight") == "39"
    assert read(fake_root, "node/pod/c", "cpu.max") == "50000 100000"
    assert read(fake_root, "node/pod/c", "memory.max") == str(64 * Mi)
    assert read(fake_root, "node/pod/c", "pids.max") == "50"
    # controllers delegated from the mount root down to the leaf's parent, not the leaf
    for d in (
        fake_root,
        fake_root / "inplace",
        fake_root / "inplace/node",
        fake_root / "inplace/node/pod",
    ):
        assert (d / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"
    assert not (fake_root / "inplace/node/pod/c/cgroup.subtree_control").exists()
    assert driver.read("node/pod/c") == driver.normalize(res)
    assert driver.read("node/pod/c").cpu_shares == 999  # the lossy weight round trip


def test_unlimited_values(driver: V2Driver, fake_root: Path) -> None:
    driver.create("c", CgroupResources(cpu_shares=2, cpu_quota_us=-1, cpu_period_us=50_000))
    assert read(fake_root, "c", "cpu.weight") == "1"
    assert read(fake_root, "c", "cpu.max") == "max 50000"
    assert read(fake_root, "c", "memory.max") == "max"
    assert read(fake_root, "c", "pids.max") == "max"
    got = driver.read("c")
    assert (got.cpu_quota_us, got.memory_limit_bytes, got.pids_max) == (None, None, None)


def test_usage_and_events(driver: V2Driver, fake_root: Path) -> None:
    driver.create("c", CgroupResources(None, None))
    d = fake_root / "inplace/c"
    (d / "memory.current").write_text("10485760\n")
    (d / "memory.stat").write_text("anon 8388608\nfile 2097152\ninactive_file 1048576\n")
    (d / "cpu.stat").write_text("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n")
    (d / "memory.events").write_text("low 0\nhigh 3\nmax 7\noom 2\noom_kill 1\noom_group_kill 0\n")
    usage = driver.usage("c")
    assert usage.cpu_usage_ns == 1_500_000
    assert usage.memory_usage_bytes == 10 * Mi
    assert usage.memory_working_set_bytes == 9 * Mi
    assert driver.oom_kill_count("c") == 1
    fd = driver.open_oom_notifier("c")
    try:
        assert os.read(fd, 100).startswith(b"low 0")
    finally:
        os.close(fd)


def test_processes_and_freeze(driver: V2Driver, fake_root: Path) -> None:
    driver.create("c", CgroupResources(None, None))
    assert driver.pids("c") == []
    driver.add_process("c", 1234)
    driver.add_process("c", 99)
    assert driver.pids("c") == [99, 1234]
    driver.freeze("c")
    assert read(fake_root, "c", "cgroup.freeze") == "1"
    driver.thaw("c")
    assert read(fake_root, "c", "cgroup.freeze") == "0"


def test_pause_mode_puts_memory_high_just_under_memory_max(
    driver: V2Driver, fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver.create("c", CgroupResources(None, None, memory_limit_bytes=64 * Mi))
    driver.set_oom_kill_disable("c", True)
    assert read(fake_root, "c", "memory.max") == str(64 * Mi)
    assert read(fake_root, "c", "memory.high") == str(pause_threshold(64 * Mi)) == str(62 * Mi)
    assert driver.read("c").memory_limit_bytes == 64 * Mi
    assert driver.events_file("c") == str(fake_root / "inplace/c/memory.events")
    assert not driver.under_oom("c")
    driver.freeze("c")
    assert driver.under_oom("c")  # parked: in pause mode and frozen
    driver.thaw("c")

    # a resize in pause mode moves both, the hard limit first when growing, last when shrinking
    writes: list[tuple[str, str]] = []
    real_write = driver._write

    def recording(path: str, name: str, value: str) -> None:
        writes.append((name, value))
        real_write(path, name, value)

    monkeypatch.setattr(driver, "_write", recording)
    driver.update("c", CgroupResources(None, None, memory_limit_bytes=128 * Mi))
    memory = [w for w in writes if w[0].startswith("memory.")]
    assert memory == [("memory.max", str(128 * Mi)), ("memory.high", str(124 * Mi))]
    writes.clear()
    driver.update("c", CgroupResources(None, None, memory_limit_bytes=32 * Mi))
    memory = [w for w in writes if w[0].startswith("memory.")]
    assert memory == [("memory.high", str(31 * Mi)), ("memory.max", str(32 * Mi))]

    # lifting the limit leaves nothing to pause at; setting one again resumes pause mode
    driver.update("c", CgroupResources(None, None))
    assert read(fake_root, "c", "memory.max") == read(fake_root, "c", "memory.high") == "max"
    driver.update("c", CgroupResources(None, None, memory_limit_bytes=32 * Mi))
    assert read(fake_root, "c", "memory.high") == "max"  # pause mode is a choice of the agent
    driver.set_oom_kill_disable("c", True)
    assert read(fake_root, "c", "memory.high") == str(31 * Mi)

    driver.set_oom_kill_disable("c", False)
    assert read(fake_root, "c", "memory.max") == str(32 * Mi)
    assert read(fake_root, "c", "memory.high") == "max"
    assert not driver.under_oom("c")


def test_no_limit_no_pause_mode(driver: V2Driver, fake_root: Path) -> None:
    driver.create("c", CgroupResources(None, None))
    driver.set_oom_kill_disable("c", True)
    assert read(fake_root, "c", "memory.high") == "max"
    assert read(fake_root, "c", "memory.events").startswith("low 0\nhigh 0")  # seeded as mkdir


@pytest.mark.parametrize(
    ("limit", "threshold"),
    [
        (64 * Mi, 62 * Mi),  # 1/32 below
        (16 * Mi, 15 * Mi),  # at least 1 MiB below
        (1 << 30, (1 << 30) - 32 * Mi),
        (8 << 30, (8 << 30) - 32 * Mi),  # at most 32 MiB below
        (1 * Mi, Mi // 2),  # never below half the limit
    ],
)
def test_pause_threshold(limit: int, threshold: int) -> None:
    assert pause_threshold(limit) == threshold


def test_remove(driver: V2Driver, fake_root: Path) -> None:
    driver.create("a/b/c", CgroupResources(None, None))
    driver.remove("a")
    assert not (fake_root / "inplace/a").exists()
    driver.remove("a")  # missing is fine
    with pytest.raises(CgroupNotFound):
        driver.read("a")


def test_pids_below_sees_the_whole_subtree(driver: V2Driver) -> None:
    driver.create("pod/c", CgroupResources(None, None))
    driver.create("pod/d", CgroupResources(None, None))
    driver.add_process("pod/c", 1234)
    driver.add_process("pod", 99)
    assert driver.pids_below("pod") == [99, 1234]
    assert driver.pids_below("pod/d") == []
    assert driver.pids_below("absent") == []
