"""Empty lists and maps are stored as upstream stores them: gone where Go's ``omitempty``
drops them, kept where Go always prints the field.

The table is the served OpenAPI schema itself: every list and map field reachable from each
built-in kind's root, at any depth, is emptied (``[]``, ``{}``, ``null``) on its own in an
otherwise bare object and must be absent after the write's canonicalization, unless it is
one of the fields upstream's Go types declare without ``omitempty`` (`ALWAYS_PRINTED`,
transcribed from k8s.io/api v0.36.3), which keep the value as sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from inplace.registry.canonical import canonicalize
from inplace.registry.kinds import REGISTRY, Kind
from inplace.registry.openapi import openapi_v3_document

#: (Go type, field) of the list and map fields without ``omitempty`` in upstream's types.
ALWAYS_PRINTED = {
    ("PodSpec", "containers"),
    ("NodeSelector", "nodeSelectorTerms"),
    ("ProjectedVolumeSource", "sources"),
    ("CephFSVolumeSource", "monitors"),
    ("CephFSPersistentVolumeSource", "monitors"),
    ("RBDVolumeSource", "monitors"),
    ("RBDPersistentVolumeSource", "monitors"),
    ("ContainerImage", "names"),
    ("PodExtendedResourceClaimStatus", "requestMappings"),
    ("TopologySelectorLabelRequirement", "values"),
    ("EndpointSlice", "endpoints"),
    ("EndpointSlice", "ports"),
    ("Endpoint", "addresses"),
    ("PodFailurePolicy", "rules"),
    ("PodFailurePolicyOnExitCodesRequirement", "values"),
    ("SuccessPolicy", "rules"),
    ("ClusterRole", "rules"),
    ("Role", "rules"),
    ("PolicyRule", "verbs"),
}
#: Left to the field manager, which reads ``managedFields: []`` as "clear them" and leaves
#: the field out when there is nothing to store (see test_field_management_* below).
LEFT_TO_THE_FIELD_MANAGER = {("ObjectMeta", "managedFields")}

BUILTIN = [k for k in REGISTRY.kinds if k.stored and k.model is not None]

# A path is a tuple of steps: ("f", name) a field, ("i",) a list's item, ("k",) a map's value.
Path = tuple[tuple[str, ...], ...]


def _target(prop: dict[str, Any]) -> str | None:
    """The component a property refers to, directly or through ``allOf``."""
    ref = prop.get("$ref")
    if ref is None and prop.get("allOf"):
        ref = prop["allOf"][0].get("$ref")
    return ref.rsplit("/", 1)[1] if ref else None


def list_and_map_fields(kind: Kind) -> Iterator[tuple[Path, str, str, str]]:
    """(path, Go type, field, "list" or "map") of every list and map field under `kind`."""
    schemas = openapi_v3_document(REGISTRY, kind.group, kind.version)["components"]["schemas"]
    root = next(
        name
        for name, c in schemas.items()
        if {"group": kind.group, "version": kind.version, "kind": kind.kind}
        in c.get("x-kubernetes-group-version-kind", [])
    )

    def walk(component: str, path: Path, seen: frozenset[str]) -> Iterator[Any]:
        if component in seen:
            return
        seen = seen | {component}
        go_type = component.rsplit(".", 1)[1]
        for name, prop in (schemas[component].get("properties") or {}).items():
            here = (*path, ("f", name))
            if prop.get("type") == "array":
                yield here, go_type, name, "list"
                item = _target(prop.get("items") or {})
                if item is not None:
                    yield from walk(item, (*here, ("i",)), seen)
            elif prop.get("type") == "object" and "additionalProperties" in prop:
                yield here, go_type, name, "map"
                value = _target(prop["additionalProperties"])
                if value is not None:
                    yield from walk(value, (*here, ("k",)), seen)
            else:
                child = _target(prop)
                if child is not None and "properties" in schemas.get(child, {}):
                    yield from walk(child, here, seen)

    yield from walk(root, (), frozenset())


def with_value(path: Path, leaf: Any) -> dict[str, Any]:
    value = leaf
    for step in reversed(path):
        if step[0] == "f":
            value = {step[1]: value}
        elif step[0] == "i":
            value = [value]
        else:
            value = {"key": value}
    assert isinstance(value, dict)
    return value


def parent_of(obj: dict[str, Any], path: Path) -> dict[str, Any]:
    node: Any = obj
    for step in path[:-1]:
        node = node[step[1]] if step[0] == "f" else node[0] if step[0] == "i" else node["key"]
    assert isinstance(node, dict)
    return node


def cases() -> Iterator[Any]:
    for kind in BUILTIN:
        for path, go_type, name, shape in list_and_map_fields(kind):
            dotted = ".".join(s[1] if s[0] == "f" else "[]" for s in path)
            yield pytest.param(kind, path, go_type, name, shape, id=f"{kind.kind}.{dotted}")


ALL_CASES = list(cases())


def test_the_table_covers_the_kinds() -> None:
    """Not vacuous: the Pod alone has well over a hundred such fields, and every field of
    `ALWAYS_PRINTED` is reached from some kind."""
    pods = [c for c in ALL_CASES if c.values[0].kind == "Pod"]
    assert len(pods) > 150
    reached = {(c.values[2], c.values[3]) for c in ALL_CASES}
    assert reached >= ALWAYS_PRINTED


@pytest.mark.parametrize(("kind", "path", "go_type", "name", "shape"), ALL_CASES)
def test_an_emptied_list_or_map_is_stored_as_upstream_stores_it(
    kind: Kind, path: Path, go_type: str, name: str, shape: str
) -> None:
    kept = (go_type, name) in ALWAYS_PRINTED | LEFT_TO_THE_FIELD_MANAGER
    empties: list[Any] = [[] if shape == "list" else {}, None]
    for empty in empties:
        obj = with_value(path, empty)
        canonicalize(kind, obj)
        parent = parent_of(obj, path)
        if kept:
            assert parent == {name: empty}, f"{go_type}.{name} is always printed"
        else:
            assert name not in parent, f"{go_type}.{name} is omitempty"


def test_what_is_not_empty_stays() -> None:
    pod_kind = REGISTRY.by_kind("", "Pod")
    assert pod_kind is not None
    pod: dict[str, Any] = {
        "metadata": {
            "name": "p",
            "labels": {"a": ""},
            "annotations": {},
            "finalizers": [],
            "ownerReferences": [],
            "managedFields": [],
        },
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "args": [""],
                    "command": [],
                    "env": [],
                    "resources": {"limits": {}, "requests": {"cpu": "0.5"}},
                    "securityContext": {},
                }
            ],
            "nodeSelector": {},
            "securityContext": {},
            "tolerations": [],
            "volumes": [{"name": "v", "emptyDir": {}}],
        },
        "status": {"conditions": [], "containerStatuses": [{"name": "c", "state": {}}]},
    }
    canonicalize(pod_kind, pod)
    assert pod == {
        "metadata": {"name": "p", "labels": {"a": ""}, "managedFields": []},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "args": [""],
                    "resources": {"requests": {"cpu": "500m"}},
                    "securityContext": {},
                }
            ],
            "securityContext": {},
            "volumes": [{"name": "v", "emptyDir": {}}],
        },
        "status": {"containerStatuses": [{"name": "c", "state": {}}]},
    }


def test_a_custom_resource_keeps_its_own_empty_values() -> None:
    """Upstream's unstructured objects keep ``[]`` and ``{}``; only the metadata, which
    upstream converts through ObjectMeta, loses them."""
    vpa_kind = REGISTRY.by_kind("autoscaling.k8s.io", "VerticalPodAutoscaler")
    assert vpa_kind is not None
    vpa: dict[str, Any] = {
        "metadata": {"name": "v", "labels": {}, "finalizers": [], "ownerReferences": []},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "resourcePolicy": {"containerPolicies": []},
            "recommenders": [],
        },
        "status": {"conditions": [], "recommendation": {"containerRecommendations": []}},
    }
    canonicalize(vpa_kind, vpa)
    assert vpa["metadata"] == {"name": "v"}
    assert vpa["spec"]["resourcePolicy"] == {"containerPolicies": []}
    assert vpa["spec"]["recommenders"] == []
    assert vpa["status"] == {"conditions": [], "recommendation": {"containerRecommendations": []}}
