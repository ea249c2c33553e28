"""Tests for strategic merge patch.

Cases marked "upstream" are transcribed from apimachinery's
pkg/util/strategicpatch/patch_test.go, run against a schema equivalent to its `MergeItem` test
struct; the rest use the real Pod/Deployment metadata from `inplace.registry.patchmeta`.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from inplace.registry.patch import (
    PatchError,
    apply_strategic_merge_patch,
)
from inplace.registry.patchmeta import FieldPatchMeta, PatchSchema

# --------------------------------------------------------------------------- strategic: upstream


class FakeSchema(PatchSchema):
    """A schema over a hand-written table, standing in for upstream's MergeItem test struct."""

    TYPES: dict[str, dict[str, tuple[FieldPatchMeta | None, str | None]]] = {}

    def __init__(self, name: str | None) -> None:
        super().__init__(None)
        self.name = name

    def meta(self, field: str) -> FieldPatchMeta | None:
        return self.TYPES.get(self.name or "", {}).get(field, (None, None))[0]

    def child(self, field: str) -> PatchSchema:
        return FakeSchema(self.TYPES.get(self.name or "", {}).get(field, (None, None))[1])


def _meta(strategy: str, key: str | None = None) -> FieldPatchMeta:
    return FieldPatchMeta(frozenset(strategy.split(",")), key)


FakeSchema.TYPES = {
    "MergeItem": {
        "mergingList": (_meta("merge", "name"), "MergeItem"),
        "nonMergingList": (None, "MergeItem"),
        "mergingIntList": (_meta("merge"), None),
        "nonMergingIntList": (None, None),
        "mergeItemPtr": (_meta("merge", "name"), "MergeItem"),
        "simpleMap": (None, None),
        "replacingItem": (_meta("replace"), None),
        "retainKeysMap": (_meta("retainKeys"), "RetainKeysMergeItem"),
        "retainKeysMergingList": (_meta("merge,retainKeys", "name"), "MergeItem"),
    },
    "RetainKeysMergeItem": {
        "simpleMap": (None, None),
        "mergingIntList": (_meta("merge"), None),
        "mergingList": (_meta("merge", "name"), "MergeItem"),
        "nonMergingList": (None, "MergeItem"),
    },
}
MERGE_ITEM = FakeSchema("MergeItem")

# description, original, patch, expected (or "error: <substring>")
UPSTREAM_CASES = yaml.safe_load(
    """
- description: unique scalars when merging lists
  original: {mergingIntList: [1, 2]}
  patch: {mergingIntList: [2, 3]}
  expected: {mergingIntList: [1, 2, 3]}
- description: delete map from nested map
  original: {simpleMap: {key1: 1, key2: 1}}
  patch: {simpleMap: {$patch: delete}}
  expected: {simpleMap: {}}
- description: delete all items from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{$patch: replace}]}
  expected: {mergingList: []}
- description: merge empty merging lists
  original: {mergingList: []}
  patch: {mergingList: []}
  expected: {mergingList: []}
- description: delete all keys from map
  original: {name: 1, value: 1}
  patch: {$patch: replace}
  expected: {}
- description: add key and delete all keys from map
  original: {name: 1, value: 1}
  patch: {other: a, $patch: replace}
  expected: {other: a}
- description: delete all duplicate entries in a merging list
  original: {mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}, {name: 3}, {name: 3}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 3, $patch: delete}]}
  expected: {mergingList: [{name: 2, value: a}]}
- description: retainKeys map can add a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo}}
  patch: {retainKeysMap: {value: bar}}
  expected: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map can change a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {value: b}}
  expected: {retainKeysMap: {name: foo, value: b}}
- description: retainKeys map can delete a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {value: null}}
  expected: {retainKeysMap: {name: foo}}
- description: retainKeys map merge an empty map
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {}}
  expected: {retainKeysMap: {name: foo, value: a}}
- description: retainKeys list can add a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo}]}
  patch: {retainKeysMergingList: [{name: foo, value: a}]}
  expected: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
- description: retainKeys list can change a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  patch: {retainKeysMergingList: [{name: foo, value: b}]}
  expected: {retainKeysMergingList: [{name: bar}, {name: foo, value: b}]}
- description: retainKeys list can delete a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  patch: {retainKeysMergingList: [{name: foo, value: null}]}
  expected: {retainKeysMergingList: [{name: bar}, {name: foo}]}
- description: preserve the order from the patch in a merging list
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  patch: {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, other: x}]}
  expected:
    mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, value: b, other: x}]
- description: preserve the order from the patch in a merging list 2
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  patch: {mergingList: [{name: 3, value: c}, {name: 1, value: a}]}
  expected: {mergingList: [{name: 2, value: b}, {name: 3, value: c}, {name: 1, value: a}]}
- description: preserve the order from the patch in a merging int list
  original: {mergingIntList: [1, 2, 3]}
  patch: {mergingIntList: [3, 1, 2]}
  expected: {mergingIntList: [3, 1, 2]}
- description: preserve the order from the patch in a merging int list 2
  original: {mergingIntList: [1, 2, 3]}
  patch: {mergingIntList: [3, 1]}
  expected: {mergingIntList: [2, 3, 1]}
- description: $setElementOrder contains item that is not present in the list to be merged
  original: {mergingList: [{name: 1}, {name: 3}]}
  patch:
    $setElementOrder/mergingList: [{name: 3}, {name: 2}, {name: 1}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  expected: {mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}
- description: $setElementOrder contains item that is not present in the int list to be merged
  original: {mergingIntList: [1, 3]}
  patch: {$setElementOrder/mergingIntList: [3, 2, 1]}
  expected: {mergingIntList: [3, 1]}
- description: should check if order in $setElementOrder and patch list match
  original: {mergingList: [{name: 1}, {name: 3}, {name: 2}]}
  patch:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  expected: "error: doesn't match"
- description: should check if order in $setElementOrder and patch int list match
  original: {mergingIntList: [1, 3, 2]}
  patch: {$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3, 1]}
  expected: "error: doesn't match"
- description: missing merge key should error out
  original: {mergingList: [{name: 1, value: a}]}
  patch: {mergingList: [{value: b}]}
  expected: "error: does not contain declared merge key"
- description: nil original
  original: {}
  patch: {name: 1, value: 1}
  expected: {name: 1, value: 1}
- description: nil original (three-way)
  original: {name: 1, other: a}
  patch: {value: 1}
  expected: {name: 1, value: 1, other: a}
- description: nil patch
  original: {name: 1}
  patch: {}
  expected: {name: 1}
- description: add field and delete field from map
  original: {name: 1}
  patch: {name: null, value: 1}
  expected: {value: 1}
- description: add field and delete field from map (three-way)
  original: {name: 1, other: a}
  patch: {name: null, value: 1}
  expected: {value: 1, other: a}
- description: delete field from nested map (three-way)
  original: {simpleMap: {key1: 1, key2: 1, other: a}}
  patch: {simpleMap: {key2: null}}
  expected: {simpleMap: {key1: 1, other: a}}
- description: delete all fields from map (three-way)
  original: {name: 1, value: 1, other: a}
  patch: {name: null, value: null}
  expected: {other: a}
- description: replace list of scalars
  original: {nonMergingIntList: [1, 2]}
  patch: {nonMergingIntList: [2, 3]}
  expected: {nonMergingIntList: [2, 3]}
- description: delete all maps from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  expected: {mergingList: []}
- description: delete all maps from merging list with conflict (three-way)
  original: {mergingList: [{name: 1, other: a}, {name: 2, other: b}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  expected: {mergingList: []}
- description: delete all maps from empty merging list (three-way)
  original: {mergingList: []}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  expected: {mergingList: []}
- description: defined null values should propagate overwrite current fields
  original: {name: 2}
  patch: {name: 1, value: 1, other: null}
  expected: {name: 1, value: 1}
- description: defined null values should propagate removing original fields (three-way)
  original: {name: original-name, value: original-value, other: current-other}
  patch: {name: modified-name, value: null}
  expected: {name: modified-name, other: current-other}
- description: delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3]}
  patch: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  expected: {mergingIntList: [1, 2]}
- description: delete items in lists of scalars (three-way)
  original: {mergingIntList: [1, 2, 3, 4]}
  patch: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  expected: {mergingIntList: [1, 2, 4]}
- description: delete all duplicate items in lists of scalars (three-way)
  original: {mergingIntList: [1, 2, 3, 3, 4]}
  patch: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  expected: {mergingIntList: [1, 2, 4]}
- description: add and delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3]}
  patch:
    $setElementOrder/mergingIntList: [1, 2, 4]
    $deleteFromPrimitiveList/mergingIntList: [3]
    mergingIntList: [4]
  expected: {mergingIntList: [1, 2, 4]}
- description: add and delete items in lists of scalars (three-way)
  original: {mergingIntList: [1, 2, 3, 4]}
  patch:
    $setElementOrder/mergingIntList: [1, 2, 4]
    $deleteFromPrimitiveList/mergingIntList: [3]
  expected: {mergingIntList: [1, 2, 4]}
- description: merge lists of maps
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  patch:
    $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  expected:
    mergingList: [{name: 4, value: 4}, {name: 1}, {name: 2, value: 2}, {name: 3, value: 3}]
- description: merge lists of maps (three-way)
  original: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  patch:
    $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  expected:
    mergingList:
    - {name: 4, value: 4}
    - {name: 1, other: a}
    - {name: 2, value: 2, other: b}
    - {name: 3, value: 3}
- description: merge lists of maps with conflict (three-way)
  original: {mergingList: [{name: 1, other: a}, {name: 2, value: 3, other: b}]}
  patch:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 2, value: 2}, {name: 3, value: 3}]
  expected:
    mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]
- description: add field to map in merging list (three-way)
  original: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  patch:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: 1}]
  expected: {mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2, other: b}]}
- description: merge lists of maps without $setElementOrder puts new items first
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{name: 3}]}
  expected: {mergingList: [{name: 3}, {name: 1}, {name: 2}]}
- description: nested merging lists merge by key at every level
  original:
    mergingList:
    - name: a
      mergingList: [{name: x, value: 1}, {name: y}]
  patch:
    mergingList:
    - name: a
      mergingList: [{name: x, value: 2}]
  expected:
    mergingList:
    - name: a
      mergingList: [{name: x, value: 2}, {name: y}]
- description: merging list nested in a non-merging list is replaced
  original: {nonMergingList: [{name: a, mergingList: [{name: x}]}]}
  patch: {nonMergingList: [{name: a, mergingList: [{name: y}]}]}
  expected: {nonMergingList: [{name: a, mergingList: [{name: y}]}]}
- description: replace strategy replaces the map
  original: {replacingItem: {a: 1, b: 2}}
  patch: {replacingItem: {a: 3}}
  expected: {replacingItem: {a: 3}}
- description: $patch replace inside a nested map
  original: {simpleMap: {key1: 1, key2: 1}}
  patch: {simpleMap: {$patch: replace, key3: 3}}
  expected: {simpleMap: {key3: 3}}
- description: $patch replace as a merging list item keeps the other patch items
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{name: 3, value: c}, {$patch: replace}]}
  expected: {mergingList: [{name: 3, value: c}]}
- description: $retainKeys on a retainKeys map clears unlisted keys
  original: {retainKeysMap: {name: foo, value: a, other: b}}
  patch: {retainKeysMap: {$retainKeys: [name, value], value: c}}
  expected: {retainKeysMap: {name: foo, value: c}}
- description: $retainKeys on items of a merge,retainKeys list
  original: {retainKeysMergingList: [{name: foo, value: a, other: b}, {name: bar, other: c}]}
  patch: {retainKeysMergingList: [{name: foo, $retainKeys: [name, other], other: d}]}
  expected: {retainKeysMergingList: [{name: foo, other: d}, {name: bar, other: c}]}
- description: $retainKeys must list every field the patch sets
  original: {retainKeysMap: {name: foo}}
  patch: {retainKeysMap: {$retainKeys: [name], value: c}}
  expected: "error: field 'value' is in the patch but not in $retainKeys"
- description: $retainKeys where the strategy has no retainKeys
  original: {simpleMap: {a: b}}
  patch: {simpleMap: {$retainKeys: [a]}}
  expected: "error: simpleMap: $retainKeys is only allowed"
- description: unknown $patch directive
  original: {simpleMap: {a: b}}
  patch: {simpleMap: {$patch: frobnicate}}
  expected: "error: simpleMap: unknown $patch directive 'frobnicate'"
- description: unknown $patch directive in a list item
  original: {mergingList: [{name: 1}]}
  patch: {mergingList: [{name: 1, $patch: frobnicate}]}
  expected: "error: mergingList: unknown $patch directive"
- description: $patch merge in a list item is rejected as upstream does
  original: {mergingList: [{name: 1}]}
  patch: {mergingList: [{name: 1, $patch: merge}]}
  expected: "error: cannot be used on a list item"
- description: $patch merge in a map is the default
  original: {simpleMap: {a: b}}
  patch: {simpleMap: {$patch: merge, c: d}}
  expected: {simpleMap: {a: b, c: d}}
- description: unknown directive key
  original: {}
  patch: {$frobnicate/x: [1]}
  expected: "error: unknown directive '$frobnicate/x'"
- description: $deleteFromPrimitiveList on a list of objects
  original: {mergingList: [{name: 1}]}
  patch: {$deleteFromPrimitiveList/mergingList: [1]}
  expected: "error: needs a merging list of primitives"
- description: $deleteFromPrimitiveList of an absent list does nothing
  original: {}
  patch: {$deleteFromPrimitiveList/mergingIntList: [1]}
  expected: {}
- description: directives in values the original lacks are resolved, not stored
  original: {}
  patch: {mergingList: [{name: 1, simpleMap: {a: null, b: c}}, {name: 2, $patch: delete}]}
  expected: {mergingList: [{name: 1, simpleMap: {b: c}}]}
- description: lists of mixed types cannot be merged
  original: {mergingIntList: [1]}
  patch: {mergingIntList: [{a: 1}]}
  expected: "error: not all of the same type"
- description: a value changing type is replaced
  original: {mergingList: [{name: 1}]}
  patch: {mergingList: {name: 1}}
  expected: {mergingList: {name: 1}}
"""
)


@pytest.mark.parametrize("case", UPSTREAM_CASES, ids=[c["description"] for c in UPSTREAM_CASES])
def test_strategic_merge_upstream(case: dict[str, Any]) -> None:
    original, patch, expected = case["original"], case["patch"], case["expected"]
    before, patch_before = copy.deepcopy(original), copy.deepcopy(patch)
    if isinstance(expected, str) and expected.startswith("error: "):
        with pytest.raises(PatchError) as info:
            apply_strategic_merge_patch(original, patch, MERGE_ITEM)
        assert expected.removeprefix("error: ") in str(info.value)
    else:
        assert apply_strategic_merge_patch(original, patch, MERGE_ITEM) == expected
    assert original == before
    assert patch == patch_before


# --------------------------------------------------------------------------- strategic: real kinds

POD_SCHEMA = PatchSchema("V1Pod")
DEPLOYMENT_SCHEMA = PatchSchema("V1Deployment")


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "x"}, "finalizers": ["a", "b"]},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "busybox",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                },
                {"name": "sidecar", "image": "envoy"},
            ],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "PodScheduled", "status": "True"},
            ]
        },
    }


def test_resize_patch_touches_only_one_container() -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    patch = {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "2"}}}]}}
    out = apply_strategic_merge_patch(pod, patch, POD_SCHEMA)
    app, sidecar = out["spec"]["containers"]
    assert app["resources"] == {"requests": {"cpu": "2", "memory": "1Gi"}}
    assert app["env"] == before["spec"]["containers"][0]["env"]
    assert sidecar == before["spec"]["containers"][1]
    assert pod == before
    # Copy on write: untouched subtrees are shared, not copied.
    assert out["metadata"] is pod["metadata"]
    assert out["status"] is pod["status"]
    assert sidecar is pod["spec"]["containers"][1]


def test_new_container_goes_first_without_set_element_order() -> None:
    # The `kubectl patch` documentation example: the new container is listed first.
    out = apply_strategic_merge_patch(
        _pod(), {"spec": {"containers": [{"name": "redis", "image": "redis"}]}}, POD_SCHEMA
    )
    assert [c["name"] for c in out["spec"]["containers"]] == ["redis", "app", "sidecar"]


def test_set_element_order_places_new_container() -> None:
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}, {"name": "new"}],
            "containers": [{"name": "new", "image": "x"}],
        }
    }
    out = apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)
    assert [c["name"] for c in out["spec"]["containers"]] == ["app", "sidecar", "new"]


def test_delete_container_and_env_by_key() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "sidecar", "$patch": "delete"},
                {"name": "app", "env": [{"name": "A", "$patch": "delete"}]},
            ]
        }
    }
    out = apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)
    assert [c["name"] for c in out["spec"]["containers"]] == ["app"]
    assert out["spec"]["containers"][0]["env"] == [{"name": "B", "value": "2"}]


def test_atomic_lists_are_replaced() -> None:
    patch = {
        "spec": {
            "tolerations": [{"key": "other", "operator": "Exists"}],
            "containers": [{"name": "app", "resizePolicy": [{"resourceName": "memory"}]}],
        }
    }
    out = apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)
    assert out["spec"]["tolerations"] == [{"key": "other", "operator": "Exists"}]
    assert out["spec"]["containers"][0]["resizePolicy"] == [{"resourceName": "memory"}]


def test_finalizers_union_and_delete_from_primitive_list() -> None:
    out = apply_strategic_merge_patch(
        _pod(),
        {"metadata": {"finalizers": ["b", "c"], "$deleteFromPrimitiveList/finalizers": ["a"]}},
        POD_SCHEMA,
    )
    assert out["metadata"]["finalizers"] == ["b", "c"]


def test_labels_merge_and_delete() -> None:
    out = apply_strategic_merge_patch(
        _pod(), {"metadata": {"labels": {"app": None, "tier": "db"}}}, POD_SCHEMA
    )
    assert out["metadata"]["labels"] == {"tier": "db"}


def test_conditions_merge_by_type() -> None:
    patch = {
        "status": {
            "conditions": [
                {"type": "PodResizePending", "status": "True", "reason": "Deferred"},
                {"type": "Ready", "status": "False"},
            ]
        }
    }
    out = apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)
    conditions = {c["type"]: c["status"] for c in out["status"]["conditions"]}
    assert conditions == {"Ready": "False", "PodScheduled": "True", "PodResizePending": "True"}


def test_volume_retain_keys_switches_source() -> None:
    patch = {
        "spec": {
            "$setElementOrder/volumes": [{"name": "data"}],
            "volumes": [
                {"name": "data", "$retainKeys": ["hostPath", "name"], "hostPath": {"path": "/x"}}
            ],
        }
    }
    out = apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)
    assert out["spec"]["volumes"] == [{"name": "data", "hostPath": {"path": "/x"}}]


def test_deployment_strategy_retain_keys() -> None:
    deployment = {
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        }
    }
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = apply_strategic_merge_patch(deployment, patch, DEPLOYMENT_SCHEMA)
    assert out["spec"] == {"replicas": 2, "strategy": {"type": "Recreate"}}


def test_retain_keys_rejected_at_root_and_without_schema() -> None:
    with pytest.raises(PatchError, match=r"\$retainKeys is only allowed"):
        apply_strategic_merge_patch({"a": 1}, {"$retainKeys": ["a"]}, POD_SCHEMA)
    with pytest.raises(PatchError, match=r"spec\.strategy: \$retainKeys"):
        apply_strategic_merge_patch(
            {"spec": {"strategy": {}}},
            {"spec": {"strategy": {"$retainKeys": []}}},
            PatchSchema(None),
        )


def test_without_schema_every_list_is_atomic() -> None:
    pod = _pod()
    out = apply_strategic_merge_patch(
        pod, {"spec": {"containers": [{"name": "app"}]}}, PatchSchema(None)
    )
    assert out["spec"]["containers"] == [{"name": "app"}]


def test_strategic_error_names_the_field() -> None:
    patch = {"spec": {"containers": [{"name": "app", "env": [{"value": "x"}]}]}}
    with pytest.raises(PatchError, match=r"spec\.containers\[name=app\]\.env: .*merge key 'name'"):
        apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA)


def test_strategic_rejects_non_objects() -> None:
    with pytest.raises(PatchError, match="must be a JSON object"):
        apply_strategic_merge_patch({}, [], POD_SCHEMA)  # type: ignore[arg-type]
    with pytest.raises(PatchError, match="not an object"):
        apply_strategic_merge_patch([], {}, POD_SCHEMA)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- properties

_names = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
_quantities = st.sampled_from(["100m", "1", "2", "500Mi", "1Gi"])


@settings(max_examples=200)
@given(
    st.lists(_names, min_size=1, max_size=6, unique=True),
    st.data(),
)
def test_resizing_one_container_keeps_the_others(names: list[str], data: st.DataObject) -> None:
    containers = [
        {"name": n, "image": f"img-{n}", "resources": {"requests": {"cpu": "1"}}} for n in names
    ]
    pod = {"spec": {"containers": containers}}
    before = copy.deepcopy(pod)
    target = data.draw(st.sampled_from(names))
    cpu, memory = data.draw(_quantities), data.draw(_quantities)
    patch = {
        "spec": {
            "containers": [
                {
                    "name": target,
                    "resources": {"requests": {"cpu": cpu}, "limits": {"memory": memory}},
                }
            ]
        }
    }
    out = apply_strategic_merge_patch(pod, patch, POD_SCHEMA)
    assert [c["name"] for c in out["spec"]["containers"]] == names
    for got, was in zip(out["spec"]["containers"], before["spec"]["containers"], strict=True):
        if got["name"] == target:
            assert got["resources"] == {"requests": {"cpu": cpu}, "limits": {"memory": memory}}
            assert got["image"] == was["image"]
        else:
            assert got == was
    assert pod == before


@given(
    st.lists(_names, min_size=0, max_size=6, unique=True),
    st.lists(_names, min_size=0, max_size=4, unique=True),
)
def test_merging_list_keeps_existing_relative_order(names: list[str], patched: list[str]) -> None:
    original = {"mergingList": [{"name": n, "value": "old"} for n in names]}
    patch = {"mergingList": [{"name": n, "other": "new"} for n in patched]}
    out = apply_strategic_merge_patch(original, patch, MERGE_ITEM)
    result = [item["name"] for item in out["mergingList"]]
    assert sorted(result) == sorted(set(names) | set(patched))
    untouched = [n for n in result if n not in patched]
    assert untouched == [n for n in names if n not in patched]
    assert [n for n in result if n in patched] == patched
