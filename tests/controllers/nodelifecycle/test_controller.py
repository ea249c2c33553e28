"""Node lifecycle and taint eviction against the API server: a node whose agent went silent
becomes Unknown and tainted, its pods go after their tolerationSeconds, and the taints leave
when it reports again."""

from __future__ import annotations

from typing import Any

from inplace.api.timestamps import rfc3339, rfc3339_micro
from inplace.client import LEASES, NODES, PODS, Client
from inplace.controllers.nodelifecycle import model as m
from tests.controllers.conftest import Harness, set_phase
from tests.poll import await_until


def node(name: str) -> dict[str, Any]:
    now = rfc3339()
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "capacity": {"cpu": "2", "memory": "2Gi", "pods": "10"},
            "allocatable": {"cpu": "2", "memory": "2Gi", "pods": "10"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
        },
    }


def bound_pod(
    name: str, node_name: str, tolerations: list[dict[str, Any]] | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeName": node_name,
        "containers": [{"name": "main", "image": "busybox"}],
    }
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


async def taints(client: Client, name: str) -> set[tuple[str, str]]:
    obj = await client.get(NODES, name)
    return {(t["key"], t["effect"]) for t in (obj.get("spec") or {}).get("taints") or ()}


async def ready(client: Client, name: str) -> str | None:
    return m.ready_status(await client.get(NODES, name))


async def test_a_silent_node_is_marked_unknown_tainted_and_drained(harness: Harness) -> None:
    client = harness.client
    await client.create(NODES, node("quiet"))
    await client.create(
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "quiet", "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": "quiet", "renewTime": rfc3339_micro()},
        },
    )
    short = [
        {"key": m.UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1}
    ]
    await client.create(PODS, bound_pod("short", "quiet", short))
    await client.create(PODS, bound_pod("patient", "quiet", None))  # 300 s by default
    for name in ("short", "patient"):
        await set_phase(client, await client.get(PODS, name, namespace="default"), "Running")
    await harness.start(
        "nodelifecycle,taint-eviction", node_monitor_grace_period=1.0, node_monitor_period=0.2
    )

    async def unknown() -> bool:
        return await ready(client, "quiet") == "Unknown"

    await await_until(unknown, what="Ready=Unknown")
    await await_until(
        lambda: _has_taints(
            client, "quiet", {(m.UNREACHABLE, "NoExecute"), (m.UNREACHABLE, "NoSchedule")}
        ),
        what="unreachable taints",
    )

    async def evicted() -> bool:
        pod = await client.get(PODS, "short", namespace="default")
        return bool(pod["metadata"].get("deletionTimestamp"))

    await await_until(evicted, what="the pod with a 1 s toleration evicted")
    short_pod = await client.get(PODS, "short", namespace="default")
    assert any(
        c["type"] == "DisruptionTarget" and c["reason"] == "DeletionByTaintManager"
        for c in short_pod["status"]["conditions"]
    )
    patient = await client.get(PODS, "patient", namespace="default")
    assert not patient["metadata"].get("deletionTimestamp")
    assert any(
        c["type"] == "Ready" and c["status"] == "False" for c in patient["status"]["conditions"]
    )
    # The agent comes back: it posts Ready=True, and the taints go.
    back = node("quiet")
    await client.patch(NODES, "quiet", {"status": back["status"]}, subresource="status")
    await await_until(lambda: _has_taints(client, "quiet", set()), what="taints removed")


async def _has_taints(client: Client, name: str, want: set[tuple[str, str]]) -> bool:
    return await taints(client, name) == want
