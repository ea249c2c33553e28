"""Objects walked by their merge types: field sets, comparisons, merges, removals, checks.

The rules were checked against structured-merge-diff's own tables; these cases pin them on
the real Kubernetes types the server uses.
"""

from __future__ import annotations

from typing import Any

import pytest

from inplace.registry import fieldpath as fp
from inplace.registry import typed
from inplace.registry.fieldpath import set_of
from inplace.registry.fieldschema import DEDUCED, Atom, named_atom
from inplace.registry.typed import MISSING, TypedError

POD = named_atom("io.k8s.api.core.v1.Pod")
DEPLOYMENT = named_atom("io.k8s.api.apps.v1.Deployment")
SPEC = ("f:spec",)
CONTAINERS = ("f:spec", "f:containers")
MAIN = (*CONTAINERS, 'k:{"name":"main"}')


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def test_field_set_of_a_pod() -> None:
    obj = pod(
        containers=[
            {
                "name": "main",
                "image": "busybox",
                "command": ["sleep", "1d"],
                "ports": [{"containerPort": 80}],
                "resources": {},
            }
        ],
        nodeSelector={"disk": "ssd"},
        tolerations=[{"key": "k"}],
    )
    obj["metadata"]["labels"] = {"app": "web"}
    assert typed.field_set(obj, POD) == set_of(
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata", "f:name"),
        ("f:metadata", "f:labels", "f:app"),
        MAIN,
        (*MAIN, "f:name"),
        (*MAIN, "f:image"),
        (*MAIN, "f:command"),  # an atomic list is one field
        (*MAIN, "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}'),  # the key's default
        (*MAIN, "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}', "f:containerPort"),
        (*MAIN, "f:resources"),  # an empty map is a member
        ("f:spec", "f:nodeSelector"),  # mapType=atomic
        ("f:spec", "f:tolerations"),
    )


def test_duplicated_items_are_members_but_not_walked() -> None:
    obj = pod(containers=[{"name": "a", "image": "x"}, {"name": "a", "image": "y"}])
    assert typed.field_set(obj, POD)["f:spec"] == {"f:containers": {'k:{"name":"a"}': {}}}


@pytest.mark.parametrize(
    ("lhs", "rhs", "removed", "modified", "added"),
    [
        # A label added: the label, and the labels map it created.
        (
            {"metadata": {"name": "p"}},
            {"metadata": {"name": "p", "labels": {"a": "1"}}},
            [],
            [],
            [("f:metadata", "f:labels"), ("f:metadata", "f:labels", "f:a")],
        ),
        # An image changed; an atomic list replaced is one modified field.
        (
            pod(containers=[{"name": "main", "image": "a", "args": ["1"]}]),
            pod(containers=[{"name": "main", "image": "b", "args": ["2", "3"]}]),
            [],
            [(*MAIN, "f:image"), (*MAIN, "f:args")],
            [],
        ),
        # An item removed goes with its fields.
        (
            pod(containers=[{"name": "main", "image": "a"}, {"name": "side", "image": "s"}]),
            pod(containers=[{"name": "main", "image": "a"}]),
            [
                (*CONTAINERS, 'k:{"name":"side"}'),
                (*CONTAINERS, 'k:{"name":"side"}', "f:name"),
                (*CONTAINERS, 'k:{"name":"side"}', "f:image"),
                # Go always prints a container's resources, so upstream sees them go too.
                (*CONTAINERS, 'k:{"name":"side"}', "f:resources"),
            ],
            [],
            [],
        ),
        # {} and null differ, as one leaf.
        (pod(nodeSelector=None), pod(nodeSelector={}), [], [("f:spec", "f:nodeSelector")], []),
        # A map that became a string: the map's fields went, the field changed.
        (
            {"spec": {"x": {"a": 1}}},
            {"spec": {"x": "s"}},
            [("f:spec", "f:x", "f:a")],
            [("f:spec", "f:x")],
            [],
        ),
    ],
)
def test_compare(
    lhs: dict[str, Any],
    rhs: dict[str, Any],
    removed: list[fp.Path],
    modified: list[fp.Path],
    added: list[fp.Path],
) -> None:
    atom = POD if "x" not in (rhs.get("spec") or {}) else DEDUCED
    result = typed.compare(lhs, rhs, atom)
    assert (result.removed, result.modified, result.added) == (
        set_of(*removed),
        set_of(*modified),
        set_of(*added),
    )
    reverse = typed.compare(rhs, lhs, atom)
    assert (reverse.removed, reverse.modified, reverse.added) == (
        result.added,
        result.modified,
        result.removed,
    )


def names(obj: Any) -> list[str]:
    return [c["name"] for c in obj["spec"]["containers"]]


@pytest.mark.parametrize(
    ("live", "applied", "order"),
    [
        (["a", "b", "c"], ["b", "d"], ["a", "b", "c", "d"]),
        (["a", "b", "c"], ["c", "a"], ["b", "c", "a"]),
        (["a", "b", "c"], ["x", "b"], ["a", "x", "b", "c"]),
        (["a"], ["x", "a", "y"], ["x", "a", "y"]),
        ([], ["a", "b"], ["a", "b"]),
    ],
)
def test_merge_keeps_upstream_item_order(
    live: list[str], applied: list[str], order: list[str]
) -> None:
    lhs = pod(containers=[{"name": n, "image": "live"} for n in live])
    rhs = pod(containers=[{"name": n, "image": "applied"} for n in applied])
    merged = typed.merge(lhs, rhs, POD)
    assert names(merged) == order
    images = {c["name"]: c["image"] for c in merged["spec"]["containers"]}
    assert all(images[n] == "applied" for n in applied)


def test_merge_replaces_atomic_values_and_merges_granular_ones() -> None:
    live = pod(
        containers=[
            {"name": "main", "image": "a", "command": ["x", "y"], "ports": [{"containerPort": 1}]}
        ],
        nodeSelector={"a": "1"},
    )
    live["metadata"]["finalizers"] = ["f1"]
    live["metadata"]["labels"] = {"a": "1"}
    applied = pod(
        containers=[{"name": "main", "command": ["z"], "ports": [{"containerPort": 2}]}],
    )
    applied["metadata"]["finalizers"] = ["f2"]
    applied["metadata"]["labels"] = {"b": "2"}
    applied["spec"]["nodeSelector"] = {"b": "2"}
    merged = typed.merge(live, applied, POD)
    main = merged["spec"]["containers"][0]
    assert main["image"] == "a" and main["command"] == ["z"]
    assert main["ports"] == [{"containerPort": 1}, {"containerPort": 2}]
    assert merged["metadata"]["finalizers"] == ["f1", "f2"]
    assert merged["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert merged["spec"]["nodeSelector"] == {"b": "2"}  # mapType=atomic
    selector = {"matchLabels": {"a": "1"}, "matchExpressions": []}
    deployment = {"spec": {"selector": selector}}
    replaced = typed.merge(
        deployment, {"spec": {"selector": {"matchLabels": {"b": "2"}}}}, DEPLOYMENT
    )
    assert replaced["spec"]["selector"] == {"matchLabels": {"b": "2"}}  # structType=atomic


def test_merge_refuses_duplicates_in_the_applied_list() -> None:
    with pytest.raises(TypedError, match=r'duplicate entries for key \[name="a"\]'):
        typed.merge(pod(), pod(containers=[{"name": "a"}, {"name": "a"}]), POD)


def test_remove_items() -> None:
    obj = pod(containers=[{"name": "main", "image": "a", "args": ["1"]}, {"name": "side"}])
    obj["metadata"]["labels"] = {"only": "one"}
    removed = typed.remove_items(
        obj,
        set_of(
            (*MAIN, "f:args"),
            (*CONTAINERS, 'k:{"name":"side"}'),
            ("f:metadata", "f:labels", "f:only"),
        ),
        POD,
    )
    assert removed["spec"]["containers"] == [{"name": "main", "image": "a"}]
    assert removed["metadata"] == {"name": "p", "labels": None}  # as upstream: emptied is null
    assert typed.remove_items(obj, {}, POD) is obj


def test_named_fields_become_members_but_map_keys_and_items_do_not() -> None:
    fields = set_of(("f:metadata", "f:labels", "f:a"), (*MAIN, "f:image"))
    assert typed.named_fields_as_members(fields, POD) == set_of(
        ("f:metadata",),
        ("f:metadata", "f:labels"),
        ("f:metadata", "f:labels", "f:a"),
        ("f:spec",),
        ("f:spec", "f:containers"),
        (*MAIN, "f:image"),
    )


@pytest.mark.parametrize(
    ("applied", "errors"),
    [
        (pod(containers=[{"name": "a"}]), []),
        (pod(replicaz=1), [".spec.replicaz: field not declared in schema"]),
        (
            pod(containers=[{"name": "a", "imagePullPolicyy": "x"}]),
            ['.spec.containers[name="a"].imagePullPolicyy: field not declared in schema'],
        ),
        (
            pod(containers=[{"name": "a"}, {"name": "a"}]),
            ['.spec.containers: duplicate entries for key [name="a"]'],
        ),
        # A key field left out takes its default ("" for a container's name).
        (pod(containers=[{"image": "x"}]), []),
        (
            pod(containers=[{"name": "a", "ports": [{"containerPort": 1}, {"containerPort": 1}]}]),
            [
                '.spec.containers[name="a"].ports: duplicate entries for key '
                '[containerPort=1,protocol="TCP"]'
            ],
        ),
        # Labels and annotations are maps: any key is declared.
        ({"metadata": {"labels": {"anything": "x"}}}, []),
    ],
)
def test_check_applied(applied: dict[str, Any], errors: list[str]) -> None:
    assert typed.check_applied(applied, POD) == errors


def test_an_item_without_any_key_is_refused() -> None:
    items = Atom()
    items.list_elem = Atom()
    items.list_elem.fields = {"id": DEDUCED}
    items.list_atomic = False
    items.keys = ("id",)
    with pytest.raises(TypedError, match=r'omits all key fields \["id"\]'):
        typed.field_set([{"other": 1}], items)


def test_missing_is_not_null() -> None:
    assert typed.merge(MISSING, None, DEDUCED) is None
    assert typed.merge({"a": 1}, MISSING, DEDUCED) == {"a": 1}
