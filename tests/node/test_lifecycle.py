"""Pod lifecycle (inplace.node.lifecycle) driven through a real agent against fake actions."""

from __future__ import annotations

import copy
import signal
import subprocess
from pathlib import Path

from inplace.api.timestamps import rfc3339
from inplace.node.agent import NodeAgent
from inplace.node.cgroups.base import CgroupError, CgroupResources
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


async def test_a_start_is_reported_as_the_kubelet_reports_it(tmp_path: Path) -> None:
    """The events of a container's start are the kubelet's (images/image_manager.go: the image
    is there and may be used; kuberuntime_container.go startContainer), and its status says
    who it runs as and its sandbox is ready (PodReadyToStartContainers)."""
    async with running_agent(tmp_path) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("web"))
        starts = [
            (e.type, e.reason, e.field_path, e.message)
            for e in cluster.events
            if e.key == key and e.reason in ("Pulled", "Created", "Started")
        ]
        pulled = (
            'Container image "busybox" already present on machine and can be accessed by the pod'
        )
        assert starts == [
            ("Normal", "Pulled", "spec.containers{main}", pulled),
            ("Normal", "Created", "spec.containers{main}", "Container created"),
            ("Normal", "Started", "spec.containers{main}", "Container started"),
        ]
        status = cluster.pods[key]["status"]
        user = status["containerStatuses"][0]["user"]["linux"]
        assert (user["uid"], user["gid"]) == (0, 0) and user["supplementalGroups"][0] == 0
        ready = cluster.condition(key, "PodReadyToStartContainers")
        assert ready is not None and ready["status"] == "True"


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


def _stray(agent: NodeAgent, path: str) -> subprocess.Popen[bytes]:
    """A process in cgroup ``path`` that the agent does not track: what an agent killed
    between starting a workload and recording it leaves behind."""
    stray = subprocess.Popen(["sleep", "60"])
    agent.driver.create(path, CgroupResources(cpu_shares=None, cpu_quota_us=None))
    agent.driver.add_process(path, stray.pid)
    return stray


async def test_a_pods_cgroup_is_removed_with_its_untracked_processes_killed(
    tmp_path: Path,
) -> None:
    """Upstream's ``PodContainerManager.Destroy``: found by the chaos storm as a pod cgroup
    left behind, holding a workload its killed agent had started but not recorded."""
    async with running_agent(tmp_path) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("gone"))
        w = agent.ctx.worker_for(key)
        assert w is not None
        stray = _stray(agent, agent.ctx.paths.container(w.uid, "main"))
        try:
            body = copy.deepcopy(cluster.pods[key])
            body["metadata"]["deletionTimestamp"] = rfc3339()
            cluster.put(body)
            assert await agent.reconcile(key) is None
            assert stray.wait(timeout=30) == -signal.SIGKILL
        finally:
            stray.kill()
            stray.wait()


async def test_a_container_starts_in_a_cgroup_emptied_of_untracked_processes(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path) as (cluster, agent):
        stray = _stray(agent, agent.ctx.paths.container("uid-fresh", "main"))
        try:
            key = await admit_running(cluster, agent, pod("fresh", uid="uid-fresh"))
            assert stray.wait(timeout=30) == -signal.SIGKILL
            w = agent.ctx.worker_for(key)
            assert w is not None and w.containers["main"].state == "running"
        finally:
            stray.kill()
            stray.wait()
