"""`inplace down`'s work on the host, with real cgroups and mounts: leftover processes get
SIGTERM and their pod's grace period, then SIGKILL (frozen ones too), cgroups go leaf first,
mounts under the data dir go, and --purge refuses a directory that is not a cluster's.
The whole command, against real clusters, is in tests/e2e/test_down.py."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from inplace.cli.down import (
    DownError,
    cluster_cgroups,
    pods_running,
    processes_in,
    remove_cgroups,
    run_down,
    stop_processes,
    unmount_under,
)
from inplace.cli.paths import DataDir
from inplace.node.cgroups import CgroupResources, V1Driver
from tests.node.conftest import V1_SKIP_REASON, v1_available

POD_A = str(uuid.uuid4())
POD_B = str(uuid.uuid4())


@pytest.fixture
def cluster_root() -> Iterator[tuple[str, V1Driver]]:
    """A cluster-like cgroup subtree ``inplace-test-X/<cluster>`` in every hierarchy."""
    if not v1_available():
        pytest.skip(V1_SKIP_REASON)
    root = f"inplace-test-{uuid.uuid4().hex[:8]}/cluster"
    driver = V1Driver(root)
    try:
        yield root, driver
    finally:
        tops = cluster_cgroups(root)
        for pid in processes_in(tops):
            subprocess.run(["kill", "-9", str(pid)], check=False)
        remove_cgroups(tops)


def start_in(driver: V1Driver, path: str, script: str) -> subprocess.Popen[bytes]:
    driver.create(path, CgroupResources(None, None))
    process = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    driver.add_process(path, process.pid)
    return process


async def test_leftovers_get_their_grace_period_then_sigkill(
    cluster_root: tuple[str, V1Driver], tmp_path: Path
) -> None:
    root, driver = cluster_root
    polite = start_in(
        driver,
        f"node-1/pod{POD_A}/main",
        f"trap 'echo bye > {tmp_path}/polite; exit 0' TERM; while :; do sleep 0.1; done",
    )
    stubborn = start_in(
        driver, f"node-1/pod{POD_B}/main", "trap '' TERM; while :; do sleep 0.1; done"
    )
    frozen = start_in(driver, "node-1/loose", "sleep 300")
    Path(driver.controller_dir("freezer", "node-1/loose"), "freezer.state").write_text("FROZEN")
    tops = cluster_cgroups(root)
    assert {polite.pid, stubborn.pid, frozen.pid} <= set(processes_in(tops))
    assert pods_running(root) == 2
    async with asyncio.timeout(60):  # a hang guard
        count = await stop_processes(tops, {POD_A: 30, POD_B: 1})
    assert count >= 3
    assert processes_in(tops) == {}
    assert (tmp_path / "polite").read_text() == "bye\n"  # SIGTERM, and it was listened to
    assert stubborn.wait() == -9  # SIGKILL once its pod's grace period was over
    assert polite.wait() == 0
    assert frozen.wait() == -15  # thawed first, then SIGTERM worked
    assert remove_cgroups(tops) > 0
    assert cluster_cgroups(root) == []
    assert not Path(driver.controller_dir("memory", "")).parent.exists()


def test_mounts_under_the_data_dir_go(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "data" / "nodes" / "pin"
    source.mkdir()
    target.mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(source), str(target)], check=True)
    try:
        assert unmount_under(tmp_path / "data") == 1
        assert str(tmp_path) not in Path("/proc/self/mountinfo").read_text()
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False, capture_output=True)


async def test_purge_refuses_what_is_not_a_clusters(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "precious.txt").write_text("keep me")
    lines: list[str] = []
    with pytest.raises(DownError, match="does not look like an inplace data dir"):
        await run_down(
            DataDir(tmp_path / "mine"),
            cgroup_root=f"inplace-test-{uuid.uuid4().hex[:8]}/none",
            purge=True,
            say=lines.append,
            warn=lines.append,
        )
    assert (tmp_path / "mine" / "precious.txt").read_text() == "keep me"
    code = await run_down(
        DataDir(tmp_path / "absent"),
        cgroup_root=f"inplace-test-{uuid.uuid4().hex[:8]}/none",
        purge=True,
        say=lines.append,
        warn=lines.append,
    )
    assert code == 0
    assert lines[-1] == f"inplace: no cluster in {tmp_path / 'absent'}; nothing to do"
