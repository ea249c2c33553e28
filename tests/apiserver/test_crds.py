"""CustomResourceDefinitions against the in-process API server: a CRD serves its kind, with
upstream's validation, defaulting, pruning, subresources, tables, selectors, versions, apply
and cleanup."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from tests.apiserver.support import API, make_api
from tests.conftest import InProcessServer

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                "replicas": {"type": "integer", "default": 1},
                "selector": {"type": "string"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "port": {"x-kubernetes-int-or-string": True},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "phase": {"type": "string"},
            },
        },
    },
}


def widget_crd(**version_changes: Any) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": copy.deepcopy(WIDGET_SCHEMA)},
        "subresources": {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".spec.selector",
            },
        },
        "additionalPrinterColumns": [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
        "selectableFields": [{"jsonPath": ".spec.color"}],
    }
    version.update(version_changes)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "shortNames": ["wg"],
                "categories": ["all"],
            },
            "versions": [version],
        },
    }


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "labels": {"app": "w"}},
        "spec": {"size": 3, **spec},
    }


async def established(api: API, name: str) -> dict[str, Any]:
    for _ in range(200):
        code, crd = await api.call("GET", f"{CRDS}/{name}")
        assert code == 200, crd
        conditions = {c["type"]: c["status"] for c in crd.get("status", {}).get("conditions", [])}
        if conditions.get("Established") == "True":
            return crd
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} never established: {crd}")


async def create_widgets_crd(api: API, crd: dict[str, Any] | None = None) -> dict[str, Any]:
    code, body = await api.call("POST", CRDS, crd or widget_crd())
    assert code == 201, body
    return await established(api, body["metadata"]["name"])


async def test_a_crd_serves_its_kind_with_discovery_and_status(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        crd = await create_widgets_crd(api)
        status = crd["status"]
        assert status["acceptedNames"]["kind"] == "Widget"
        assert status["storedVersions"] == ["v1"]
        conditions = {c["type"]: c for c in status["conditions"]}
        assert conditions["NamesAccepted"]["reason"] == "NoConflicts"
        assert conditions["Established"]["reason"] == "InitialNamesAccepted"
        assert crd["spec"]["names"]["listKind"] == "WidgetList"
        assert crd["spec"]["conversion"] == {"strategy": "None"}

        code, listing = await api.call("GET", "/apis/example.com/v1")
        assert code == 200
        resources = {r["name"]: r for r in listing["resources"]}
        assert resources["widgets"]["kind"] == "Widget"
        assert resources["widgets"]["shortNames"] == ["wg"]
        assert resources["widgets"]["singularName"] == "widget"
        assert "widgets/status" in resources and "widgets/scale" in resources
        code, groups = await api.call("GET", "/apis")
        assert "example.com" in [g["name"] for g in groups["groups"]]
        code, index = await api.call("GET", "/openapi/v3")
        assert "apis/example.com/v1" in index["paths"]
        code, document = await api.call("GET", "/openapi/v3/apis/example.com/v1")
        assert code == 200
        schema = document["components"]["schemas"]["com.example.v1.Widget"]
        assert schema["properties"]["spec"]["properties"]["size"]["type"] == "integer"
        code, v2 = await api.call("GET", "/openapi/v2")
        assert "com.example.v1.Widget" in v2["definitions"]


async def test_validation_defaulting_and_pruning(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await create_widgets_crd(api)
        body = widget("a", unknown="x", extra={"anything": {"goes": 1}}, port="http")
        code, created = await api.call("POST", WIDGETS, body)
        assert code == 201, created
        assert created["spec"]["color"] == "red"  # defaulted
        assert created["spec"]["replicas"] == 1
        assert "unknown" not in created["spec"]  # pruned
        assert created["spec"]["extra"] == {"anything": {"goes": 1}}  # preserved
        assert created["metadata"]["generation"] == 1

        code, error = await api.call("POST", WIDGETS, widget("b", size=11, color="green"))
        assert code == 422, error
        assert error["message"] == (
            'Widget.example.com "b" is invalid: [spec.size: Invalid value: 11: spec.size in body '
            'should be less than or equal to 10, spec.color: Unsupported value: "green": '
            'supported values: "red", "blue"]'
        )
        code, error = await api.call("POST", WIDGETS, widget("c", size="big"))
        assert code == 422
        assert "spec.size in body must be of type integer" in error["message"]
        no_size = widget("d")
        del no_size["spec"]["size"]
        code, error = await api.call("POST", WIDGETS, no_size)
        assert code == 422
        assert error["message"] == 'Widget.example.com "d" is invalid: spec.size: Required value'
        code, error = await api.call(
            "POST", WIDGETS + "?fieldValidation=Strict", widget("e", unknown=1)
        )
        assert code == 400
        assert 'unknown field "spec.unknown"' in error["message"]


async def test_status_and_scale_subresources(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await create_widgets_crd(api)
        code, created = await api.call("POST", WIDGETS, widget("a", selector="app=w"))
        assert code == 201
        # The main resource ignores status; /status ignores spec; generation counts spec.
        changed = copy.deepcopy(created)
        changed["status"] = {"phase": "Ignored"}
        changed["spec"]["size"] = 4
        code, updated = await api.call("PUT", f"{WIDGETS}/a", changed)
        assert code == 200, updated
        assert "status" not in updated and updated["metadata"]["generation"] == 2
        updated["status"] = {"phase": "Ready", "replicas": 1}
        updated["spec"]["size"] = 9
        code, written = await api.call("PUT", f"{WIDGETS}/a/status", updated)
        assert code == 200, written
        assert written["status"]["phase"] == "Ready" and written["spec"]["size"] == 4
        assert written["metadata"]["generation"] == 2

        code, scale = await api.call("GET", f"{WIDGETS}/a/scale")
        assert code == 200, scale
        assert scale["spec"] == {"replicas": 1}
        assert scale["status"] == {"replicas": 1, "selector": "app=w"}
        code, scale = await api.call(
            "PATCH",
            f"{WIDGETS}/a/scale",
            {"spec": {"replicas": 5}},
            content_type="application/merge-patch+json",
        )
        assert code == 200, scale
        code, after = await api.call("GET", f"{WIDGETS}/a")
        assert after["spec"]["replicas"] == 5


async def test_printer_columns_and_selectors(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await create_widgets_crd(api)
        await api.call("POST", WIDGETS, widget("a", color="blue"))
        await api.call("POST", WIDGETS, widget("b"))
        code, table = await api.call(
            "GET", WIDGETS, Accept="application/json;as=Table;v=v1;g=meta.k8s.io"
        )
        assert code == 200, table
        assert [c["name"] for c in table["columnDefinitions"]] == [
            "Name",
            "Size",
            "Color",
            "Phase",
            "Age",
        ]
        rows = {r["cells"][0]: r["cells"] for r in table["rows"]}
        assert rows["a"][1:4] == [3, "blue", None]
        code, listing = await api.call("GET", WIDGETS + "?fieldSelector=spec.color%3Dblue")
        assert code == 200, listing
        assert [i["metadata"]["name"] for i in listing["items"]] == ["a"]
        code, listing = await api.call("GET", WIDGETS + "?fieldSelector=metadata.name%3Db")
        assert [i["metadata"]["name"] for i in listing["items"]] == ["b"]
        code, listing = await api.call("GET", WIDGETS + "?labelSelector=app%3Dw")
        assert len(listing["items"]) == 2


async def test_invalid_crds_are_refused_with_upstreams_messages(
    apiserver: InProcessServer,
) -> None:
    api, session = await make_api(apiserver)
    async with session:
        crd = widget_crd()
        crd["metadata"]["name"] = "gadgets.example.com"
        crd["spec"]["versions"][0]["storage"] = False
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
            "bad"
        ] = {"properties": {"x": {"type": "string"}}, "additionalProperties": {}}
        code, error = await api.call("POST", CRDS, crd)
        assert code == 422, error
        message = error["message"]
        assert message.startswith(
            'CustomResourceDefinition.apiextensions.k8s.io "gadgets.example.com" is invalid: '
        )
        assert (
            'metadata.name: Invalid value: "gadgets.example.com": '
            'must be spec.names.plural+"."+spec.group' in message
        )
        assert "must have exactly one version marked as storage version" in message
        schema = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[bad]"
        assert (
            f"{schema}.type: Required value: must not be empty for specified object fields"
            in message
        )
        assert (
            f"{schema}.additionalProperties: Forbidden: additionalProperties and properties are "
            "mutual exclusive"
        ) in message

        builtin = widget_crd()
        builtin["metadata"]["name"] = "widgets.apps.k8s.io"
        builtin["spec"]["group"] = "rbac.authorization.k8s.io"
        builtin["metadata"]["name"] = "widgets.rbac.authorization.k8s.io"
        code, error = await api.call("POST", CRDS, builtin)
        assert code == 422
        assert "is a group built into this API server" in error["message"]


async def test_deleting_a_crd_deletes_its_objects(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await create_widgets_crd(api)
        await api.call("POST", WIDGETS, widget("a"))
        held = widget("held")
        held["metadata"]["finalizers"] = ["example.com/hold"]
        await api.call("POST", WIDGETS, held)
        code, deleting = await api.call("DELETE", f"{CRDS}/widgets.example.com")
        assert code == 200, deleting
        assert "customresourcecleanup.apiextensions.k8s.io" in deleting["metadata"]["finalizers"]
        for _ in range(200):
            code, listing = await api.call("GET", WIDGETS)
            names = [i["metadata"]["name"] for i in listing["items"]]
            code, crd = await api.call("GET", f"{CRDS}/widgets.example.com")
            conditions = {c["type"]: c for c in crd["status"]["conditions"]}
            if names == ["held"] and "Terminating" in conditions:
                break
            await asyncio.sleep(0.05)
        assert names == ["held"]
        assert conditions["Terminating"]["status"] == "True"
        assert conditions["Terminating"]["reason"] == "InstanceDeletionInProgress"
        code, refused = await api.call("POST", WIDGETS, widget("late"))
        assert code == 405
        assert refused["message"] == (
            "create not allowed while custom resource definition is terminating"
        )
        code, obj = await api.call("GET", f"{WIDGETS}/held")
        obj["metadata"]["finalizers"] = []
        code, _ = await api.call("PUT", f"{WIDGETS}/held", obj)
        assert code == 200
        for _ in range(200):
            code, _ = await api.call("GET", f"{CRDS}/widgets.example.com")
            if code == 404:
                break
            await asyncio.sleep(0.05)
        assert code == 404
        code, _ = await api.call("GET", WIDGETS)
        assert code == 404
        code, listing = await api.call("GET", "/apis")
        assert "example.com" not in [g["name"] for g in listing["groups"]]


async def test_x_kubernetes_validations_are_enforced(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        crd = widget_crd()
        spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec_schema["x-kubernetes-validations"] = [{"rule": "self.size <="}]
        code, error = await api.call("POST", CRDS, crd)
        assert code == 422
        assert (
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"
            '.rule: Invalid value: "self.size <=": compilation failed' in error["message"]
        )
        spec_schema["x-kubernetes-validations"] = [
            {"rule": "self.replicas <= self.size", "message": "more replicas than size"},
            {"rule": "self.color == oldSelf.color", "message": "color is immutable"},
        ]
        await create_widgets_crd(api, crd)
        code, error = await api.call("POST", WIDGETS, widget("a", replicas=5))
        assert code == 422
        assert error["message"] == (
            'Widget.example.com "a" is invalid: spec: Invalid value: "object": '
            "more replicas than size"
        )
        code, created = await api.call("POST", WIDGETS, widget("a"))
        assert code == 201, created
        created["spec"]["color"] = "blue"
        code, error = await api.call("PUT", f"{WIDGETS}/a", created)
        assert code == 422
        assert 'spec: Invalid value: "object": color is immutable' in error["message"]


async def test_aggregated_discovery_lists_the_custom_resource(apiserver: InProcessServer) -> None:
    api, session = await make_api(apiserver)
    async with session:
        await create_widgets_crd(api)
        accept = (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
        )
        async with session.get(
            apiserver.url + "/apis", headers={**apiserver.headers(), "Accept": accept}
        ) as response:
            assert response.headers["Content-Type"] == (
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            )
            document = await response.json(content_type=None)
        groups = {g["metadata"].get("name"): g for g in document["items"]}
        (version,) = groups["example.com"]["versions"]
        (resource,) = version["resources"]
        assert resource["resource"] == "widgets" and resource["scope"] == "Namespaced"
        assert resource["responseKind"] == {
            "group": "example.com",
            "version": "v1",
            "kind": "Widget",
        }
        assert [s["subresource"] for s in resource["subresources"]] == ["status", "scale"]
        async with session.get(
            apiserver.url + "/api", headers={**apiserver.headers(), "Accept": accept}
        ) as response:
            core = await response.json(content_type=None)
        assert [g["metadata"].get("name") for g in core["items"]] == [None]
