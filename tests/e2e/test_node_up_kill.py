"""End to end: SIGKILL `inplace up` itself; its workloads live on and a new `inplace up` with
the same data dir re-adopts them (same PIDs, same restart counts)."""

from __future__ import annotations

import contextlib
import shutil
import signal
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import start_cluster
from tests.e2e.test_node_agent import (
    SLEEPER,
    _kill_cgroup_tree,
    alive,
    cgroup_root_of,
    delete,
    pid_of,
    pytestmark,
    running,
    status_of,
    wait_until,
)

__all__ = ["pytestmark"]


def test_sigkill_of_inplace_up_keeps_workloads(tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is required for the end-to-end tests and is not on PATH")
    data_dir = tmp_path / "data"
    args = ("--nodes", "1", "--node-cpu", "1", "--node-memory", "1Gi")
    cluster = start_cluster(data_dir, None, *args)
    try:
        cluster.kubectl("apply", "-f", "-", input=SLEEPER.format(name="lasting"))
        pod = wait_until(lambda: running(cluster, "lasting"), what="lasting Running")
        pid = pid_of(pod)
        components = [p.pid for p in psutil.Process(cluster.process.pid).children()]
        cluster.process.send_signal(signal.SIGKILL)
        cluster.process.wait(10)
        # The components follow their supervisor (parent-death signal); the workload does not.
        wait_until(lambda: not any(alive(c) for c in components), what="components gone")
        time.sleep(0.5)
        assert alive(pid)

        cluster = start_cluster(data_dir, cluster.port, *args)

        def readopted() -> dict[str, object] | None:
            pod = running(cluster, "lasting")
            return pod if pod is not None and pid_of(pod) == pid else None

        pod = wait_until(readopted, what="lasting re-adopted")
        assert status_of(pod, "main")["restartCount"] == 0
        delete(cluster, "lasting")
        wait_until(lambda: not alive(pid), what="workload stopped by the deletion")
    finally:
        with contextlib.suppress(Exception):
            cluster.stop()
        _kill_cgroup_tree(cgroup_root_of(data_dir))
