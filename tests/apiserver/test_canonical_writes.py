"""Quantities come back as upstream writes them, whichever endpoint wrote them: the pod of
issue 12 through create, a status write, the resize subresource, a node's status."""

from __future__ import annotations

from typing import Any

from tests.apiserver.support import PODS, make_api, pod
from tests.conftest import InProcessServer

ISSUE = {
    "requests": {"cpu": "0.5", "memory": "1.5Gi"},
    "limits": {"cpu": "1000m", "memory": "2048Mi"},
}
CANONICAL = {
    "requests": {"cpu": "500m", "memory": "1536Mi"},
    "limits": {"cpu": "1", "memory": "2Gi"},
}


def issue_pod(name: str) -> dict[str, Any]:
    body = pod(name)
    body["spec"]["containers"][0]["resources"] = ISSUE
    return body


async def test_every_write_stores_canonical_quantities(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, created = await api.call("POST", PODS, issue_pod("q"))
        assert status == 201
        assert created["spec"]["containers"][0]["resources"] == CANONICAL
        _, read = await api.call("GET", f"{PODS}/q")
        assert read["spec"]["containers"][0]["resources"] == CANONICAL

        status_patch = {
            "status": {
                "containerStatuses": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "state": {"waiting": {}},
                        "allocatedResources": {"cpu": "0.5", "memory": "1536Ki"},
                        "resources": ISSUE,
                    }
                ]
            }
        }
        status, patched = await api.call(
            "PATCH", f"{PODS}/q/status", status_patch, "application/merge-patch+json"
        )
        assert status == 200, patched
        written = patched["status"]["containerStatuses"][0]
        assert written["allocatedResources"] == {"cpu": "500m", "memory": "1536Ki"}
        assert written["resources"] == CANONICAL

        resize = {
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "resources": {
                            "requests": {"cpu": "0.75", "memory": "1.5Gi"},
                            "limits": {"cpu": "1.0", "memory": "2048Mi"},
                        },
                    }
                ]
            }
        }
        status, resized = await api.call(
            "PATCH", f"{PODS}/q/resize", resize, "application/strategic-merge-patch+json"
        )
        assert status == 200, resized
        assert resized["spec"]["containers"][0]["resources"] == {
            "requests": {"cpu": "750m", "memory": "1536Mi"},
            "limits": {"cpu": "1", "memory": "2Gi"},
        }
        # The same values written again are no change: the generation stays.
        generation = resized["metadata"]["generation"]
        status, again = await api.call(
            "PATCH", f"{PODS}/q/resize", resize, "application/strategic-merge-patch+json"
        )
        assert status == 200 and again["metadata"]["generation"] == generation


async def test_node_capacity_is_canonical(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        node = {
            "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "2000m", "memory": "4096Mi", "pods": 110}},
        }
        status, created = await api.call("POST", "/api/v1/nodes", node)
        assert status == 201
        assert created["status"]["capacity"] == {"cpu": "2", "memory": "4Gi", "pods": "110"}
        assert created["status"]["allocatable"] == created["status"]["capacity"]


async def test_a_bad_quantity_is_still_reported_as_sent(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        body = pod("bad")
        body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
        status, answer = await api.call("POST", PODS, body)
        assert status == 422
        assert 'Invalid value: "lots"' in answer["message"]


async def test_status_writes_keep_what_they_leave_out(apiserver: InProcessServer) -> None:
    """Upstream's pod status strategy: a writer that does not know ``observedGeneration``
    cannot erase another's; owner references and the QoS class stay."""
    api, session = await make_api(apiserver)
    async with session:
        body = issue_pod("s")
        body["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u-owner"}
        ]
        assert (await api.call("POST", PODS, body))[0] == 201
        first = {
            "status": {
                "observedGeneration": 1,
                "conditions": [
                    {"type": "PodResizePending", "status": "True", "observedGeneration": 1},
                    {"type": "Ready", "status": "False", "observedGeneration": 1},
                ],
            }
        }
        status, _ = await api.call(
            "PATCH", f"{PODS}/s/status", first, "application/merge-patch+json"
        )
        assert status == 200
        _, current = await api.call("GET", f"{PODS}/s")
        replaced = dict(current)
        replaced["status"] = {
            "phase": "Running",
            "conditions": [
                {"type": "PodResizePending", "status": "True"},
                {"type": "Ready", "status": "True", "observedGeneration": 2},
            ],
        }
        replaced["metadata"] = {**current["metadata"], "ownerReferences": []}
        status, written = await api.call("PUT", f"{PODS}/s/status", replaced)
        assert status == 200, written
        assert written["status"]["observedGeneration"] == 1
        assert written["status"]["qosClass"] == "Burstable"
        assert [c.get("observedGeneration") for c in written["status"]["conditions"]] == [1, 2]
        assert written["metadata"]["ownerReferences"] == body["metadata"]["ownerReferences"]


async def test_a_gated_pod_says_so(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        body = pod("gated")
        body["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
        status, created = await api.call("POST", PODS, body)
        assert status == 201
        [condition] = created["status"]["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "PodScheduled",
            "False",
            "SchedulingGated",
        )
        assert condition["message"] == "Scheduling is blocked due to non-empty scheduling gates"
