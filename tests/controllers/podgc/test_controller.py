"""The pod garbage collector against the API server: a pod bound to a node that does not
exist is marked Failed (``DeletionByPodGC``) and force-deleted once the node has been missing
for the quarantine; pods on a node that exists are left alone."""

from __future__ import annotations

from typing import Any

from inplace.client import NODES, PODS, APINotFoundError, Client
from tests.controllers.conftest import Harness, set_phase
from tests.controllers.nodelifecycle.test_controller import bound_pod, node
from tests.poll import await_until

FAST = {"pod_gc_check_period": 0.2, "pod_gc_quarantine": 0.5}


async def gone(client: Client, name: str) -> bool:
    try:
        await client.get(PODS, name, namespace="default")
    except APINotFoundError:
        return True
    return False


async def test_pods_bound_to_a_node_that_is_gone_are_failed_and_force_deleted(
    harness: Harness,
) -> None:
    client = harness.client
    await client.create(NODES, node("here"))
    stays = await client.create(PODS, bound_pod("stays", "here", None))
    orphan = await client.create(PODS, bound_pod("orphan", "nowhere", None))
    kept = bound_pod("kept", "nowhere", None)
    kept["metadata"]["finalizers"] = ["e2e.inplace.dev/hold"]  # to read what PodGC wrote
    kept = await client.create(PODS, kept)
    for pod in (stays, orphan, kept):
        await set_phase(client, pod, "Running")
    # Deleted as a user would: with its grace period, which no node agent will ever end.
    await client.delete(PODS, "orphan", namespace="default")
    terminating = await client.get(PODS, "orphan", namespace="default")
    assert terminating["metadata"]["deletionTimestamp"]

    await harness.start("podgc", **FAST)
    await await_until(lambda: gone(client, "orphan"), what="the orphaned pod force-deleted")

    async def kept_deleted() -> dict[str, Any] | None:
        pod = await client.get(PODS, "kept", namespace="default")
        return pod if pod["metadata"].get("deletionTimestamp") else None

    held = await await_until(kept_deleted, what="the held orphan deleted")
    assert held["metadata"]["deletionGracePeriodSeconds"] == 0
    assert held["status"]["phase"] == "Failed"
    target = [c for c in held["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert [(c["status"], c["reason"], c["message"]) for c in target] == [
        ("True", "DeletionByPodGC", "PodGC: node no longer exists")
    ]
    untouched = await client.get(PODS, "stays", namespace="default")
    assert untouched["status"]["phase"] == "Running"
    assert not untouched["metadata"].get("deletionTimestamp")
    await client.patch(
        PODS, "kept", {"metadata": {"finalizers": None}}, namespace="default", patch_type="merge"
    )
    await await_until(lambda: gone(client, "kept"), what="the held pod gone")
