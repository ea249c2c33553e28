"""Server-side apply and managedFields over real HTTP, on an in-process API server."""

from __future__ import annotations

from typing import Any

import yaml

from tests.apiserver.support import API, PODS, make_api, pod
from tests.conftest import InProcessServer

APPLY = "application/apply-patch+yaml"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def deployment(replicas: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            },
            **extra,
        },
    }


def managers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for entry in obj["metadata"].get("managedFields", []):
        name = entry["manager"]
        if entry.get("subresource"):
            name += "/" + entry["subresource"]
        out[name] = entry
    return out


async def apply(
    api: API, path: str, body: Any, manager: str | None = "mgr", *query: str
) -> tuple[int, Any]:
    params = [f"fieldManager={manager}"] if manager else []
    params += list(query)
    suffix = "?" + "&".join(params) if params else ""
    return await api.call("PATCH", path + suffix, body, APPLY)


async def test_apply_creates_then_updates_and_a_repeat_writes_nothing(
    apiserver: InProcessServer,
) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, created = await apply(api, f"{DEPLOYMENTS}/web", deployment())
        assert status == 201, created
        entry = managers(created)["mgr"]
        assert entry["operation"] == "Apply" and entry["apiVersion"] == "apps/v1"
        assert entry["fieldsV1"]["f:spec"]["f:replicas"] == {}
        assert created["spec"]["strategy"]["type"] == "RollingUpdate"  # defaulted
        status, again = await apply(api, f"{DEPLOYMENTS}/web", deployment())
        assert status == 200
        assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        status, scaled = await apply(api, f"{DEPLOYMENTS}/web", deployment(replicas=3))
        assert status == 200 and scaled["spec"]["replicas"] == 3
        assert scaled["metadata"]["generation"] == 2


async def test_a_conflict_is_409_naming_manager_and_field_and_force_takes_it(
    apiserver: InProcessServer,
) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await apply(api, f"{DEPLOYMENTS}/web", deployment(replicas=2), "first")
        status, body = await apply(api, f"{DEPLOYMENTS}/web", deployment(replicas=5), "second")
        assert status == 409
        assert body["reason"] == "Conflict"
        assert (
            body["message"] == 'Apply failed with 1 conflict: conflict with "first": .spec.replicas'
        )
        assert body["details"]["causes"] == [
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "first"',
                "field": ".spec.replicas",
            }
        ]
        status, forced = await apply(
            api, f"{DEPLOYMENTS}/web", deployment(replicas=5), "second", "force=true"
        )
        assert status == 200 and forced["spec"]["replicas"] == 5
        assert "f:replicas" in managers(forced)["second"]["fieldsV1"]["f:spec"]
        assert "f:replicas" not in managers(forced)["first"]["fieldsV1"]["f:spec"]


async def test_write_options_are_checked_as_upstream(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, body = await apply(api, f"{DEPLOYMENTS}/web", deployment(), None)
        assert status == 422
        assert body["message"] == (
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
            "required for apply patch"
        )
        assert body["details"]["causes"][0]["field"] == "fieldManager"
        await api.call("POST", PODS, pod("p"))
        status, body = await api.call(
            "PATCH", f"{PODS}/p?force=true", {"metadata": {}}, "application/merge-patch+json"
        )
        assert status == 422 and "force: Forbidden" in body["message"]
        status, body = await api.call("POST", f"{PODS}?fieldManager=" + "x" * 129, pod("q"))
        assert status == 422
        assert body["message"].startswith('CreateOptions.meta.k8s.io "" is invalid: fieldManager')
        status, body = await api.call("PATCH", f"{PODS}/p?fieldManager=m&force=maybe", {}, APPLY)
        assert status == 400


async def test_unknown_fields_and_bad_objects_are_refused(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        for validation in ("Strict", "Ignore"):
            bad = deployment()
            bad["spec"]["replicaz"] = 1
            status, body = await apply(
                api, f"{DEPLOYMENTS}/web", bad, "mgr", f"fieldValidation={validation}"
            )
            assert status == 422, body
            assert body["message"] == (
                "failed to create typed patch object (/web; apps/v1, Kind=Deployment): "
                ".spec.replicaz: field not declared in schema"
            )
            assert body["details"]["causes"][0]["field"] == "spec.replicaz"
        status, body = await apply(api, f"{DEPLOYMENTS}/other", deployment())
        assert status == 400
        assert (
            body["message"]
            == "the name of the object (web) does not match the name on the URL (other)"
        )
        status, body = await apply(api, f"{DEPLOYMENTS}/web", {**deployment(), "kind": "Pod"})
        assert status == 400 and body["message"] == "invalid object type: apps/v1, Kind=Pod"
        with_uid = deployment()
        with_uid["metadata"]["uid"] = "abc"
        status, body = await apply(api, f"{DEPLOYMENTS}/web", with_uid)
        assert status == 409 and "uid mismatch" in body["message"]
        status, _ = await api.call("GET", f"{DEPLOYMENTS}/web")
        assert status == 404


async def test_a_dry_run_apply_writes_nothing(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, created = await apply(api, f"{DEPLOYMENTS}/web", deployment())
        status, dry = await apply(
            api, f"{DEPLOYMENTS}/web", deployment(replicas=7), "mgr", "dryRun=All"
        )
        assert status == 200 and dry["spec"]["replicas"] == 7
        status, live = await api.call("GET", f"{DEPLOYMENTS}/web")
        assert live["spec"]["replicas"] == 2
        assert live["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_a_yaml_body_is_read_as_upstream_reads_it(apiserver: InProcessServer) -> None:
    _, session = await make_api(apiserver)
    async with session:
        text = yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "y", "annotations": {"when": "PLACEHOLDER"}},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            }
        ).replace("PLACEHOLDER", "2026-01-01T00:00:00Z")
        async with session.patch(
            f"{apiserver.url}{PODS}/y?fieldManager=yaml",
            data=text.encode(),
            headers={**apiserver.headers(), "Content-Type": APPLY},
        ) as response:
            assert response.status == 201, await response.text()
            created = await response.json()
        assert created["metadata"]["annotations"]["when"] == "2026-01-01T00:00:00Z"


async def test_every_write_keeps_managed_fields(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        status, created = await api.call("POST", f"{PODS}?fieldManager=creator", pod("p"))
        assert status == 201
        assert set(managers(created)) == {"creator"}
        assert managers(created)["creator"]["operation"] == "Update"
        labelled = {"metadata": {"labels": {"merge": "1"}}}
        _, merged = await api.call(
            "PATCH", f"{PODS}/p?fieldManager=merger", labelled, "application/merge-patch+json"
        )
        _, strategic = await api.call(
            "PATCH",
            f"{PODS}/p",
            {"metadata": {"labels": {"smp": "1"}}},
            "application/strategic-merge-patch+json",
            **{"User-Agent": "my-controller/1.2 (linux)"},
        )
        _, patched = await api.call(
            "PATCH",
            f"{PODS}/p?fieldManager=jsonpatcher",
            [{"op": "add", "path": "/metadata/labels/json", "value": "1"}],
            "application/json-patch+json",
        )
        updated = dict(patched)
        updated["metadata"] = {**patched["metadata"], "annotations": {"put": "1"}}
        status, put = await api.call("PUT", f"{PODS}/p?fieldManager=putter", updated)
        assert status == 200
        status_patch = {"status": {"conditions": [{"type": "Custom", "status": "True"}]}}
        _, with_status = await api.call(
            "PATCH",
            f"{PODS}/p/status?fieldManager=agent",
            status_patch,
            "application/strategic-merge-patch+json",
        )
        resize = {
            "spec": {"containers": [{"name": "main", "resources": {"limits": {"cpu": "300m"}}}]}
        }
        status, resized = await api.call(
            "PATCH",
            f"{PODS}/p/resize?fieldManager=resizer",
            resize,
            "application/strategic-merge-patch+json",
        )
        assert status == 200, resized
        found = managers(resized)
        assert set(found) == {
            "creator",
            "merger",
            "my-controller",
            "jsonpatcher",
            "putter",
            "agent/status",
            "resizer/resize",
        }
        assert found["merger"]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:merge": {}}}}
        assert found["my-controller"]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:smp": {}}}}
        assert found["putter"]["fieldsV1"] == {
            "f:metadata": {"f:annotations": {".": {}, "f:put": {}}}
        }
        assert "f:conditions" in found["agent/status"]["fieldsV1"]["f:status"]
        assert found["resizer/resize"]["fieldsV1"] == {
            "f:spec": {
                "f:containers": {'k:{"name":"main"}': {"f:resources": {"f:limits": {"f:cpu": {}}}}}
            }
        }
        # The creator no longer owns the limit the resize changed.
        creator = found["creator"]["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"main"}']
        assert "f:cpu" not in creator["f:resources"]["f:limits"]
        del with_status, strategic, merged, put


async def test_apply_to_status_and_to_scale(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await apply(api, f"{DEPLOYMENTS}/web", deployment(replicas=2), "kubectl")
        status_config = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "status": {"replicas": 2, "observedGeneration": 1},
        }
        status, body = await apply(api, f"{DEPLOYMENTS}/web/status", status_config, "controller")
        assert status == 200, body
        entry = managers(body)["controller/status"]
        assert entry["operation"] == "Apply"
        assert set(entry["fieldsV1"]["f:status"]) == {"f:replicas", "f:observedGeneration"}
        status, scale = await api.call(
            "PATCH",
            f"{DEPLOYMENTS}/web/scale?fieldManager=scaler",
            {"spec": {"replicas": 4}},
            "application/merge-patch+json",
        )
        assert status == 200 and scale["spec"]["replicas"] == 4
        _, live = await api.call("GET", f"{DEPLOYMENTS}/web")
        found = managers(live)
        assert found["scaler/scale"]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
        assert found["scaler/scale"]["apiVersion"] == "apps/v1"
        assert "f:replicas" not in found["kubectl"]["fieldsV1"]["f:spec"]
        # The applier asking for its replicas back conflicts with the scaler.
        status, body = await apply(api, f"{DEPLOYMENTS}/web", deployment(replicas=2), "kubectl")
        assert status == 409
        assert body["message"] == (
            'Apply failed with 1 conflict: conflict with "scaler" with subresource "scale" '
            "using apps/v1: .spec.replicas"
        )
