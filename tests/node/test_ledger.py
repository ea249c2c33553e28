"""The node's ledger (inplace.node.ledger): what admitted pods hold, and retry order."""

from __future__ import annotations

from pathlib import Path

from inplace.api.conditions import present
from tests.node.fakes import admit_running, pod, running_agent


async def test_the_ledger_counts_admitted_pods_and_orders_deferred_resizes(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, cpu_milli=2000) as (cluster, agent):
        low = await admit_running(cluster, agent, pod("low", cpu="500m", memory="64Mi"))
        high_body = pod("high", cpu="250m", memory="32Mi")
        high_body["spec"]["priority"] = 1000
        high = await admit_running(cluster, agent, high_body)
        assert agent.ledger.allocatable() == (2000, 2 << 30)
        assert agent.ledger.used() == (750, 96 << 20)
        w_low, w_high = agent.ctx.worker_for(low), agent.ctx.worker_for(high)
        assert w_low is not None and w_high is not None
        assert agent.ledger.used(exclude=w_low.uid) == (250, 32 << 20)
        assert agent.ledger.active_pods() == 2

        # Both wait for room to grow: the higher priority is retried first.
        assert agent.ledger.deferred_order() == []
        for w in (w_low, w_high):
            grown = dict(w.pod)
            grown["spec"] = {
                **w.pod["spec"],
                "containers": [
                    {**w.pod["spec"]["containers"][0], "resources": {"requests": {"cpu": "1"}}}
                ],
            }
            w.pod = grown
            w.resize_conditions = {"PodResizePending": present(2, "True", "Deferred")}
        assert agent.ledger.deferred_order() == [high, low]
        # An Infeasible resize is not retried when room appears (the kubelet's
        # retryPendingResizes drops it; only a new resize of the pod is looked at).
        w_high.resize_conditions = {"PodResizePending": present(2, "True", "Infeasible")}
        assert agent.ledger.deferred_order() == [low]

        # A pod being torn down holds nothing.
        w_low.stopping = True
        assert agent.ledger.used() == (250, 32 << 20)
        assert agent.ledger.active_pods() == 1
