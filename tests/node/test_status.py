"""The status the agent writes (inplace.node.status), synced against fakes."""

from __future__ import annotations

from pathlib import Path

from tests.node.fakes import admit_running, pod, running_agent


async def test_status_sync_writes_what_changed_and_nothing_when_nothing_did(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path) as (cluster, agent):
        key = await admit_running(cluster, agent, pod("web"))
        status = cluster.pods[key]["status"]
        assert status["phase"] == "Running"
        assert status["containerStatuses"][0]["state"]["running"]["startedAt"]
        ready = cluster.condition(key, "Ready")
        assert ready is not None and ready["status"] == "True"
        # the kubelet's set and order (pkg/kubelet/kubelet_pods.go generateAPIPodStatus)
        assert [c["type"] for c in status["conditions"]] == [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ]
        patches = len(cluster.status_patches)
        await agent.reconcile(key)
        assert len(cluster.status_patches) == patches  # nothing changed: nothing written

        w = agent.ctx.worker_for(key)
        assert w is not None
        w.containers["main"].restart_count = 3  # as a restart would
        await agent.reconcile(key)
        (_, patch), *_ = cluster.status_patches[patches:]
        assert list(patch) == ["containerStatuses"]
        assert cluster.pods[key]["status"]["containerStatuses"][0]["restartCount"] == 3
