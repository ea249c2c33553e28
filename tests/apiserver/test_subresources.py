"""pods/binding, pods/eviction against a PodDisruptionBudget, and scale, over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from tests.apiserver.support import PODS, make_api, pod
from tests.conftest import InProcessServer


async def test_binding_and_eviction_with_a_budget(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await api.call("POST", PODS, pod("e", labels={"app": "guarded"}))
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "e"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
        }
        assert (await api.call("POST", f"{PODS}/e/binding", binding))[0] == 201
        status, body = await api.call("POST", f"{PODS}/e/binding", binding)
        assert status == 409
        _, bound = await api.call("GET", f"{PODS}/e")
        assert bound["spec"]["nodeName"] == "n1"
        await api.call(
            "PATCH",
            f"{PODS}/e/status",
            {"status": {"phase": "Running"}},
            "application/merge-patch+json",
        )
        pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
        budget = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
        }
        assert (await api.call("POST", pdbs, budget))[0] == 201
        await api.call(
            "PATCH",
            f"{pdbs}/guard/status",
            {
                "status": {
                    "observedGeneration": 1,
                    "disruptionsAllowed": 0,
                    "currentHealthy": 1,
                    "desiredHealthy": 1,
                    "expectedPods": 1,
                }
            },
            "application/merge-patch+json",
        )
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "e"}}
        status, body = await api.call("POST", f"{PODS}/e/eviction", eviction)
        assert status == 429, body
        assert "disruption budget" in body["message"]
        await api.call(
            "PATCH",
            f"{pdbs}/guard/status",
            {"status": {"disruptionsAllowed": 1}},
            "application/merge-patch+json",
        )
        status, body = await api.call("POST", f"{PODS}/e/eviction", eviction)
        assert status == 201, body
        _, charged = await api.call("GET", f"{pdbs}/guard")
        assert charged["status"]["disruptionsAllowed"] == 0
        assert "e" in charged["status"]["disruptedPods"]


async def test_binding_preconditions_are_upstreams(apiserver: InProcessServer) -> None:
    """A Binding naming a uid or resourceVersion the pod no longer has is refused with 409
    and upstream's message; the pod stays unbound. The scheduler relies on it: a pod resized
    after its placement was decided is not bound with that decision."""
    api, session = await make_api(apiserver)
    async with session:
        _, created = await api.call("POST", PODS, pod("pre"))
        uid, version = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
        await api.call(
            "PATCH",
            f"{PODS}/pre",
            {"metadata": {"labels": {"changed": "yes"}}},
            "application/merge-patch+json",
        )

        def binding(**meta: str) -> dict[str, Any]:
            return {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "pre", **meta},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
            }

        status, body = await api.call("POST", f"{PODS}/pre/binding", binding(uid="other"))
        assert status == 409
        assert "Precondition failed: UID in precondition: other" in body["message"]
        status, body = await api.call(
            "POST", f"{PODS}/pre/binding", binding(uid=uid, resourceVersion=version)
        )
        assert status == 409
        assert (
            f"Precondition failed: ResourceVersion in precondition: {version}" in (body["message"])
        )
        _, current = await api.call("GET", f"{PODS}/pre")
        assert not current["spec"].get("nodeName")
        latest = current["metadata"]["resourceVersion"]
        status, _ = await api.call(
            "POST", f"{PODS}/pre/binding", binding(uid=uid, resourceVersion=latest)
        )
        assert status == 201
        _, bound = await api.call("GET", f"{PODS}/pre")
        assert bound["spec"]["nodeName"] == "n1"


async def test_binding_a_pod_deleted_meanwhile_is_not_found(
    apiserver: InProcessServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pod goes between the binding's read and its write: 404, as a pod that was never
    there, not a 500 (found by the chaos storm)."""
    api, session = await make_api(apiserver)
    async with session:
        await api.call("POST", PODS, pod("gone"))
        store = apiserver.server.store
        assert store is not None
        real_update = store.update

        async def deleted_first(key: str, value: Any, **kwargs: Any) -> Any:
            await store.delete(key)
            return await real_update(key, value, **kwargs)

        monkeypatch.setattr(store, "update", deleted_first)
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "gone"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
        }
        status, body = await api.call("POST", f"{PODS}/gone/binding", binding)
        assert status == 404, body
        assert body["message"] == 'pods "gone" not found'


async def test_scale_subresource(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        path = "/apis/apps/v1/namespaces/default/deployments"
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        }
        status, created = await api.call("POST", path, deployment)
        assert status == 201, created
        assert created["spec"]["replicas"] == 1
        status, scale = await api.call("GET", f"{path}/d/scale")
        assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
        status, scale = await api.call(
            "PATCH", f"{path}/d/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json"
        )
        assert status == 200 and scale["spec"]["replicas"] == 3
        _, after = await api.call("GET", f"{path}/d")
        assert after["spec"]["replicas"] == 3 and after["metadata"]["generation"] == 2
