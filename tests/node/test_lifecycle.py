"""Pod lifecycle (inplace.node.lifecycle) driven through a real agent against fake actions."""

from __future__ import annotations

import copy
from pathlib import Path

from inplace.api.timestamps import rfc3339
from inplace.node.cgroups.base import CgroupError
from tests.node.fakes import RecordingRuntime, admit_running, pod, running_agent


async def test_a_deleted_pod_is_stopped_cleaned_up_and_its_deletion_confirmed(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("gone"))
        w = agent.ctx.worker_for(key)
        assert w is not None
        proc = w.procs["main"]
        body = copy.deepcopy(cluster.pods[key])
        body["metadata"]["deletionTimestamp"] = rfc3339()
        body["metadata"]["deletionGracePeriodSeconds"] = 30
        cluster.put(body)

        assert await agent.reconcile(key) is None
        assert isinstance(agent.ctx.runtime, RecordingRuntime)
        assert agent.ctx.runtime.stopped == [(proc.pid, 30.0)]  # with the pod's grace
        assert cluster.deletions == [(key, w.uid)]
        assert key not in cluster.pods
        assert agent.ctx.worker_for(key) is None and not agent.workers
        assert agent.ctx.checkpoints.load_all() == []
        try:
            agent.driver.read(agent.ctx.paths.pod(w.uid))
        except CgroupError:
            pass
        else:
            raise AssertionError("the pod's cgroup was left behind")
        assert agent.ledger.used() == (0, 0)


async def test_a_pod_that_does_not_fit_is_rejected_with_upstreams_reason(tmp_path: Path) -> None:
    async with running_agent(tmp_path, cpu_milli=1000) as (cluster, agent):
        key = "default/huge"
        cluster.put(pod("huge", cpu="2"))
        assert await agent.reconcile(key) is None
        status = cluster.pods[key]["status"]
        assert (status["phase"], status["reason"]) == ("Failed", "OutOfcpu")
        assert status["message"].startswith("Pod was rejected: Node didn't have enough resource")
        assert cluster.reasons(key) == ["OutOfcpu"]
        assert not agent.workers
