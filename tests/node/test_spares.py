"""Spare shims (`inplace.node.spares`, `inplace.node.shim.spare`): a job handed to a waiting
spare runs as a freshly started shim would — its arguments with the descriptors passed,
its environment, working directory, stdout and stderr — and the next spare is started."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import psutil

from inplace.node.spares import Spares, Zygote


def read_all(fd: int) -> str:
    with os.fdopen(fd, "rb") as fh:
        return fh.read().decode()


async def test_a_spare_runs_the_job_and_the_next_one_waits(tmp_path: Path) -> None:
    spares = Spares()
    try:
        out_r, out_w = os.pipe()
        first = spares.run(("release", str(tmp_path)), stdout=out_w, stderr=out_w)
        os.close(out_w)
        assert first.wait(timeout=30) == 0 and read_all(out_r) == ""
        await asyncio.sleep(0.3)  # the spares are started a little later
        assert spares.ready == 2
        ready = spares._ready[0]
        assert ready.popen.poll() is None
        assert "spare" in psutil.Process(ready.popen.pid).cmdline()
        # the waiting spare takes the next job: a usage error on its stderr, env and cwd set
        err_r, err_w = os.pipe()
        second = spares.run(
            ("bogus", "{fd0}"), stdout=err_w, stderr=err_w, fds=(err_w,), env={"X": "1"}
        )
        os.close(err_w)
        assert second.pid == ready.popen.pid
        assert second.wait(timeout=30) == 2
        text = read_all(err_r)
        assert "usage: shim" in text and "'bogus'" in text
        assert "{fd0}" not in text  # the descriptor's number in its place
    finally:
        spares.close()
    assert spares.ready == 0 and ready.popen.poll() is not None


async def test_a_dead_spare_is_replaced_for_the_job(tmp_path: Path) -> None:
    spares = Spares()
    try:
        out_r, out_w = os.pipe()
        spares.run(("release", str(tmp_path)), stdout=out_w, stderr=out_w).wait(timeout=30)
        await asyncio.sleep(0.3)
        ready = spares._ready[0]
        ready.popen.kill()
        ready.popen.wait()
        job = spares.run(("release", str(tmp_path)), stdout=out_w, stderr=out_w)
        os.close(out_w)
        assert job.pid != ready.popen.pid and job.wait(timeout=30) == 0
        read_all(out_r)
    finally:
        spares.close()


async def test_without_spares_to_keep_none_is_left_waiting(tmp_path: Path) -> None:
    spares = Spares(keep=0)
    out_r, out_w = os.pipe()
    job = spares.run(("release", str(tmp_path)), stdout=out_w, stderr=out_w)
    os.close(out_w)
    assert job.wait(timeout=30) == 0 and read_all(out_r) == ""
    await asyncio.sleep(0.3)
    assert spares.ready == 0


def test_the_zygote_forks_shims_that_outlive_it(tmp_path: Path) -> None:
    """A shim forked by the zygote runs its job with the descriptors passed, is not the
    agent's child (it is waited for through a pidfd), and goes on when the zygote ends; a
    zygote found gone is started again for the next job."""
    zygote = Zygote()
    try:
        out_r, out_w = os.pipe()
        shim = zygote.fork(("bogus",), stdout=out_w, stderr=out_w)
        os.close(out_w)
        shim.wait(timeout=30)  # (it ends at once: too soon to look at its parent)
        assert "usage: shim" in read_all(out_r)
        long = zygote.fork(("exec", "-", "sleep", "30"), stdout=1, stderr=2)
        assert psutil.Process(long.pid).ppid() != os.getpid()
        first = zygote._running
        assert first is not None
        first.popen.kill()
        first.popen.wait()
        assert psutil.Process(long.pid).is_running()  # the zygote gone, its shim goes on
        again = zygote.fork(("release", str(tmp_path)), stdout=1, stderr=2)
        again.wait(timeout=30)
        assert zygote._running is not None and zygote._running is not first
        os.kill(long.pid, 9)
        long.wait(timeout=30)
    finally:
        zygote.close()
