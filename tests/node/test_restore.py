"""Restore from checkpoints (inplace.node.restore): a successor agent re-adopts the pods."""

from __future__ import annotations

import contextlib
from pathlib import Path

from inplace.node.checkpoint import ContainerCheckpoint, PodCheckpoint
from tests.node.fakes import (
    RecordingRuntime,
    admit_running,
    fake_agent,
    pod,
    running_agent,
)


async def test_a_successor_re_adopts_running_pods_and_reaps_the_gone(tmp_path: Path) -> None:
    runtime = RecordingRuntime()
    async with running_agent(tmp_path, runtime=runtime) as (cluster, first):
        key = await admit_running(cluster, first, pod("kept"))
        w = first.ctx.worker_for(key)
        assert w is not None
        pid = w.containers["main"].pid
        proc = w.procs["main"]
        # A pod that was deleted while no agent ran: only its checkpoint and process remain.
        orphan_proc = runtime.adopt(4_999_999, proc.start_time, proc.log_path)
        assert orphan_proc is not None
        first.ctx.checkpoints.save(
            PodCheckpoint(
                uid="uid-gone",
                namespace="default",
                name="gone",
                containers={
                    "main": ContainerCheckpoint(
                        pid=4_999_999,
                        start_time=proc.start_time,
                        log_path=proc.log_path,
                        state="running",
                    )
                },
            )
        )
        # The first agent dies (nothing stops its containers); its successor starts.
        for worker in first.workers.values():
            assert worker.task is not None
            worker.task.cancel()
            with contextlib.suppress(BaseException):
                await worker.task
        successor = fake_agent(cluster, tmp_path, runtime=runtime)
        try:
            await successor.restore()
            again = successor.ctx.worker_for(key)
            assert again is not None
            assert again.containers["main"].state == "running"
            assert again.containers["main"].pid == pid  # the same process, not a new one
            # who it runs as and its sandbox, as reported before the restart
            assert again.containers["main"].user == w.containers["main"].user is not None
            assert again.sandbox_ready
            assert again.allocated == w.allocated
            assert runtime.stopped == [(4_999_999, 0)]  # the orphan, and only it
            assert [cp.uid for cp in successor.ctx.checkpoints.load_all()] == [w.uid]
            assert successor.ledger.used() == (250, 64 << 20)
        finally:
            for worker in successor.workers.values():
                if worker.task is not None:
                    worker.task.cancel()
                    with contextlib.suppress(BaseException):
                        await worker.task
