"""Pure parts of the cgroup package: mountinfo, /proc/PID/cgroup, paths, detection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inplace.node.cgroups import (
    CgroupUnsupported,
    CgroupWriteError,
    NoneDriver,
    V1Driver,
    V2Driver,
    detect_driver,
    parse_mountinfo,
    parse_proc_cgroup,
    v1_mounts,
)
from inplace.node.cgroups.base import join_path

SEPARATE = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""

CO_MOUNTED = """\
25 18 0:22 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:13 - cgroup cgroup rw,cpu,cpuacct
31 25 0:28 / /sys/fs/cgroup/memory rw,nosuid shared:14 - cgroup cgroup rw,memory
32 25 0:29 / /sys/fs/cgroup/my\\040dir rw - cgroup cgroup rw,freezer
"""

UNIFIED_ONLY = """\
35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw
"""


def test_v1_mounts_separate() -> None:
    assert v1_mounts(parse_mountinfo(SEPARATE)) == {
        "cpu": "/sys/fs/cgroup/cpu",
        "cpuacct": "/sys/fs/cgroup/cpuacct",
        "memory": "/sys/fs/cgroup/memory",
        "freezer": "/sys/fs/cgroup/freezer",
        "pids": "/sys/fs/cgroup/pids",
    }


def test_v1_mounts_co_mounted_and_escaped() -> None:
    mounts = v1_mounts(parse_mountinfo(CO_MOUNTED))
    assert mounts["cpu"] == mounts["cpuacct"] == "/sys/fs/cgroup/cpu,cpuacct"
    assert mounts["freezer"] == "/sys/fs/cgroup/my dir"
    assert "pids" not in mounts


def test_co_mounted_layout_uses_one_directory(tmp_path: Path) -> None:
    shared = str(tmp_path / "cpu,cpuacct")
    driver = V1Driver(
        "root", mounts={"memory": str(tmp_path / "memory"), "cpu": shared, "cpuacct": shared}
    )
    assert driver.controller_dir("cpu", "x") == driver.controller_dir("cpuacct", "x")
    assert driver._dirs("x") == [str(tmp_path / "memory/root/x"), f"{shared}/root/x"]
    with pytest.raises(CgroupUnsupported):
        driver.freeze("x")  # no freezer mounted


def test_v1_requires_memory_and_cpu() -> None:
    with pytest.raises(CgroupUnsupported, match="memory"):
        V1Driver("x", mounts={"cpu": "/a", "cpuacct": "/b"})


def test_detect_falls_back_without_cgroups() -> None:
    assert isinstance(detect_driver("x", mounts=[]), NoneDriver)


def test_detect_here() -> None:
    driver = detect_driver("inplace-probe")
    assert driver.name in ("v1", "v2", "none")
    if os.geteuid() != 0:
        assert driver.name != "v1"


def test_detect_unified_only_mountinfo_is_not_v1() -> None:
    driver = detect_driver("x", mounts=parse_mountinfo(UNIFIED_ONLY))
    assert not isinstance(driver, V1Driver)
    assert isinstance(driver, (V2Driver, NoneDriver))


def test_parse_proc_cgroup() -> None:
    text = (
        "12:cpu,cpuacct:/inplace/node-1/pod1/c\n"
        "4:memory:/inplace/node-1/pod1/c\n"
        "9:name=systemd:/\n"
        "0::/user.slice\n"
    )
    assert parse_proc_cgroup(text) == {
        "cpu": "/inplace/node-1/pod1/c",
        "cpuacct": "/inplace/node-1/pod1/c",
        "memory": "/inplace/node-1/pod1/c",
        "name=systemd": "/",
        "": "/user.slice",
    }


@pytest.mark.parametrize("bad", ["../x", "a/../../b", "a//b", "./a"])
def test_paths_cannot_escape_the_root(bad: str) -> None:
    with pytest.raises(ValueError):
        join_path("/sys/fs/cgroup/memory/inplace", bad)


def test_join_path() -> None:
    assert join_path("/r", "") == "/r"
    assert join_path("/r", "/a/b/") == "/r/a/b"


def test_write_error_message() -> None:
    err = CgroupWriteError("/x/memory.limit_in_bytes", "100", 16)
    assert str(err) == "writing '100' to /x/memory.limit_in_bytes: Device or resource busy (EBUSY)"


def test_every_driver_implements_the_protocol(tmp_path: Path) -> None:
    from inplace.node.cgroups import CgroupDriver

    drivers = [NoneDriver(), V2Driver(str(tmp_path), "x", plain_files=True)]
    drivers.append(V1Driver("x", mounts={c: str(tmp_path) for c in ("memory", "cpu", "cpuacct")}))
    for driver in drivers:
        assert isinstance(driver, CgroupDriver)
        assert driver.name in ("v1", "v2", "none")
